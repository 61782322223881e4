#include "server/ingest_metrics.h"

namespace netdiag::server {
namespace {

prometheus::Gauge& gauge(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}
prometheus::Counter& counter(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}

}  // namespace

IngestMetrics::IngestMetrics(prometheus::Registry& r)
    : queue_(gauge(r, "netdiag_ingest_queue_records",
                   "Decoded records waiting in the queue to the engine thread")),
      capacity_(gauge(r, "netdiag_ingest_queue_capacity_records",
                      "The queue's bound; agent streams wait beyond it")),
      held_(gauge(r, "netdiag_ingest_held_records",
                  "Records in the reorder buffer, waiting for the watermark")),
      blocked_(counter(r, "netdiag_ingest_queue_blocked_seconds_total",
                       "Time agent streams spent waiting for room in the full queue "
                       "(summed over streams)")),
      backlog_(gauge(r, "netdiag_ingest_backlog_seconds",
                     "How far the oldest record not yet in the engine is behind the "
                     "engine's clock floor (wall clock minus the delay)")),
      behind_(counter(r, "netdiag_ingest_behind_late_window_total",
                      "Ticks at which that backlog exceeded the engine's late tolerance: "
                      "the analyzer is not keeping up")),
      watermark_lag_(gauge(r, "netdiag_ingest_watermark_lag_seconds",
                           "How far the engine's watermark (it has every record before it) is "
                           "behind the wall clock minus the delay: on the bus, the catch-up "
                           "still to do")) {}

void IngestMetrics::update(const IngestPathState& s) {
  queue_.Set(static_cast<double>(s.queue_records));
  capacity_.Set(static_cast<double>(s.queue_capacity));
  held_.Set(static_cast<double>(s.held_records));
  if (s.blocked_seconds > blocked_seen_) {
    blocked_.Increment(s.blocked_seconds - blocked_seen_);
    blocked_seen_ = s.blocked_seconds;
  }
  backlog_.Set(s.backlog_s);
  if (s.behind) behind_.Increment();
  watermark_lag_.Set(s.watermark_lag_s);
}

}  // namespace netdiag::server
