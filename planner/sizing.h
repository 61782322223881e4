#pragma once

// Sizing the probe rate to the coverage target: the plan the analyzer serves
// and `netdiag plan` reports by default.
//
// A budget's rate (probes per second per host port) is a base. Some fabrics
// cannot meet the probes-per-minute target at any plan of that rate: every
// remote round trip crosses two leaf->spine links, so a leaf with r uplinks
// per host port gives each at most 2 x 60 x rate / r probes a minute (at
// 100 probes/s and r = 3, 4,000 < 6,000). sizePlan() then raises the rate,
// uniformly for every host port, to what the thinnest link needs, up to a
// cap, and says so. Expected probes per link are linear in the rate (a
// port's flows share its rate evenly), so the needed rate is the base times
// the largest target / probes ratio over links below the probe target.
// Expected distinct flows do not depend on the rate: a link short of flows
// needs more flows or peers (the budget's other fields), which no rate gives.
//
// Thread-safety: pure.

#include <cstddef>
#include <cstdint>

#include "planner/coverage.h"
#include "planner/plan.h"

namespace netdiag::planner {

class FabricIndex;

// The default cap: 4x the default base. At the agent's measured cost
// (docs/benchmarks.md: 8,000 probes/s sent and answered for 12 % of a core)
// 400 probes/s per host port is about 0.6 % of a core, and the analyzer's
// load does not grow with it (records are per flow and window).
inline constexpr double kDefaultMaxProbesPerSecond = 400;

struct SizingOptions {
  CoverageTarget target;
  // The rate is never raised above this; at or below the budget's rate it
  // is never raised at all.
  double max_probes_per_second = kDefaultMaxProbesPerSecond;
};

// What sizePlan decided, small enough to keep and log.
struct Sizing {
  double base_probes_per_second = 0;    // the budget's rate
  double cap_probes_per_second = 0;     // SizingOptions::max_probes_per_second
  double needed_probes_per_second = 0;  // meets the probe target on every link with probes
  double served_probes_per_second = 0;  // the plan's rate
  size_t links = 0;                     // directed links counted
  size_t below_at_base = 0;             // below the target at the base rate
  size_t below = 0;                     // below it at the served rate
  size_t short_of_flows = 0;            // of those, short of distinct flows (no rate helps)

  bool raised() const { return served_probes_per_second > base_probes_per_second; }
  // The rate that would meet the probe target is above the cap.
  bool capped() const { return needed_probes_per_second > served_probes_per_second; }
};

struct SizedPlan {
  Plan plan;  // plan.budget.probes_per_second is the served rate
  CoverageReport coverage;
  Sizing sizing;
};

// Plans at the budget's rate and raises it within the cap where some link
// falls short of the probe target. Precondition: validate(budget) is empty.
SizedPlan sizePlan(const FabricIndex& index, const Budget& budget, uint64_t seed,
                   const SizingOptions& options = {}, size_t weakest = 10);

}  // namespace netdiag::planner
