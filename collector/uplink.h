#pragma once

// The agent's uplink: one long-lived bidirectional Collector.Stream to the
// analyzer (proto/netdiag/v1/collector.proto). Every batch goes into the
// spool before it is sent and leaves it only once the analyzer acknowledged
// it, so delivery is at least once: after a reconnect everything still in
// the spool is sent again and the analyzer drops the duplicates by
// (agent, epoch, seq).
//
// Numbering: the epoch names this start of the agent and seq counts from 1
// within it. The epoch comes from the spool's persistent state (a disk spool
// takes the next one at each open, collector/spool.h), or is a random 64-bit
// number for a spool without any (in memory): never the wall clock, so a
// clock step cannot make a new start's batches look old. Epochs are not
// ordered; the analyzer keeps the ones it saw per agent (server/dedup.h).
// Batches already in a reopened spool keep their own numbers.
//
// Size: no message on the wire exceeds max_batch_bytes (kMaxBatchBytes, the
// analyzer's maximum receive message size), since the analyzer ends a
// stream that carries a larger one and the batch would be resent forever.
// send() splits a larger batch into parts below it before spooling them,
// each part a batch of its own with its own seq. A batch already in the
// spool that is larger (spooled by an earlier version, or with a larger
// bound) is split when it is sent: its parts get seqs of this start's epoch,
// kept while it is in the spool, so a resend after a reconnect repeats the
// same parts (the analyzer drops them as duplicates); after a restart it is
// split again under the new epoch (parts delivered before the restart then
// count twice, at least once as ever). It leaves the spool once every part
// is acknowledged. A single record larger than the bound cannot be sent at
// all: it is dropped and counted (UplinkStats::oversized_records).
//
// Reconnects back off exponentially from backoff_min_s to backoff_max_s with
// full jitter (a random delay in [d/2, d]), so a fleet of agents does not
// reconnect in lockstep after an analyzer restart.
//
// Thread-safety: every public method may be called from any thread. The
// spool must be fed only through send() (the uplink serializes pushes with
// its own bookkeeping so it can tell which batches the bound dropped).

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/security/credentials.h>

#include "collector/spool.h"
#include "collector/transport.h"
#include "netdiag/v1/collector.grpc.pb.h"

namespace netdiag::collector {

// The largest serialized batch on the wire: the analyzer's maximum receive
// message size, and the size the uplink splits larger batches down to
// (docs/operations.md, Bounds).
constexpr size_t kMaxBatchBytes = 4 << 20;

struct UplinkOptions {
  std::string analyzer = "127.0.0.1:7600";  // host:port of the analyzer's gRPC listener
  std::string agent;                        // agent id: the node name
  std::string tls_ca, tls_cert, tls_key;    // PEM files; all empty: plaintext
  double backoff_min_s = 0.2, backoff_max_s = 10;
  size_t max_in_flight = 64;  // batches sent and not yet acknowledged
  // Name checked against the analyzer's certificate instead of the host of
  // `analyzer` (e.g. when connecting by address to a certificate for a name).
  std::string tls_server_name;
  double plan_timeout_s = 5;  // deadline of fetchPlan()
  // Largest serialized batch sent (>= 1 KiB); larger ones are split.
  size_t max_batch_bytes = kMaxBatchBytes;
  // Called (on the stream's reader thread, never under the uplink's lock)
  // with every drain action an acknowledgement carries; unset: ignored.
  std::function<void(const v1::DrainAction&)> on_action;
};

// `batch` as parts of at most `max_bytes` serialized each (with any seq),
// its records (action results too) in order, every other field copied; at least one part. A
// record that alone does not fit is left out and counted in *dropped.
std::vector<v1::Batch> splitBatch(const v1::Batch& batch, size_t max_bytes, uint64_t* dropped);

// Problems with the options (unreadable TLS files, a key without a
// certificate, a bad address); empty when they are usable. The Uplink works
// with bad options too, but never connects; agents check first.
std::string checkUplinkOptions(const UplinkOptions& options);

// The credentials of a channel to the analyzer: plaintext when no TLS file
// is given; TLS when a CA is (or when a client certificate is, trusting the
// system roots); mutual TLS with cert + key. nullptr and `error` when a
// file cannot be read or only one of cert and key is given.
std::shared_ptr<grpc::ChannelCredentials> channelCredentials(const std::string& tls_ca,
                                                             const std::string& tls_cert,
                                                             const std::string& tls_key,
                                                             std::string& error);

class Uplink final : public Transport {
 public:
  Uplink(UplinkOptions options, Spool& spool);  // starts its sender thread
  ~Uplink();                                    // stop()
  Uplink(const Uplink&) = delete;
  Uplink& operator=(const Uplink&) = delete;

  // Stamps agent/epoch/seq (and sent_at when unset), appends the batch to
  // the spool and wakes the sender; never blocks on the network.
  void send(v1::Batch batch) override;
  // Unary GetPlan with a deadline; nullopt and *error on failure.
  std::optional<v1::AgentPlan> fetchPlan(uint64_t known_version, std::string* error) override;
  UplinkStats stats() const override;
  // The last connection or stream error, for logs ("" while none).
  std::string lastError() const override;
  std::string describe() const override { return "analyzer " + options_.analyzer; }
  // The last spooled batch split for being over max_batch_bytes, in words
  // ("" while none), for logs.
  std::string lastSplit() const;
  uint64_t epoch() const { return epoch_; }
  void stop() override;  // leaves unacknowledged batches in the spool

 private:
  // One spool entry in flight: the (epoch, seq) of each message it was
  // sent as that is not acknowledged yet (several for a split entry).
  struct Key {
    uint64_t epoch = 0;
    std::vector<uint64_t> pending;
    bool acked = false;
    std::optional<std::pair<uint64_t, uint64_t>> split_of;  // its own (epoch, seq)
  };

  void run();
  // One connection: sends from the spool and reads acks until the stream
  // breaks or stop(). Returns true when the stream got as far as an ack.
  bool serve();
  std::shared_ptr<grpc::Channel> makeChannel() const;
  void syncDropsLocked();
  void pushLocked(const std::string& bytes);
  void eraseInflightFrontLocked(size_t n);
  void onAckLocked(const v1::Ack& ack);
  void popAckedLocked();  // pops the acknowledged batches at the spool's front
  void sleepBackoff(double& backoff_s);

  const UplinkOptions options_;
  Spool& spool_;
  const uint64_t epoch_;
  std::shared_ptr<grpc::ChannelCredentials> creds_;
  std::string creds_error_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool broken_ = false;                  // the current stream failed
  grpc::ClientContext* call_ = nullptr;  // the current stream, to cancel on stop()
  uint64_t seq_ = 0;
  // The batches sent on the current stream and still in the spool: exactly
  // the spool's first inflight_.size() entries, in order.
  std::deque<Key> inflight_;
  uint64_t dropped_seen_ = 0;  // spool.dropped() as last accounted for
  // Seqs given to the parts of oversized spooled entries, by the entry's own
  // (epoch, seq), so that a resend repeats them.
  std::map<std::pair<uint64_t, uint64_t>, std::vector<uint64_t>> split_seqs_;
  UplinkStats stats_;
  std::string last_error_;
  std::string last_split_;

  std::mutex plan_mu_;
  std::shared_ptr<grpc::Channel> plan_channel_;

  std::thread thread_;
};

}  // namespace netdiag::collector
