#pragma once

// Every source's per-target stats (collector/source_stats.h) as Prometheus
// series labelled {source, target}:
//   <prefix>_source_polls_total                    counter
//   <prefix>_source_poll_failures_total            counter
//   <prefix>_source_poll_duration_seconds          gauge, the last poll
//   <prefix>_source_last_success_timestamp_seconds gauge, 0 until one worked
// Series of targets a source no longer has are removed. Cardinality is
// bounded by the sources (SourceStats folds targets past its bound into
// target="_other").
//
// Thread-safety: update() from one thread; the registry is scraped from others.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "collector/source.h"

namespace netdiag::collector {

class SourceMetrics {
 public:
  // prefix: "netdiag_agent" for the agent.
  SourceMetrics(prometheus::Registry& registry, const std::string& prefix);

  // Brings the series in line with the sources' stats now.
  void update(const std::vector<const Source*>& sources);

 private:
  struct Series {
    prometheus::Counter* polls = nullptr;
    prometheus::Counter* failures = nullptr;
    prometheus::Gauge* duration = nullptr;
    prometheus::Gauge* last_success = nullptr;
    TargetStats exported;  // what the counters hold
  };
  prometheus::Family<prometheus::Counter>& polls_;
  prometheus::Family<prometheus::Counter>& failures_;
  prometheus::Family<prometheus::Gauge>& duration_;
  prometheus::Family<prometheus::Gauge>& last_success_;
  std::map<std::pair<std::string, std::string>, Series> series_;  // (source, target)
};

}  // namespace netdiag::collector
