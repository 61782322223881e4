#pragma once

// The metrics of the daemon's ingest path itself (the queue to the engine
// thread, the reorder buffer, backpressure); exporter::AnalyzerMetrics has
// the engine's. Names and meanings: docs/operations.md ("Metrics"). No
// labels, so nothing here grows with the fabric or the wire.
//
// Thread-safety: update() from the engine thread; the registry may be
// collected concurrently.

#include <cstddef>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace netdiag::server {

struct IngestPathState {
  size_t queue_records = 0, queue_capacity = 0, held_records = 0;
  double blocked_seconds = 0;  // cumulative
  double backlog_s = 0;        // oldest record not yet in the engine, behind the clock floor
  bool behind = false;         // backlog beyond the engine's late window this tick
  double watermark_lag_s = 0;  // the clock floor minus where the engine has every record
};

class IngestMetrics {
 public:
  explicit IngestMetrics(prometheus::Registry& registry);
  void update(const IngestPathState& s);

 private:
  prometheus::Gauge& queue_;
  prometheus::Gauge& capacity_;
  prometheus::Gauge& held_;
  prometheus::Counter& blocked_;
  prometheus::Gauge& backlog_;
  prometheus::Counter& behind_;
  prometheus::Gauge& watermark_lag_;
  double blocked_seen_ = 0;
};

}  // namespace netdiag::server
