#include "planner/coverage.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "planner/fabric_index.h"

namespace netdiag::planner {
namespace {

using topology::kNone;
using topology::Topology;

// Flows from edge switch `src_sw`'s side whose path ends at one target edge
// switch: `flows` of them, sending `rate` probes per second together.
struct Mass {
  uint32_t src_sw;
  double flows;
  double rate;
};

std::string roleText(const topology::Node& n) {
  return n.role == topology::Role::kOther ? n.role_name : std::string(topology::roleName(n.role));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

double poissonBelow(double mu, int m) {
  if (m <= 0) return 0;
  if (mu <= 0) return 1;
  double term = std::exp(-mu);
  double sum = term;
  for (int k = 1; k < m; ++k) {
    term *= mu / k;
    sum += term;
  }
  return std::min(1.0, sum);
}

double requiredMeanFlows(int m, double miss) {
  if (m <= 0) return 0;
  double lo = 0, hi = 1;
  while (poissonBelow(hi, m) > miss && hi < 1e6) hi *= 2;
  for (int i = 0; i < 100; ++i) {
    double mid = (lo + hi) / 2;
    (poissonBelow(mid, m) > miss ? lo : hi) = mid;
  }
  return hi;
}

CoverageReport computeCoverage(const FabricIndex& idx, const Plan& plan,
                               const CoverageTarget& target, size_t weakest) {
  const Topology& topo = idx.topology();
  CoverageReport r;
  r.target = target;
  r.required_mean_flows = requiredMeanFlows(target.min_flows, target.max_miss_probability);
  const size_t n_dir = topo.dirLinkCount();
  r.flows.assign(n_dir, 0);
  r.probes_per_minute.assign(n_dir, 0);
  r.status.assign(n_dir, LinkStatus::kCovered);
  r.p_at_least.assign(n_dir, 1.0);

  // Access links take every flow of their port deterministically; switch
  // links get mass per (target edge switch, source switch), gathered first
  // and bucketed by target (a counting sort).
  const uint32_t n_edges = idx.edgeCount();
  std::vector<std::pair<uint32_t, Mass>> raw;
  raw.reserve(plan.flowCount() / std::max(1, plan.budget.flows_per_peer) * 2 + 16);
  auto addAccess = [&](PortId p, double rate) {
    for (DirLinkId d : {topo.egressOf(p), topo.ingressOf(p)}) {
      r.flows[d] += 1;
      r.probes_per_minute[d] += 60 * rate;
    }
  };
  for (const PortPlan& pp : plan.ports) {
    const uint32_t ep = pp.src < topo.portCount() ? idx.edgeOfPort(pp.src) : kNone;
    const double rate = pp.probes_per_second_per_flow;
    for (size_t i = 0; i < pp.flows.size(); ++i) {
      const PortId q = pp.flows[i].dst;
      const uint32_t eq = q < topo.portCount() ? idx.edgeOfPort(q) : kNone;
      if (ep == kNone || eq == kNone || q == pp.src) {
        ++r.unroutable_flows;
        continue;
      }
      ++r.planned_flows;
      if (eq != ep && idx.distance(eq, idx.edgeSwitch(ep)) == FabricIndex::kUnreachable) {
        ++r.unroutable_flows;
        continue;
      }
      addAccess(pp.src, rate);
      addAccess(q, rate);
      if (eq == ep) continue;  // turns around at the shared leaf
      // Consecutive flows to one peer merge into one mass entry.
      auto fwd = std::pair{eq, Mass{idx.edgeSwitch(ep), 1, rate}};
      auto rev = std::pair{ep, Mass{idx.edgeSwitch(eq), 1, rate}};
      if (raw.size() >= 2 && raw[raw.size() - 2].first == fwd.first &&
          raw[raw.size() - 2].second.src_sw == fwd.second.src_sw && raw.back().first == rev.first &&
          raw.back().second.src_sw == rev.second.src_sw) {
        raw[raw.size() - 2].second.flows += 1;
        raw[raw.size() - 2].second.rate += rate;
        raw.back().second.flows += 1;
        raw.back().second.rate += rate;
      } else {
        raw.push_back(fwd);
        raw.push_back(rev);
      }
    }
    ++r.planned_ports;
  }
  std::vector<uint32_t> begin(n_edges + 1, 0);
  for (const auto& [t, m] : raw) ++begin[t + 1];
  for (uint32_t e = 0; e < n_edges; ++e) begin[e + 1] += begin[e];
  std::vector<Mass> masses(raw.size());
  {
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (const auto& [t, m] : raw) masses[fill[t]++] = m;
  }
  raw.clear();
  raw.shrink_to_fit();

  // One pass per target edge switch, farthest switches first.
  const uint32_t n_sw = idx.switchCount();
  std::vector<double> mass_flows(n_sw, 0), mass_rate(n_sw, 0);
  std::vector<uint32_t> stamp(n_sw, kNone);
  std::vector<std::vector<uint32_t>> levels;
  std::vector<FabricIndex::Hop> next;
  for (uint32_t t = 0; t < n_edges; ++t) {
    if (begin[t] == begin[t + 1]) continue;
    const auto row = idx.distanceRow(t);
    for (auto& l : levels) l.clear();
    size_t top = 0;
    auto touch = [&](uint32_t sw) {
      if (stamp[sw] == t) return;
      stamp[sw] = t;
      mass_flows[sw] = 0;
      mass_rate[sw] = 0;
      size_t level = row[sw];
      if (levels.size() <= level) levels.resize(level + 1);
      levels[level].push_back(sw);
      top = std::max(top, level);
    };
    for (uint32_t i = begin[t]; i < begin[t + 1]; ++i) {
      const Mass& m = masses[i];
      touch(m.src_sw);
      mass_flows[m.src_sw] += m.flows;
      mass_rate[m.src_sw] += m.rate;
    }
    for (size_t level = top; level >= 1; --level) {
      for (uint32_t u : levels[level]) {
        next.clear();
        for (const FabricIndex::Hop& h : idx.hops(u)) {
          if (row[h.to] + 1u == level) next.push_back(h);
        }
        if (next.empty()) continue;  // cannot happen on a BFS distance
        const double inv = 1.0 / static_cast<double>(next.size());
        const double f = mass_flows[u] * inv;
        const double rt = mass_rate[u] * inv;
        for (const FabricIndex::Hop& h : next) {
          r.flows[h.link] += f;
          r.probes_per_minute[h.link] += 60 * rt;
          touch(h.to);
          mass_flows[h.to] += f;
          mass_rate[h.to] += rt;
        }
      }
    }
  }

  // Status, summaries, tiers.
  const double m = target.min_flows;
  std::map<std::string, std::vector<DirLinkId>> by_tier;
  std::vector<DirLinkId> counted;
  counted.reserve(n_dir);
  for (DirLinkId d = 0; d < n_dir; ++d) {
    const LinkId l = Topology::linkOf(d);
    const NodeId a = topo.dirSrcNode(d), b = topo.dirDstNode(d);
    const bool ha = topo.node(a).isHost(), hb = topo.node(b).isHost();
    bool excluded = !idx.linkUp(l) || (ha && hb);
    bool access = ha != hb;
    if (!excluded && access) {
      PortId hp = ha ? topo.dirSrcPort(d) : topo.dirDstPort(d);
      excluded = idx.edgeOfPort(hp) == kNone;
    }
    if (excluded) {
      r.status[d] = LinkStatus::kExcluded;
      ++r.excluded;
      continue;
    }
    // The miss probability itself, not 1 - P, so tiny values survive.
    double miss =
        access ? (r.flows[d] + 1e-9 >= m ? 0.0 : 1.0) : poissonBelow(r.flows[d], target.min_flows);
    r.p_at_least[d] = 1 - miss;
    const bool few_flows = miss > target.max_miss_probability;
    const bool few_probes = r.probes_per_minute[d] + 1e-9 < target.min_probes_per_minute;
    const bool below = few_flows || few_probes;
    r.status[d] = below ? LinkStatus::kBelow : LinkStatus::kCovered;
    r.below += below ? 1 : 0;
    r.below_flows += few_flows ? 1 : 0;
    r.below_probes += few_probes ? 1 : 0;
    r.union_miss += miss;
    counted.push_back(d);
    by_tier[roleText(topo.node(a)) + "->" + roleText(topo.node(b))].push_back(d);
  }
  r.links = counted.size();
  r.union_miss = std::min(1.0, r.union_miss);

  auto summarize = [&](const std::vector<DirLinkId>& ds, double& min_f, double& med_f,
                       double& min_p, double& med_p, double& min_prob) {
    std::vector<double> f, p;
    f.reserve(ds.size());
    p.reserve(ds.size());
    min_prob = 1;
    for (DirLinkId d : ds) {
      f.push_back(r.flows[d]);
      p.push_back(r.probes_per_minute[d]);
      min_prob = std::min(min_prob, r.p_at_least[d]);
    }
    min_f = f.empty() ? 0 : *std::min_element(f.begin(), f.end());
    min_p = p.empty() ? 0 : *std::min_element(p.begin(), p.end());
    med_f = median(std::move(f));
    med_p = median(std::move(p));
  };
  summarize(counted, r.min_flows, r.median_flows, r.min_probes_per_minute,
            r.median_probes_per_minute, r.min_probability);
  for (auto& [name, ds] : by_tier) {
    TierCoverage tc;
    tc.name = name;
    tc.links = ds.size();
    for (DirLinkId d : ds) tc.below += r.status[d] == LinkStatus::kBelow ? 1 : 0;
    summarize(ds, tc.min_flows, tc.median_flows, tc.min_probes_per_minute,
              tc.median_probes_per_minute, tc.min_probability);
    r.tiers.push_back(std::move(tc));
  }

  // Weakest: the lowest fraction of either target, flows first on ties.
  auto weakness = [&](DirLinkId d) {
    double fr = r.required_mean_flows > 0 ? r.flows[d] / r.required_mean_flows : 1e300;
    double pr = target.min_probes_per_minute > 0
                    ? r.probes_per_minute[d] / target.min_probes_per_minute
                    : 1e300;
    return std::pair{std::min(fr, pr), r.flows[d]};
  };
  weakest = std::min(weakest, counted.size());
  std::partial_sort(counted.begin(), counted.begin() + static_cast<std::ptrdiff_t>(weakest),
                    counted.end(), [&](DirLinkId x, DirLinkId y) {
                      auto wx = weakness(x), wy = weakness(y);
                      return wx != wy ? wx < wy : x < y;
                    });
  r.weakest.assign(counted.begin(), counted.begin() + static_cast<std::ptrdiff_t>(weakest));
  return r;
}

CoverageReport computeCoverage(const topology::Topology& topo, const Plan& plan,
                               const Constraints& constraints, const CoverageTarget& target,
                               size_t weakest) {
  FabricIndex idx(topo, constraints);
  return computeCoverage(idx, plan, target, weakest);
}

}  // namespace netdiag::planner
