#pragma once

// Each agent's ingest rate, bounded: a token bucket of records per second
// per identity (a node, a collector; every unknown name shares one). It is
// back-pressure, not loss: a stream over its rate waits before its batch is
// ingested and acknowledged, so the agent's in-flight window fills and its
// spool holds the rest. Other agents' streams (each on its own thread) do
// not wait. The default is far above any plan's need (docs/operations.md,
// Bounds): it stops one authorized but misbehaving agent from taking the
// analyzer's whole ingest, it is not a fairness scheduler.
//
// Thread-safety: every method may be called from any thread.

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace netdiag::server {

class AgentRateLimiter {
 public:
  // records_per_s 0: no limit. A quiet agent may send burst_s seconds'
  // worth at once.
  AgentRateLimiter(double records_per_s, double burst_s)
      : rate_(records_per_s), burst_(records_per_s * burst_s) {}

  // Takes `records` from `key`'s bucket at monotonic time `now`; returns how
  // many seconds the caller must wait before ingesting them (0: at once).
  double reserve(const std::string& key, size_t records, double now);
  bool enabled() const { return rate_ > 0; }

 private:
  struct Bucket {
    double tokens = 0;  // negative: owed, waited for by the caller
    double at = 0;
  };
  const double rate_, burst_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace netdiag::server
