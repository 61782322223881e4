#include "planner/plan.h"

#include <algorithm>
#include <map>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "planner/coverage.h"
#include "planner/fabric_index.h"
#include "tests/unit/planner/test_fabrics.h"
#include "topology/ecmp.h"
#include "topology/generators.h"

namespace netdiag::planner {
namespace {

using ::testing::HasSubstr;
using topology::Topology;

bool anyContains(const std::vector<std::string>& v, const std::string& s) {
  return std::any_of(v.begin(), v.end(),
                     [&](const std::string& x) { return x.find(s) != std::string::npos; });
}

TEST(ValidateBudget, DefaultIsUsableAndWithinHundredProbesPerSecond) {
  Budget b;
  EXPECT_TRUE(validate(b).empty());
  EXPECT_LE(b.probes_per_second, 100);
}

TEST(ValidateBudget, ImpossibleBudgetsAreExplained) {
  Budget b;
  b.probes_per_second = 0;
  EXPECT_TRUE(anyContains(validate(b), "probes_per_second must be a positive number"));
  b.probes_per_second = -5;
  EXPECT_TRUE(anyContains(validate(b), "probes_per_second must be a positive number"));
  b = {};
  b.probes_per_second = 1e6;
  EXPECT_TRUE(anyContains(validate(b), "sane maximum"));
  b = {};
  b.flows_per_peer = 0;
  EXPECT_TRUE(anyContains(validate(b), "flows_per_peer must be >= 1"));
  b = {};
  b.peers = -1;
  EXPECT_TRUE(anyContains(validate(b), "peers must be >= 0"));
  b = {};
  b.peers = 10;
  b.flows_per_peer = 8;
  b.probes_per_second = 2;  // 80 flows need >= 16 probes/s
  auto problems = validate(b);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("too low for 80 flows"));
  EXPECT_THAT(problems[0], HasSubstr("at least 16"));
  b = {};
  b.window_s = 0;
  EXPECT_TRUE(anyContains(validate(b), "window_s"));
  b = {};
  b.first_source_port = 65530;
  EXPECT_TRUE(anyContains(validate(b), "first_source_port"));
}

TEST(MakePlan, EveryPortPlannedWithinBudget) {
  for (const auto& f : testing::targetFabrics()) {
    SCOPED_TRACE(f.name);
    Budget b;
    Plan plan = makePlan(f.topo, b, {}, 1);
    EXPECT_EQ(plan.version, 1u);
    size_t host_ports = 0;
    for (PortId p = 0; p < f.topo.portCount(); ++p) {
      if (f.topo.node(f.topo.port(p).node).isHost()) ++host_ports;
    }
    EXPECT_EQ(plan.ports.size(), host_ports);
    for (const PortPlan& pp : plan.ports) {
      ASSERT_FALSE(pp.flows.empty());
      double rate = pp.probes_per_second_per_flow * static_cast<double>(pp.flows.size());
      EXPECT_LE(rate, b.probes_per_second + 1e-9);
      EXPECT_GE(pp.probes_per_second_per_flow, kMinProbesPerSecondPerFlow);
      std::set<std::pair<PortId, uint16_t>> seen;
      std::set<PortId> peers;
      for (const Flow& fl : pp.flows) {
        EXPECT_NE(fl.dst, pp.src);
        EXPECT_TRUE(f.topo.node(f.topo.port(fl.dst).node).isHost());
        EXPECT_TRUE(seen.insert({fl.dst, fl.source_port}).second) << "duplicate flow";
        peers.insert(fl.dst);
      }
      EXPECT_EQ(pp.flows.size(), peers.size() * static_cast<size_t>(b.flows_per_peer));
      // One peer under the same leaf when the leaf has other ports.
      NodeId leaf = f.topo.peerNode(pp.src);
      bool same = std::any_of(peers.begin(), peers.end(),
                              [&](PortId q) { return f.topo.peerNode(q) == leaf; });
      EXPECT_TRUE(same);
    }
  }
}

TEST(MakePlan, RailWithCoresProbesAcrossAndWithinRails) {
  Topology t = topology::generateRail(
      {.sus = 4, .hosts_per_su = 8, .rails = 4, .spines = 4, .leaf_uplinks = 8, .cores = 4});
  Plan plan = makePlan(t, {}, {}, 3);
  for (const PortPlan& pp : plan.ports) {
    const std::string& my_port = t.port(pp.src).name;
    bool cross = false, same_rail_remote = false;
    for (const Flow& f : pp.flows) {
      bool same_rail = t.port(f.dst).name == my_port;
      bool same_leaf = t.peerNode(f.dst) == t.peerNode(pp.src);
      cross |= !same_rail;
      same_rail_remote |= same_rail && !same_leaf;
    }
    EXPECT_TRUE(cross);
    EXPECT_TRUE(same_rail_remote);
  }
}

TEST(MakePlan, DeterministicBySeed) {
  Topology t = topology::generateFatTree({.k = 8});
  Plan a = makePlan(t, {}, {}, 42);
  Plan b = makePlan(t, {}, {}, 42);
  Plan c = makePlan(t, {}, {}, 43);
  ASSERT_EQ(a.ports.size(), b.ports.size());
  EXPECT_EQ(commonFlows(a, b), a.flowCount());
  EXPECT_LT(commonFlows(a, c), a.flowCount());
}

TEST(Replan, HostLeavingKeepsMostFlowsAndExcludesIt) {
  Topology t = topology::generateRail(
      {.sus = 4, .hosts_per_su = 8, .rails = 4, .spines = 4, .leaf_uplinks = 8, .cores = 4});
  Plan before = makePlan(t, {}, {}, 7);
  NodeId gone = *t.findNode("su2-host3");
  Constraints c;
  c.absent_hosts.push_back(gone);
  Plan after = replan(t, before, c);
  EXPECT_EQ(after.version, before.version + 1);
  EXPECT_EQ(after.seed, before.seed);
  for (const PortPlan& pp : after.ports) {
    EXPECT_NE(t.port(pp.src).node, gone);
    for (const Flow& f : pp.flows) EXPECT_NE(t.port(f.dst).node, gone);
  }
  // Flows of surviving ports that did not target the host all survive.
  size_t kept_possible = 0;
  for (const PortPlan& pp : before.ports) {
    if (t.port(pp.src).node == gone) continue;
    for (const Flow& f : pp.flows) kept_possible += t.port(f.dst).node != gone ? 1 : 0;
  }
  size_t common = commonFlows(before, after);
  EXPECT_EQ(common, kept_possible);
  EXPECT_GE(static_cast<double>(common), 0.9 * static_cast<double>(before.flowCount()));

  // And back: the host returns, the first plan comes back.
  Plan back = replan(t, after, {});
  EXPECT_EQ(commonFlows(before, back), before.flowCount());
  EXPECT_EQ(back.version, 3u);
}

TEST(Replan, DrainedLinksGetNoCoverageAndNoFlowNeedsThem) {
  Topology t = topology::generateFatTree({.k = 4});
  Plan before = makePlan(t, {}, {}, 5);
  Constraints c;
  auto up = t.findDirLink("edge1-1:swp3->agg1-1:swp1");
  auto core = t.findDirLink("agg2-2:swp3->core3:swp2");
  auto access = t.findDirLink("host3-1-2:eth0->edge3-1:swp2");
  ASSERT_TRUE(up && core && access);
  for (auto d : {*up, *core, *access}) c.drained_links.push_back(Topology::linkOf(d));
  Plan after = replan(t, before, c);
  PortId cut = t.findPort("host3-1-2:eth0").value();
  for (const PortPlan& pp : after.ports) {
    EXPECT_NE(pp.src, cut);
    for (const Flow& f : pp.flows) EXPECT_NE(f.dst, cut);
  }
  CoverageReport r = computeCoverage(t, after, c);
  EXPECT_EQ(r.unroutable_flows, 0u);
  for (auto d : {*up, *core, *access}) {
    for (auto dd : {d, Topology::reverse(d)}) {
      EXPECT_EQ(r.flows[dd], 0.0) << t.dirLinkName(dd);
      EXPECT_EQ(r.status[dd], LinkStatus::kExcluded);
    }
  }
  // Every planned pair still has a path around the drained links.
  topology::Router router(t);
  for (LinkId l : c.drained_links) router.setLinkDown(l, true);
  for (const PortPlan& pp : after.ports) {
    for (const Flow& f : pp.flows) {
      auto set = router.paths(pp.src, f.dst);
      ASSERT_FALSE(set.empty()) << set.error();
      for (auto [d, share] : set.linkShares()) EXPECT_FALSE(router.isDown(Topology::linkOf(d)));
    }
  }
  // Draining fabric links in a Clos changes no distance, so no flow moves
  // except those from or to the cut-off port.
  size_t kept_possible = 0;
  for (const PortPlan& pp : before.ports) {
    if (pp.src == cut) continue;
    for (const Flow& f : pp.flows) kept_possible += f.dst != cut ? 1 : 0;
  }
  EXPECT_EQ(commonFlows(before, after), kept_possible);
}

// The flows half of the target does not depend on the rate: the derived
// peers' flows must reach the uplinks of a fabric with few remote ports.
TEST(MakePlan, SmallFabricsGetEnoughDistinctFlowsAtTheBaseRate) {
  for (const testing::NamedFabric& f : testing::defaultPlanFabrics()) {
    SCOPED_TRACE(f.name);
    Plan plan = makePlan(f.topo, {}, {}, 1);
    CoverageReport r = computeCoverage(f.topo, plan, {});
    EXPECT_EQ(r.below_flows, 0u);
  }
}

// 3 x 4 leaf-spine, 2 parallel links, 2 hosts per leaf: 6 remote ports for
// the 19 remote peers the leaf's 6 uplinks per 2 ports ask for. Each remote
// port gets the flows of the missing peers; the same-leaf peer keeps 4.
TEST(MakePlan, FewRemotePortsGetTheMissingPeersFlows) {
  Topology t = testing::issueFabric();
  Plan plan = makePlan(t, {}, {}, 1);
  for (const PortPlan& pp : plan.ports) {
    std::map<PortId, int> per_peer;
    std::set<std::pair<PortId, uint16_t>> distinct;
    for (const Flow& f : pp.flows) {
      ++per_peer[f.dst];
      distinct.insert({f.dst, f.source_port});
    }
    EXPECT_EQ(distinct.size(), pp.flows.size());
    EXPECT_EQ(per_peer.size(), 7u);  // 1 local + 6 remote: every other port
    int remote_flows = 0;
    for (const auto& [q, n] : per_peer) {
      const bool local = t.port(q).node != t.port(pp.src).node &&
                         t.dirDstNode(t.egressOf(q)) == t.dirDstNode(t.egressOf(pp.src));
      EXPECT_EQ(n, local ? 4 : 13) << t.portRef(q);
      remote_flows += local ? 0 : n;
    }
    EXPECT_GE(remote_flows, 19 * 4);
    EXPECT_GE(pp.probes_per_second_per_flow, kMinProbesPerSecondPerFlow);
  }
}

TEST(DerivePeers, ExplicitPeersWinAndDerivedStayWithinBudget) {
  Topology t = topology::generateLeafSpine({});
  FabricIndex idx(t, {});
  Budget b;
  b.peers = 3;
  EXPECT_EQ(derivePeers(idx, b), 3);
  b.peers = 0;
  int derived = derivePeers(idx, b);
  EXPECT_GE(derived, 9);
  b.probes_per_second = 4;  // 4 flows per peer at 0.2/s: 5 peers at most
  EXPECT_EQ(derivePeers(idx, b), 5);
  Plan plan = makePlan(idx, b, 1);
  for (const PortPlan& pp : plan.ports) {
    EXPECT_GE(pp.probes_per_second_per_flow, kMinProbesPerSecondPerFlow - 1e-12);
  }
}

}  // namespace
}  // namespace netdiag::planner
