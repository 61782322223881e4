#pragma once

// Turns a scenario's fault specs (selectors, names) into concrete faults on
// a topology, and writes the ground truth for them.

#include <vector>

#include "sim/scenario.h"
#include "sim/truth.h"
#include "topology/model.h"

namespace netdiag::sim {

struct ResolvedFault {
  std::string kind;  // as in the scenario
  topology::DirLinkId link = topology::kNone;
  topology::NodeId host = topology::kNone;
  topology::PortId swap_a = topology::kNone, swap_b = topology::kNone;  // miscabling
  double onset = 0, end = kForever;                                     // absolute times
  double loss = 0, share = 0, latency_us = 0, period_s = 0, down_s = 0, tx_drops_per_s = 0;
  double delay = 0;   // busy_host (its `loss` is the share of replies dropped)
  uint64_t salt = 0;  // per-fault randomness (blackhole flow choice)

  // Fraction of (a, b] during which the fault is active.
  double activeFraction(double a, double b) const;
  // Fraction of (a, b] during which a flapping link is down.
  double flapDownFraction(double a, double b) const;
  bool activeAt(double t) const { return t >= onset && t < end; }
  // A link_down or link_flap fault holding its link down at time t.
  bool linkDownAt(double t) const;
};

// Resolves every fault; appends errors (file:line) for names the topology
// lacks and selectors that match nothing.
std::vector<ResolvedFault> resolveFaults(const topology::Topology& topo, const Scenario& scenario,
                                         uint64_t seed, std::vector<Diagnostic>& errors);

Truth makeTruth(const topology::Topology& topo, const Scenario& scenario,
                const std::vector<ResolvedFault>& faults, uint64_t seed, uint64_t ecmp_seed);

}  // namespace netdiag::sim
