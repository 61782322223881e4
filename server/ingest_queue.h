#pragma once

// The bounded hand-off from the gRPC streams (which decode and check batches
// in parallel) to the one engine thread. Bounded in records: a batch that
// would overfill it is parked, and queued in arrival order as the engine
// makes room; meanwhile its stream reads nothing more, so gRPC flow control
// slows the agent. Nothing is dropped, nobody blocks a gRPC thread, and the
// time parked is metered. A stream parks at most one batch at a time, so
// what is parked is bounded by the streams times the message size.
//
// The queue also knows the oldest record time it holds or is waiting to take,
// so the engine thread never moves its clock past a record that backpressure
// is still holding back (which would turn it too_late).
//
// Thread-safety: offer() and push() from any thread; popAll() from the
// engine thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/authority.h"
#include "telemetry/record.h"

namespace netdiag::server {

struct BatchResult;

// One batch, decoded and checked against its agent's authority on its stream
// thread; what is left is the engine thread's (dedup, reorder, ingest).
struct DecodedBatch {
  std::string agent;
  uint64_t epoch = 0, seq = 0;
  Authority::Identity who;
  std::vector<telemetry::ProbeRecord> probes;
  std::vector<telemetry::PortRecord> ports;
  std::vector<telemetry::LldpRecord> lldp;
  size_t malformed = 0;
  size_t future = 0;
  size_t not_authorized = 0;
  size_t port_id_mismatch = 0;  // records with ids under another topology fingerprint
  std::string first_refused;    // the first not_authorized record, described
  std::vector<std::string> errors, warnings;
  double oldest = std::numeric_limits<double>::infinity();  // the oldest record's t
  // Set: not a batch but a tick marker of the bus's stream at this place in
  // it (bus/tick.h, LiveOptions::stream_clock); no records, no agent.
  std::optional<double> tick;
  // Called once, on the engine thread, when every record is in the engine
  // (or the batch is known a duplicate of one that is). Must not block.
  std::function<void(BatchResult)> done;

  size_t records() const { return probes.size() + ports.size() + lldp.size(); }
};

class IngestQueue {
 public:
  explicit IngestQueue(size_t capacity_records) : capacity_(capacity_records) {}

  // Queues the batch and returns true when it fits (a batch larger than the
  // whole queue fits an empty one). Otherwise parks it and returns false;
  // `on_queued` is then called exactly once: with true from popAll() on the
  // engine thread once room lets the batch in, or with false when the queue
  // is (or gets) closed, right after the batch's `done` was handed a
  // not-ingested result. `on_queued` must not block.
  bool offer(DecodedBatch&& batch, std::function<void(bool queued)> on_queued);
  // offer(), waiting while parked. False once close() was called: the batch
  // is not queued and its `done` was handed a not-ingested result.
  bool push(DecodedBatch&& batch);

  // The engine side: waits up to `timeout` for something to be queued (or a
  // wake()), then moves every queued batch into `out`.
  void popAll(std::vector<DecodedBatch>& out, std::chrono::milliseconds timeout);
  // Ends a popAll() wait early (a tick or flush request).
  void wake();
  // Parked batches are handed back (see offer()); later offers are refused.
  void close();

  // The oldest record time queued or waiting to be (+inf when none).
  double oldest() const;
  size_t depthRecords() const;
  size_t capacityRecords() const { return capacity_; }
  size_t waitingPushes() const;  // batches parked now
  // Total time batches spent parked, seconds (parked now included).
  double blockedSeconds() const;

 private:
  struct Parked {
    DecodedBatch batch;
    std::function<void(bool)> on_queued;
    std::chrono::steady_clock::time_point since;
  };
  bool fitsLocked(size_t n) const { return records_ == 0 || records_ + n <= capacity_; }

  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::deque<DecodedBatch> batches_;
  std::deque<Parked> parked_;  // in arrival order
  size_t records_ = 0;
  bool woken_ = false, closed_ = false;
  std::multiset<double> oldest_;  // of queued and parked batches
  uint64_t blocked_ns_ = 0;       // of batches no longer parked
};

}  // namespace netdiag::server
