#pragma once

// The fabric simulator: runs a probe plan over a topology through a scenario
// of faults and traps, and produces the telemetry a fleet of real agents
// would (formats.md §2) plus the ground truth. docs/simulator.md describes
// the model and its simplifications.
//
// Deterministic given (seed, ecmp_seed): every random draw comes from a
// counter-based generator keyed by what it is for (flow, window, purpose),
// so results do not depend on iteration order.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "planner/plan.h"
#include "sim/scenario.h"
#include "sim/truth.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::sim {

struct SimOptions {
  uint64_t seed = 1;
  // The switches' ECMP hash seed; hosts (and the analyzer) never learn it.
  uint64_t ecmp_seed = 0x5eed;
  // A closed loop: the plan the agents run from window start `t` on, given
  // the plan they would run without it (the scenario's, or that epoch's when
  // peers are re-drawn); nullptr keeps that one. Asked at every window
  // start; the simulator switches when the answer's address or version
  // changes. A bench sets it to serve the analyzer's adapted plan.
  std::function<const planner::Plan*(const planner::Plan& base, double t)> plan_at = nullptr;
};

struct SimStats {
  uint64_t probe_records = 0;
  uint64_t port_records = 0;
  uint64_t lldp_records = 0;
  uint64_t dropped_records = 0;  // the `missing_records` noise
  uint64_t late_records = 0;
  uint64_t flows = 0;
  uint64_t reroutes = 0;  // times the routed topology changed
};

class Simulator {
 public:
  // Resolves the scenario's selectors against `topo` and prepares the flows
  // of `plan`. Returns nullptr with errors (file:line) when a fault names a
  // link, port or host the topology does not have, or a selector matches
  // nothing. `topo` and `plan` must outlive the simulator.
  static std::unique_ptr<Simulator> create(const topology::Topology& topo, const Scenario& scenario,
                                           const planner::Plan& plan, const SimOptions& options,
                                           std::vector<Diagnostic>& errors);
  ~Simulator();

  const Truth& truth() const;

  // Runs the whole scenario, handing records to `sink` in time order (but
  // for the `late_records` noise). Memory does not grow with the duration.
  void run(telemetry::RecordSink& sink);

  const SimStats& stats() const;

 private:
  struct Impl;
  explicit Simulator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace netdiag::sim
