#pragma once

// The analyzer's Prometheus metrics: after each engine pass the daemon calls
// update() with the state the pass published (never the engine itself, so
// the engine's thread does not pay for it), which sets the families below in
// a prometheus-cpp registry that the daemon serves on /metrics. Every name,
// label and unit is listed in docs/operations.md ("Metrics").
//
// Cardinality is bounded by design: link series exist only for open
// incidents and for the `top_degraded` links with the most loss in excess of
// the fabric's background (never one series per link); series of incidents
// that resolved, links that left the top N and agents that left the list are
// removed at the next update().
//
// Thread-safety: update() must be called from one thread at a time; the
// registry itself may be collected concurrently.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/registry.h>

#include "analyzer/engine.h"
#include "topology/model.h"

namespace netdiag::exporter {

// The one label that every batch from an agent that is neither a node nor a
// declared collector is counted under (not_authorized), so junk names on the
// wire never each create series. Only netdiag_agent_rejected_records carries it.
inline constexpr char kUnknownAgent[] = "(unknown)";

struct AgentStatus {
  std::string agent;
  double last_seen = 0;  // Unix seconds of the last batch (0: never)
  bool connected = false;
  uint64_t batches = 0, records = 0;  // cumulative
  // Records rejected (cumulative), by reason: malformed (formats.md §2
  // rules), future (stamped beyond the analyzer's clock plus the skew),
  // not_authorized (outside what the agent may speak for, server/authority.h).
  uint64_t malformed = 0, future = 0, not_authorized = 0;
};

// Cumulative counts since the daemon started; update() turns them into
// counters (a value lower than the last one is taken as a restart of the count).
struct IngestCounters {
  uint64_t batches = 0, duplicate_batches = 0, probes = 0, ports = 0, lldp = 0, malformed = 0,
           future = 0, late = 0, too_late = 0, not_authorized = 0;
  uint64_t port_id_mismatch = 0;  // records with port ids under another topology fingerprint
};

// What an update reads of the engine: its state as one pass left it (the
// live analyzer's published snapshot).
struct EngineView {
  // Every open incident (resolved ones may be left out); generated_at is
  // the engine's clock.
  const analyzer::Report& report;
  const std::vector<analyzer::LinkEvidence>& evidence;  // per directed link (its id as index)
  const analyzer::IngestStats& stats;
  double background_loss = 0;  // per probe, over a round trip
};

struct MetricsOptions {
  size_t top_degraded = 20;          // degraded-link series kept (0: none)
  double coverage_min_probes = 100;  // probes over the horizon for a link to count as covered
};

class AnalyzerMetrics {
 public:
  AnalyzerMetrics(std::shared_ptr<prometheus::Registry> registry, const topology::Topology& topo,
                  MetricsOptions options = {});
  ~AnalyzerMetrics();
  AnalyzerMetrics(const AnalyzerMetrics&) = delete;
  AnalyzerMetrics& operator=(const AnalyzerMetrics&) = delete;

  // After each engine pass: sets the metrics from what it left. `now` is
  // wall-clock Unix seconds.
  void update(const EngineView& engine, const IngestCounters& ingest,
              const std::vector<AgentStatus>& agents, double now);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace netdiag::exporter
