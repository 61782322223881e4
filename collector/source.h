#pragma once

// A collector source: one kind of telemetry (port counters, LLDP, probes;
// later SNMP) behind one small interface, so the agent (or a poller process)
// runs them all the same way and adding one is a folder plus one
// registration (collector/source_registry.h).
//
// Two ways to run, by interval():
//   polled      interval() > 0: the scheduler (collector/scheduler.h) calls
//               collect() every interval, jittered;
//   continuous  interval() == 0: collect() runs right before every batch and
//               hands over what arrived since (the prober's epoll loop on
//               its own thread, LLDP frames waiting on capture handles).
// Either way collect() must return promptly: an async source starts or
// harvests requests there and keeps at most a bounded number in flight.
//
// A source serves targets (interfaces here; switches for an SNMP poller)
// and records one outcome per target and poll into its own SourceStats,
// which the host exports (collector/source_metrics.h).
//
// Thread-safety: the host calls applyScope(), collect() and stop() from one
// thread; stats() may be read from any thread.

#include <cstddef>
#include <string>
#include <vector>

#include "collector/source_stats.h"
#include "netdiag/v1/collector.pb.h"

namespace netdiag::collector {

// What to collect, from the agent's plan.
struct SourceScope {
  std::vector<std::string> interfaces;  // this node's monitored interfaces
  const v1::AgentPlan* plan = nullptr;  // the whole plan (the prober's flows and rates)
};

class Source {
 public:
  explicit Source(std::string name, size_t max_targets = SourceStats::kDefaultMaxTargets)
      : name_(std::move(name)), stats_(max_targets) {}
  virtual ~Source() = default;
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  // Its registry name; the `source` label of its metrics.
  const std::string& name() const { return name_; }
  const SourceStats& stats() const { return stats_; }

  // Seconds between polls; 0: continuous (collected at every batch).
  virtual double interval() const = 0;
  // A new scope (plan). Problems worth a log line go to *problems, whole.
  virtual void applyScope(const SourceScope& scope, std::vector<std::string>* problems) = 0;
  // Appends what it has to `out`, stamped on the wall clock `wall_now`.
  // Problems go to *problems (the host logs each once, "<name>: ...").
  virtual void collect(double wall_now, v1::Batch& out, std::vector<std::string>* problems) = 0;
  // Stops own threads; a last collect() follows, at shutdown.
  virtual void stop() {}

 protected:
  SourceStats& mutableStats() { return stats_; }

 private:
  std::string name_;
  SourceStats stats_;
};

}  // namespace netdiag::collector
