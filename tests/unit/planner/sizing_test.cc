#include "planner/sizing.h"

#include <cmath>

#include <gtest/gtest.h>

#include "planner/fabric_index.h"
#include "tests/unit/planner/test_fabrics.h"
#include "topology/generators.h"

namespace netdiag::planner {
namespace {

using testing::defaultPlanFabrics;
using testing::issueFabric;
using testing::NamedFabric;
using topology::Topology;

TEST(Sizing, DefaultPlanMeetsTheTargetOnThePresetsTheE2eAndTheIssueFabric) {
  for (const NamedFabric& f : defaultPlanFabrics()) {
    SCOPED_TRACE(f.name);
    ASSERT_GT(f.topo.dirLinkCount(), 0u);  // the e2e file loaded
    FabricIndex idx(f.topo, {});
    SizedPlan s = sizePlan(idx, {}, 1);
    EXPECT_EQ(s.coverage.below, 0u);
    EXPECT_EQ(s.sizing.below, 0u);
    EXPECT_EQ(s.sizing.links, f.topo.dirLinkCount());
    EXPECT_FALSE(s.sizing.capped());
    EXPECT_LE(s.sizing.served_probes_per_second, kDefaultMaxProbesPerSecond);
    // Raised only where the base rate misses.
    EXPECT_EQ(s.sizing.raised(), s.sizing.below_at_base > 0);
    EXPECT_EQ(s.plan.budget.probes_per_second, s.sizing.served_probes_per_second);
  }
}

TEST(Sizing, RaisesTheRateToWhatTheThinnestLinkNeedsAndNoMore) {
  Topology t = issueFabric();
  FabricIndex idx(t, {});
  SizedPlan s = sizePlan(idx, {}, 1);
  EXPECT_GT(s.sizing.below_at_base, 0u);
  EXPECT_EQ(s.coverage.below_flows, 0u);
  ASSERT_TRUE(s.sizing.raised());
  EXPECT_EQ(s.sizing.served_probes_per_second, s.sizing.needed_probes_per_second);
  EXPECT_EQ(s.sizing.served_probes_per_second, std::floor(s.sizing.served_probes_per_second));
  // The same flows as the base plan, only faster.
  Plan base = makePlan(idx, {}, 1);
  EXPECT_EQ(commonFlows(base, s.plan), base.flowCount());
  EXPECT_EQ(s.plan.flowCount(), base.flowCount());
  // One probe/s per host port less misses again.
  Budget less;
  less.probes_per_second = s.sizing.served_probes_per_second - 1;
  CoverageReport r = computeCoverage(idx, makePlan(idx, less, 1));
  EXPECT_GT(r.below_probes, 0u);
}

TEST(Sizing, TheCapHoldsAndWhatStaysBelowIsCounted) {
  Topology t = issueFabric();
  FabricIndex idx(t, {});
  SizingOptions o;
  o.max_probes_per_second = 120;
  SizedPlan s = sizePlan(idx, {}, 1, o);
  EXPECT_TRUE(s.sizing.raised());
  EXPECT_TRUE(s.sizing.capped());
  EXPECT_EQ(s.sizing.served_probes_per_second, 120);
  EXPECT_GT(s.sizing.needed_probes_per_second, 120);
  EXPECT_GT(s.sizing.below, 0u);
  EXPECT_EQ(s.sizing.below, s.coverage.below);
  EXPECT_EQ(s.sizing.short_of_flows, 0u);
  for (const PortPlan& pp : s.plan.ports) {
    EXPECT_NEAR(pp.probes_per_second_per_flow * static_cast<double>(pp.flows.size()), 120, 1e-9);
  }
}

TEST(Sizing, ACapAtOrBelowTheRateNeverChangesIt) {
  Topology t = issueFabric();
  FabricIndex idx(t, {});
  for (double cap : {100.0, 50.0}) {
    SizingOptions o;
    o.max_probes_per_second = cap;
    SizedPlan s = sizePlan(idx, {}, 1, o);
    EXPECT_FALSE(s.sizing.raised());
    EXPECT_TRUE(s.sizing.capped());
    EXPECT_EQ(s.sizing.served_probes_per_second, 100);
    EXPECT_EQ(s.sizing.below, s.sizing.below_at_base);
    EXPECT_GT(s.sizing.below, 0u);
  }
}

TEST(Sizing, NoRateFixesAShortageOfFlows) {
  Topology t = topology::generateLeafSpine({});
  FabricIndex idx(t, {});
  Budget b;
  b.peers = 1;
  b.flows_per_peer = 1;
  SizedPlan s = sizePlan(idx, b, 1);
  EXPECT_GT(s.sizing.short_of_flows, 0u);
  EXPECT_GT(s.sizing.below, 0u);
  EXPECT_EQ(s.sizing.short_of_flows, s.coverage.below_flows);
  // Only the same-leaf peer: switch links get no flow, and no rate changes
  // that; access links meet the probe target at the base rate.
  EXPECT_FALSE(s.sizing.raised());
}

}  // namespace
}  // namespace netdiag::planner
