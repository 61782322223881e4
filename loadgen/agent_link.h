#pragma once

// One synthetic agent's stream to the analyzer, on gRPC's callback client
// API, so thousands of them share gRPC's few threads (the real agent's
// collector::Uplink keeps a thread and a disk spool per agent, which is
// right for one agent per host and wrong for a load generator of 16k).
//
// The same wire contract as the Uplink: batches numbered per epoch (a random
// one per link), each kept until its ack, every unacknowledged batch sent
// again, in order, after a reconnect. No spool: what is unacknowledged lives
// in memory and its size is readable (stats()) for the caller's bound.
//
// Thread-safety: send() from any thread; the rest is gRPC's reactions and
// maintain(), serialized by the link's mutex.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <grpcpp/grpcpp.h>

#include "netdiag/v1/collector.grpc.pb.h"

namespace netdiag::loadgen {

// What many links have unacknowledged together, kept as they go, so that a
// caller bounding it reads two atomics instead of every link's stats().
struct Outstanding {
  std::atomic<uint64_t> bytes{0};
  std::atomic<size_t> batches{0};
};

class AgentLink {
 public:
  // `totals` (optional) must outlive the link.
  AgentLink(std::shared_ptr<grpc::Channel> channel, std::string agent, uint64_t epoch,
            Outstanding* totals = nullptr);
  ~AgentLink();  // stop()
  AgentLink(const AgentLink&) = delete;
  AgentLink& operator=(const AgentLink&) = delete;

  // Numbers the batch (agent, epoch, next seq), keeps it until acked and
  // writes it when the stream is free. Never blocks on the network.
  void send(v1::Batch batch);
  // Reconnects a stream that ended once its backoff passed (call it now and
  // then; the first call opens the stream).
  void maintain(std::chrono::steady_clock::time_point now);
  // Cancels the stream and waits until gRPC is done with it.
  void stop();

  const std::string& agent() const { return agent_; }
  // The topology fingerprint of the analyzer's latest ack (0: none yet):
  // compact port ids are understood only under it.
  uint64_t analyzerTopology() const { return analyzer_topology_.load(std::memory_order_relaxed); }
  struct Stats {
    size_t unacked_batches = 0;
    uint64_t unacked_bytes = 0, acked = 0, reconnects = 0;
    std::string last_error;
  };
  Stats stats() const;

 private:
  class Call;
  // Under mu_: starts the next write when the stream is open and idle.
  // Returns the call and batch to write (after unlocking), or null.
  Call* nextWriteLocked(std::shared_ptr<const v1::Batch>& batch);
  void write(Call* call, std::shared_ptr<const v1::Batch> batch);
  // Under mu_: once reading ended and no write is in flight, lets the call
  // finish (its hold released after unlocking, returned here).
  Call* releaseLocked();
  void unpin();  // a pin keeps the call from finishing while gRPC is called
  void onWritten(bool ok);
  void onAck(const v1::Ack& ack);
  void onReadEnded();
  void onDone(const grpc::Status& status);

  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::Collector::Stub> stub_;
  const std::string agent_;
  const uint64_t epoch_;
  Outstanding* const totals_;
  std::atomic<uint64_t> analyzer_topology_{0};

  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  uint64_t next_seq_ = 1;
  std::map<uint64_t, std::shared_ptr<const v1::Batch>> unacked_;  // by seq
  uint64_t unacked_bytes_ = 0;
  uint64_t next_write_ = 1;  // the lowest unacked seq not yet written on this call
  Call* call_ = nullptr;     // the open stream, if any
  bool alive_ = false;       // a call exists (until its OnDone)
  bool writing_ = false, read_ended_ = false, held_ = false;
  int pins_ = 0;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point retry_at_{};
  double backoff_s_ = 0.1;
  uint64_t acked_ = 0, reconnects_ = 0, calls_ = 0;
  std::string last_error_;
};

}  // namespace netdiag::loadgen
