#include "planner/coverage.h"

#include <cmath>

#include <gtest/gtest.h>

#include "planner/fabric_index.h"
#include "tests/unit/planner/test_fabrics.h"
#include "topology/ecmp.h"
#include "topology/generators.h"

namespace netdiag::planner {
namespace {

using topology::Topology;

TEST(Poisson, TailAndRequiredMean) {
  EXPECT_NEAR(poissonBelow(30, 8), 5.2337341670707e-07, 1e-15);
  EXPECT_NEAR(poissonBelow(2, 1), std::exp(-2.0), 1e-15);
  EXPECT_EQ(poissonBelow(5, 0), 0.0);
  EXPECT_EQ(poissonBelow(0, 3), 1.0);
  double mu = requiredMeanFlows(8, 1e-6);
  EXPECT_NEAR(poissonBelow(mu, 8), 1e-6, 1e-9);
  EXPECT_GT(mu, 29);
  EXPECT_LT(mu, 30);
}

TEST(FabricIndex, DistancesMatchTheRouter) {
  Topology t = topology::generateRail(
      {.sus = 3, .hosts_per_su = 4, .rails = 2, .spines = 2, .leaf_uplinks = 2, .cores = 2});
  Constraints c;
  c.drained_links.push_back(Topology::linkOf(*t.findDirLink("su1-rail0:swp5->rail0-spine1:swp1")));
  FabricIndex idx(t, c);
  topology::Router router(t);
  for (LinkId l : c.drained_links) router.setLinkDown(l, true);
  for (uint32_t e = 0; e < idx.edgeCount(); ++e) {
    auto dist = router.distancesTo(idx.switchNode(idx.edgeSwitch(e)));
    for (uint32_t s = 0; s < idx.switchCount(); ++s) {
      uint16_t want = (*dist)[idx.switchNode(s)];
      uint8_t got = idx.distance(e, s);
      if (want == topology::Router::kUnreachable) {
        EXPECT_EQ(got, FabricIndex::kUnreachable);
      } else {
        EXPECT_EQ(got, want);
      }
    }
  }
}

// The aggregated per-destination propagation against one Router query per
// flow and direction: sum of PathSet::linkShares().
void checkAgainstBruteForce(const Topology& t, const Constraints& c, const Budget& b) {
  Plan plan = makePlan(t, b, c, 11);
  CoverageReport r = computeCoverage(t, plan, c);
  std::vector<double> flows(t.dirLinkCount(), 0), probes(t.dirLinkCount(), 0);
  topology::Router router(t);
  for (LinkId l : c.drained_links) router.setLinkDown(l, true);
  for (const PortPlan& pp : plan.ports) {
    for (const Flow& f : pp.flows) {
      for (auto [a, z] : {std::pair{pp.src, f.dst}, std::pair{f.dst, pp.src}}) {
        auto set = router.paths(a, z);
        ASSERT_FALSE(set.empty()) << set.error();
        for (auto [d, share] : set.linkShares()) {
          flows[d] += share;
          probes[d] += 60 * pp.probes_per_second_per_flow * share;
        }
      }
    }
  }
  EXPECT_EQ(r.unroutable_flows, 0u);
  for (DirLinkId d = 0; d < t.dirLinkCount(); ++d) {
    EXPECT_NEAR(r.flows[d], flows[d], 1e-9) << t.dirLinkName(d);
    EXPECT_NEAR(r.probes_per_minute[d], probes[d], 1e-9 * std::max(1.0, probes[d]))
        << t.dirLinkName(d);
  }
}

TEST(Coverage, MatchesBruteForceOnSmallFabrics) {
  for (const auto& f : testing::targetFabrics()) {
    SCOPED_TRACE(f.name);
    checkAgainstBruteForce(f.topo, {}, {});
  }
}

TEST(Coverage, MatchesBruteForceWithDrainsAndAbsentHosts) {
  Topology t = topology::generateRail(
      {.sus = 4, .hosts_per_su = 8, .rails = 4, .spines = 4, .leaf_uplinks = 8, .cores = 4});
  Constraints c;
  c.drained_links.push_back(Topology::linkOf(*t.findDirLink("su2-rail1:swp9->rail1-spine1:swp3")));
  c.drained_links.push_back(Topology::linkOf(*t.findDirLink("rail3-spine2:swp12->core4:swp14")));
  c.absent_hosts.push_back(*t.findNode("su1-host1"));
  Budget b;
  b.peers = 5;
  b.flows_per_peer = 3;
  checkAgainstBruteForce(t, c, b);
  // Asymmetric shares: a leaf-spine fabric with parallel links, one drained.
  Topology ls = topology::generateLeafSpine(
      {.spines = 3, .leaves = 4, .hosts_per_leaf = 3, .nics_per_host = 1, .parallel = 2});
  Constraints c2;
  c2.drained_links.push_back(Topology::linkOf(*ls.findDirLink("leaf1:swp4->spine1:swp1")));
  checkAgainstBruteForce(ls, c2, {});
}

// The guarantee of docs/planner.md: under the default budget every directed
// link expects at least the flows that make P(>= 8 flows) >= 1 - 1e-6, and
// at least 6,000 probes a minute.
TEST(Coverage, DefaultBudgetMeetsTheTargetOnEveryTargetFabric) {
  for (const auto& f : testing::targetFabrics()) {
    SCOPED_TRACE(f.name);
    Plan plan = makePlan(f.topo, {}, {}, 1);
    CoverageReport r = computeCoverage(f.topo, plan, {});
    EXPECT_EQ(r.excluded, 0u);
    EXPECT_EQ(r.links, f.topo.dirLinkCount());
    EXPECT_EQ(r.below, 0u);
    for (DirLinkId d = 0; d < f.topo.dirLinkCount(); ++d) {
      EXPECT_GE(r.flows[d], r.required_mean_flows) << f.topo.dirLinkName(d);
      EXPECT_GE(r.probes_per_minute[d], r.target.min_probes_per_minute) << f.topo.dirLinkName(d);
      EXPECT_GE(r.p_at_least[d], 1 - 1e-6) << f.topo.dirLinkName(d);
    }
    EXPECT_LE(r.union_miss, 1e-3);
    EXPECT_FALSE(r.tiers.empty());
    EXPECT_EQ(r.weakest.size(), 10u);
  }
}

TEST(Coverage, AccessLinkDirectionsCarryTheSameFlows) {
  Topology t = topology::generateFatTree({.k = 4});
  Plan plan = makePlan(t, {}, {}, 1);
  CoverageReport r = computeCoverage(t, plan, {});
  for (DirLinkId d = 0; d < t.dirLinkCount(); d += 2) {
    if (!t.node(t.dirSrcNode(d)).isHost()) continue;
    EXPECT_EQ(r.flows[d], r.flows[d + 1]);
    EXPECT_EQ(r.flows[d], std::floor(r.flows[d]));  // deterministic: an integer
  }
}

TEST(Coverage, ThinBudgetIsReportedBelowTarget) {
  Topology t = topology::generateLeafSpine({});
  Budget b;
  b.peers = 1;
  b.flows_per_peer = 1;
  b.probes_per_second = 1;
  Plan plan = makePlan(t, b, {}, 1);
  CoverageReport r = computeCoverage(t, plan, {});
  EXPECT_GT(r.below, 0u);
  EXPECT_GT(r.union_miss, 0.5);
  ASSERT_FALSE(r.weakest.empty());
  EXPECT_EQ(r.status[r.weakest[0]], LinkStatus::kBelow);
}

}  // namespace
}  // namespace netdiag::planner
