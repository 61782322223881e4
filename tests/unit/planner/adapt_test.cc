#include <algorithm>

#include <gtest/gtest.h>

#include "planner/coverage.h"
#include "planner/plan.h"
#include "topology/generators.h"

namespace netdiag::planner {
namespace {

using topology::Topology;

TEST(Adapt, AddsFlowsWhereDiscoverySawFew) {
  Topology t = topology::generateRail(
      {.sus = 4, .hosts_per_su = 8, .rails = 4, .spines = 4, .leaf_uplinks = 8, .cores = 4});
  Plan plan = makePlan(t, {}, {}, 1);
  CoverageReport before = computeCoverage(t, plan, {});
  // Discovery saw plenty everywhere except a spine->core, a spine->leaf and an
  // access link.
  std::vector<uint32_t> observed(t.dirLinkCount(), 100);
  DirLinkId core = *t.findDirLink("rail2-spine3:swp10->core2:swp11");
  DirLinkId down = *t.findDirLink("rail1-spine2:swp3->su2-rail1:swp11");
  DirLinkId access = *t.findDirLink("su3-host4:eth2->su3-rail2:swp4");
  observed[core] = 1;
  observed[down] = 0;
  observed[access] = 2;
  AdaptResult a = adaptPlan(t, plan, {}, observed);
  EXPECT_EQ(a.plan.version, plan.version + 1);
  EXPECT_EQ(a.thin.size(), 3u);
  EXPECT_TRUE(a.unfixable.empty());
  EXPECT_GT(a.flows_added, 0u);
  CoverageReport after = computeCoverage(t, a.plan, {});
  // At least the expected crossing flows of min_flows x safety = 12 added.
  for (DirLinkId d : {core, down}) {
    EXPECT_GE(after.flows[d] - before.flows[d], 12 - 1e-9) << t.dirLinkName(d);
  }
  EXPECT_GE(after.flows[access] - before.flows[access], 10);
  for (const PortPlan& pp : a.plan.ports) {
    EXPECT_LE(pp.probes_per_second_per_flow * static_cast<double>(pp.flows.size()),
              plan.budget.probes_per_second + 1e-9);
    EXPECT_GE(pp.probes_per_second_per_flow, kMinProbesPerSecondPerFlow);
  }
  // Nothing is removed: the old flows are all still there.
  EXPECT_EQ(commonFlows(plan, a.plan), plan.flowCount());
  EXPECT_EQ(a.plan.flowCount(), plan.flowCount() + a.flows_added);
}

TEST(Adapt, RespectsThePerPortCap) {
  Topology t = topology::generateFatTree({.k = 4});
  Plan plan = makePlan(t, {}, {}, 1);
  std::vector<uint32_t> observed(t.dirLinkCount(), 0);  // everything thin
  AdaptOptions o;
  o.max_added_flows_per_port = 3;
  AdaptResult a = adaptPlan(t, plan, {}, observed, o);
  for (size_t i = 0; i < plan.ports.size(); ++i) {
    EXPECT_LE(a.plan.ports[i].flows.size(), plan.ports[i].flows.size() + 3);
  }
}

TEST(Adapt, DrainedLinksAreNotThin) {
  Topology t = topology::generateLeafSpine({});
  Constraints c;
  DirLinkId d = *t.findDirLink("leaf2:swp9->spine1:swp2");
  c.drained_links.push_back(Topology::linkOf(d));
  Plan plan = makePlan(t, {}, c, 1);
  std::vector<uint32_t> observed(t.dirLinkCount(), 100);
  observed[d] = 0;
  observed[Topology::reverse(d)] = 0;
  AdaptResult a = adaptPlan(t, plan, c, observed);
  EXPECT_TRUE(a.thin.empty());
  EXPECT_EQ(a.flows_added, 0u);
}

TEST(Focus, AddsFlowsAcrossEveryMemberOfAGroup) {
  Topology t =
      topology::generateLeafSpine({.spines = 2, .leaves = 4, .hosts_per_leaf = 4, .parallel = 2});
  Plan plan = makePlan(t, {}, {}, 1);
  CoverageReport before = computeCoverage(t, plan, {});
  // Two parallel uplinks of one leaf to one spine: flows with unknown paths
  // can't tell them apart; more distinct flows across both can.
  std::vector<DirLinkId> group;
  for (DirLinkId d = 0; d < t.dirLinkCount(); ++d) {
    if (t.node(t.dirSrcNode(d)).name == "leaf1" && t.node(t.dirDstNode(d)).name == "spine1")
      group.push_back(d);
  }
  ASSERT_EQ(group.size(), 2u);
  AdaptResult a = focusPlan(t, plan, {}, group);
  EXPECT_EQ(a.plan.version, plan.version + 1);
  EXPECT_EQ(a.thin, group);
  EXPECT_TRUE(a.unfixable.empty());
  CoverageReport after = computeCoverage(t, a.plan, {});
  for (DirLinkId d : group) {
    EXPECT_GE(after.flows[d] - before.flows[d], 12 - 1e-9) << t.dirLinkName(d);
  }
  // Only flows are added, each between ports the plan already paired (no
  // responder meets a new source), and each port keeps its budget.
  EXPECT_EQ(commonFlows(plan, a.plan), plan.flowCount());
  for (size_t i = 0; i < plan.ports.size(); ++i) {
    for (const Flow& f : a.plan.ports[i].flows) {
      EXPECT_TRUE(std::any_of(plan.ports[i].flows.begin(), plan.ports[i].flows.end(),
                              [&](const Flow& g) { return g.dst == f.dst; }))
          << t.portRef(plan.ports[i].src) << " -> " << t.portRef(f.dst);
    }
  }
  for (const PortPlan& pp : a.plan.ports) {
    EXPECT_LE(pp.probes_per_second_per_flow * static_cast<double>(pp.flows.size()),
              plan.budget.probes_per_second + 1e-9);
  }
  // No suspect: the same flows.
  AdaptResult none = focusPlan(t, plan, {}, {});
  EXPECT_EQ(none.flows_added, 0u);
  EXPECT_EQ(none.plan.flowCount(), plan.flowCount());
}

}  // namespace
}  // namespace netdiag::planner
