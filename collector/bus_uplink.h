#pragma once

// The agent's uplink over a NATS JetStream bus (docs/operations.md, "The
// bus"): every batch is spooled, then published on the agent's own subject
// (<prefix>.<fabric>.batch.<agent>, bus/subjects.h) with a JetStream
// acknowledgement and the message id (agent, epoch, seq), and leaves the
// spool only once the stream has stored it. The analyzer consumes the
// stream; the agent never talks to it directly, so batches keep flowing
// (into the stream) while the analyzer is down or restarting.
//
// Publishing is one batch at a time, oldest first, each waiting for its
// ack: an agent sends about one batch per batch_interval, and a backlog of
// an hour drains at a round trip per batch. A spooled batch larger than
// what the server takes (its max_payload, 1 MiB by default, less room for
// headers) is split into parts when published; the parts keep their seqs
// while the batch is at the spool's front, so a retry repeats them.
//
// Epoch and seq follow collector/uplink.h. The plan comes by request/reply
// on <prefix>.<fabric>.plan.<agent>.
//
// Thread-safety: every public method may be called from any thread.

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bus/connection.h"
#include "bus/stream.h"
#include "collector/spool.h"
#include "collector/transport.h"

namespace netdiag::collector {

struct BusUplinkOptions {
  bus::BusOptions bus;
  std::string agent;  // the node name
  double backoff_min_s = 0.2, backoff_max_s = 10;
  // Largest batch spooled at send(); larger ones are split first.
  size_t max_batch_bytes = size_t{1} << 20;
};

class BusUplink final : public Transport {
 public:
  // nullptr and *error for options that cannot work (bad URL, unreadable
  // files); a bus that is not up yet is retried in the background.
  static std::unique_ptr<BusUplink> create(BusUplinkOptions options, Spool& spool,
                                           std::string* error);
  ~BusUplink() override;  // stop()

  void send(v1::Batch batch) override;
  std::optional<v1::AgentPlan> fetchPlan(uint64_t known_version, std::string* error) override;
  UplinkStats stats() const override;
  std::string lastError() const override;
  std::string describe() const override { return "bus " + bus::redactedUrl(options_.bus.url); }
  void stop() override;
  uint64_t epoch() const { return epoch_; }

 private:
  BusUplink(BusUplinkOptions options, Spool& spool, std::unique_ptr<bus::Connection> c);
  void run();
  // Publishes the spool's oldest batch, all its parts; true once the
  // stream acknowledged every one (the batch is then popped).
  bool publishFront();

  const BusUplinkOptions options_;
  Spool& spool_;
  const uint64_t epoch_;
  std::unique_ptr<bus::Connection> connection_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  // The last publish failed: stats() says not connected (the agent logs
  // the loss with lastError()), though the connection may be up.
  bool failing_ = false;
  uint64_t seq_ = 0;
  UplinkStats stats_;
  std::string last_error_;
  // The front batch being published: its parts (split when over the
  // server's bound) and how many the stream has acknowledged; reset when
  // it leaves the spool. `front_dropped` is the spool's drop count when it
  // was read: a drop since means the front (the oldest) is gone.
  struct Front {
    std::vector<std::string> parts;
    std::vector<std::string> ids;
    size_t acked = 0;
    uint64_t front_dropped = 0;
  };
  std::optional<Front> front_;

  std::thread thread_;
};

}  // namespace netdiag::collector
