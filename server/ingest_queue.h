#pragma once

// The bounded hand-off from the gRPC stream threads (which decode and check
// batches in parallel) to the one engine thread. Bounded in records: a push
// that would overfill it waits (the stream stops reading, so gRPC flow
// control slows the agent); nothing is dropped. The wait is metered.
//
// The queue also knows the oldest record time it holds or is waiting to take,
// so the engine thread never moves its clock past a record that backpressure
// is still holding back (which would turn it too_late).
//
// Thread-safety: push() from any thread; popAll() from the engine thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
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
  std::string first_refused;  // the first not_authorized record, described
  std::vector<std::string> errors, warnings;
  double oldest = std::numeric_limits<double>::infinity();  // the oldest record's t
  // Called once, on the engine thread, when every record is in the engine
  // (or the batch is known a duplicate of one that is). Must not block.
  std::function<void(BatchResult)> done;

  size_t records() const { return probes.size() + ports.size() + lldp.size(); }
};

class IngestQueue {
 public:
  explicit IngestQueue(size_t capacity_records) : capacity_(capacity_records) {}

  // Waits while the batch does not fit (a batch larger than the whole queue
  // waits for it to be empty), then queues it. False (the batch not queued)
  // once close() was called.
  bool push(DecodedBatch&& batch);

  // The engine side: waits up to `timeout` for something to be queued (or a
  // wake()), then moves every queued batch into `out`.
  void popAll(std::vector<DecodedBatch>& out, std::chrono::milliseconds timeout);
  // Ends a popAll() wait early (a tick or flush request).
  void wake();
  // Pushes waiting now and later return false.
  void close();

  // The oldest record time queued or waiting to be (+inf when none).
  double oldest() const;
  size_t depthRecords() const;
  size_t capacityRecords() const { return capacity_; }
  size_t waitingPushes() const;
  // Total time pushes spent waiting for room, seconds.
  double blockedSeconds() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable room_, ready_;
  std::deque<DecodedBatch> batches_;
  size_t records_ = 0;
  size_t waiting_ = 0;  // pushes waiting for room
  bool woken_ = false, closed_ = false;
  std::multiset<double> oldest_;  // of queued batches and of pushes waiting
  std::atomic<uint64_t> blocked_ns_{0};
};

}  // namespace netdiag::server
