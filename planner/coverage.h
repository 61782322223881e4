#pragma once

// How well a plan covers the fabric, per directed link, under the forwarding
// model of formats.md §1 (per-hop ECMP over shortest paths).
//
// A flow (src, dst, source port) takes one ECMP path each way, picked by a
// hash the hosts do not know. Its probe crosses the forward path and its
// reply the reverse path, so a loss on either implicates the flow. For one
// directed link, flow f crosses it with probability
//     q_f = share of the link on the forward path src->dst
//         + share of the link on the reverse path dst->src
// (the two cannot both hold: a shortest path from S to D and one from D to S
// cross any directed link in opposite senses). Different flows hash
// independently, so the number X of distinct flows crossing the link is a
// sum of independent Bernoulli(q_f) with mean mu = sum_f q_f. We report mu,
// the expected probes per minute (sum_f 60 x rate_f x q_f), and
// P(X >= m) from the Poisson(mu) approximation. For a sum of Bernoullis the
// Poisson lower tail is an over-estimate (Hoeffding 1956; Anderson & Samuels
// 1967) when m <= mu - 1, so the stated probability is conservative there.
// Access links are crossed by every flow of their host port (q = 1), so for
// them X is exact and P is 0 or 1.
//
// Cost: shares are linear in the mass sent, so all flows towards one
// destination edge switch propagate together in one pass over the switch
// graph in order of decreasing distance; the total is about
// (#edge switches) x (#switch links), never one path query per flow.

#include <cstdint>
#include <string>
#include <vector>

#include "planner/plan.h"

namespace netdiag::planner {

class FabricIndex;

// What every directed link should get. The defaults are what docs/planner.md
// derives: m = 8 distinct flows with probability >= 1 - 1e-6 per link (mu >=
// 29.3), and >= 6,000 probes per minute so that 0.1 % loss yields >= 15
// expected losses in 150 s.
struct CoverageTarget {
  int min_flows = 8;
  double max_miss_probability = 1e-6;  // per link: P(X < min_flows)
  double min_probes_per_minute = 6000;
};

// P(Poisson(mu) < m), computed as the sum of its terms (accurate when small).
double poissonBelow(double mu, int m);
// The smallest mu with poissonBelow(mu, m) <= miss (bisection).
double requiredMeanFlows(int m, double miss);

enum class LinkStatus : uint8_t {
  kCovered,   // meets the target
  kBelow,     // plannable but under the target
  kExcluded,  // drained, or an access link of an absent / unplanned port
};

struct TierCoverage {
  std::string name;  // "leaf->spine", "host->leaf", ... (role names)
  size_t links = 0;  // directed links counted (excluded ones are not)
  size_t below = 0;
  double min_flows = 0, median_flows = 0;
  double min_probes_per_minute = 0, median_probes_per_minute = 0;
  double min_probability = 1;  // min over links of P(X >= m)
};

struct CoverageReport {
  CoverageTarget target;
  double required_mean_flows = 0;  // mu for the target's m and miss
  // Per DirLinkId.
  std::vector<double> flows;              // mu: expected distinct flows (per minute)
  std::vector<double> probes_per_minute;  // expected probes (or replies) crossing it
  std::vector<LinkStatus> status;
  // P(X >= m): exact (0 or 1) on access links, Poisson elsewhere; 1 when
  // excluded.
  std::vector<double> p_at_least;

  size_t planned_ports = 0;
  size_t planned_flows = 0;
  size_t unroutable_flows = 0;  // no path (a cut-off switch)
  size_t links = 0;             // directed links counted (not excluded)
  size_t below = 0;
  size_t below_flows = 0;   // of those below, short of distinct flows (P(X < m) > miss)
  size_t below_probes = 0;  // of those below, short of probes per minute (either or both)
  size_t excluded = 0;
  double min_flows = 0, median_flows = 0;
  double min_probes_per_minute = 0, median_probes_per_minute = 0;
  double min_probability = 1;
  // Union bound: sum over counted links of P(X < m), an upper bound on the
  // probability that some link gets fewer than m flows.
  double union_miss = 0;
  std::vector<TierCoverage> tiers;
  std::vector<DirLinkId> weakest;  // furthest below the target first
};

CoverageReport computeCoverage(const FabricIndex& index, const Plan& plan,
                               const CoverageTarget& target = {}, size_t weakest = 10);
CoverageReport computeCoverage(const topology::Topology& topo, const Plan& plan,
                               const Constraints& constraints, const CoverageTarget& target = {},
                               size_t weakest = 10);

}  // namespace netdiag::planner
