#include "planner/sizing.h"

#include <algorithm>
#include <cmath>

#include "planner/fabric_index.h"

namespace netdiag::planner {
namespace {

// The whole probes/s at which every counted link of `r` (planned at `rate`)
// that gets probes at all meets the probe target; `rate` when all do. A link
// with no probes has no flows either: it is short of flows, which no rate
// fixes, and is left out here.
double neededRate(const CoverageReport& r, double rate) {
  const double target = r.target.min_probes_per_minute;
  double worst = 1;
  for (size_t d = 0; d < r.status.size(); ++d) {
    if (r.status[d] == LinkStatus::kExcluded) continue;
    const double probes = r.probes_per_minute[d];
    if (probes <= 0 || probes + 1e-9 >= target) continue;  // the test computeCoverage applies
    worst = std::max(worst, target / probes);
  }
  return worst > 1 ? std::ceil(rate * worst - 1e-9) : rate;
}

}  // namespace

SizedPlan sizePlan(const FabricIndex& idx, const Budget& budget, uint64_t seed,
                   const SizingOptions& options, size_t weakest) {
  SizedPlan out;
  Sizing& s = out.sizing;
  s.base_probes_per_second = budget.probes_per_second;
  s.cap_probes_per_second = options.max_probes_per_second;
  out.plan = makePlan(idx, budget, seed);
  out.coverage = computeCoverage(idx, out.plan, options.target, weakest);
  s.links = out.coverage.links;
  s.below_at_base = out.coverage.below;
  s.needed_probes_per_second = neededRate(out.coverage, budget.probes_per_second);

  // Never below the base, never above what validate() accepts.
  const double limit = std::clamp(options.max_probes_per_second, budget.probes_per_second,
                                  std::max(budget.probes_per_second, kMaxProbesPerSecond));
  // The needed rate is exact for the same flows; a plan re-derived at a
  // higher rate may differ where the base rate limited the peer count, so
  // check again (a second round has never been needed on a Clos fabric).
  for (int round = 0; round < 3; ++round) {
    const double rate = out.plan.budget.probes_per_second;
    const double needed = neededRate(out.coverage, rate);
    s.needed_probes_per_second = std::max(s.needed_probes_per_second, needed);
    if (needed <= rate || rate >= limit) break;
    Budget raised = budget;
    raised.probes_per_second = std::min(needed, limit);
    out.plan = makePlan(idx, raised, seed);
    out.coverage = computeCoverage(idx, out.plan, options.target, weakest);
  }
  s.served_probes_per_second = out.plan.budget.probes_per_second;
  s.below = out.coverage.below;
  s.short_of_flows = out.coverage.below_flows;
  return out;
}

}  // namespace netdiag::planner
