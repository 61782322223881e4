// Drain plans on generated fabrics: a leaf uplink in a leaf-spine fabric is
// safe and leaves the other uplinks; a single-NIC host's access link strands
// that host; parallel links count one each; links already down make a second
// drain unsafe; fat-tree tiers are named leaf, spine and core; the hosts a
// plan strands match a brute-force count of every host's reach, with random
// links down, on every link of several fabrics.

#include "topology/drain.h"

#include <algorithm>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "topology/generators.h"

namespace netdiag::topology {
namespace {

// The first link between two named nodes.
LinkId between(const Topology& t, const std::string& a, const std::string& b) {
  NodeId na = *t.findNode(a), nb = *t.findNode(b);
  for (DirLinkId d : t.outLinks(na)) {
    if (t.dirDstNode(d) == nb) return Topology::linkOf(d);
  }
  ADD_FAILURE() << "no link " << a << " - " << b;
  return 0;
}

TEST(DrainPlan, LeafUplinkIsSafeAndKeepsTheOtherUplinks) {
  Topology t = generateLeafSpine({.spines = 4, .leaves = 4, .hosts_per_leaf = 2});
  Router router(t);
  DrainPlan p = planDrain(router, between(t, "leaf2", "spine1"));
  EXPECT_EQ(t.node(p.lower).name, "leaf2");
  EXPECT_EQ(t.node(p.upper).name, "spine1");
  EXPECT_EQ(p.lower_tier, "leaf");
  EXPECT_EQ(p.upper_tier, "spine");
  EXPECT_EQ(p.width_before, 4u);
  EXPECT_EQ(p.width_after, 3u);
  EXPECT_TRUE(p.stranded_hosts.empty());
  EXPECT_TRUE(p.safe);
  EXPECT_EQ(p.summary,
            "safe: leaf2 keeps 3 of 4 uplinks to the spine tier; no host loses all its paths");
}

TEST(DrainPlan, SingleNicHostAccessLinkStrandsTheHost) {
  Topology t =
      generateLeafSpine({.spines = 2, .leaves = 2, .hosts_per_leaf = 2, .nics_per_host = 1});
  Router router(t);
  NodeId host = *t.findNode("host1");
  DirLinkId access = t.outLinks(host)[0];
  DrainPlan p = planDrain(router, Topology::linkOf(access));
  EXPECT_EQ(p.lower, host);
  EXPECT_EQ(p.width_before, 1u);
  EXPECT_EQ(p.width_after, 0u);
  EXPECT_FALSE(p.safe);
  ASSERT_FALSE(p.stranded_hosts.empty());
  // host1 is cut off; the others only lose host1.
  ASSERT_EQ(p.stranded_hosts.size(), 1u);
  EXPECT_EQ(p.stranded_hosts[0], host);
  EXPECT_NE(p.summary.find("unsafe: host1 keeps 0 of 1 links to the leaf tier"), std::string::npos)
      << p.summary;
  EXPECT_NE(p.summary.find("host1 would be cut off from the rest of the fabric"),
            std::string::npos);
}

TEST(DrainPlan, DualNicHostKeepsItsOtherLink) {
  Topology t =
      generateLeafSpine({.spines = 2, .leaves = 2, .hosts_per_leaf = 2, .nics_per_host = 2});
  Router router(t);
  NodeId host = *t.findNode("host1");
  DrainPlan p = planDrain(router, Topology::linkOf(t.outLinks(host)[0]));
  EXPECT_EQ(p.width_before, 2u);
  EXPECT_EQ(p.width_after, 1u);
  EXPECT_TRUE(p.safe) << p.summary;
}

TEST(DrainPlan, ParallelLinksCountEachAndLinksAlreadyDownAreLeftOut) {
  Topology t = generateLeafSpine({.spines = 4, .leaves = 3, .hosts_per_leaf = 1, .parallel = 2});
  Router router(t);
  DrainPlan p = planDrain(router, between(t, "leaf1", "spine1"));
  EXPECT_EQ(p.width_before, 8u);
  EXPECT_EQ(p.width_after, 7u);
  EXPECT_TRUE(p.safe);
  // With all but one uplink of leaf1 down, draining the last one cuts its hosts off.
  LinkId last = kNone;
  for (DirLinkId d : t.outLinks(*t.findNode("leaf1"))) {
    NodeId v = t.dirDstNode(d);
    if (t.node(v).role != Role::kSpine) continue;
    if (last == kNone) {
      last = Topology::linkOf(d);
    } else {
      router.setLinkDown(Topology::linkOf(d), true);
    }
  }
  DrainPlan q = planDrain(router, last);
  EXPECT_EQ(q.width_before, 1u);
  EXPECT_EQ(q.width_after, 0u);
  EXPECT_FALSE(q.safe);
  // Exactly leaf1's host is cut off.
  ASSERT_EQ(q.stranded_hosts.size(), 1u);
  EXPECT_EQ(t.node(q.stranded_hosts[0]).name, "host1");
  // A link already down: draining it changes nothing.
  LinkId down = kNone;
  for (LinkId l = 0; l < t.linkCount(); ++l) {
    if (router.isDown(l)) down = l;
  }
  DrainPlan r = planDrain(router, down);
  EXPECT_TRUE(r.already_down);
  EXPECT_TRUE(r.safe);
}

TEST(DrainPlan, FatTreeTiersAndCoreLinks) {
  Topology t = generateFatTree({.k = 4});
  Router router(t);
  // An aggregation-core link: the aggregation switch (role spine) keeps 1 of 2.
  LinkId l = kNone;
  for (LinkId i = 0; i < t.linkCount() && l == kNone; ++i) {
    auto ra = t.node(t.port(t.link(i).a).node).role, rb = t.node(t.port(t.link(i).b).node).role;
    if ((ra == Role::kCore) != (rb == Role::kCore)) l = i;
  }
  ASSERT_NE(l, kNone);
  DrainPlan p = planDrain(router, l);
  EXPECT_EQ(p.lower_tier, "spine");
  EXPECT_EQ(p.upper_tier, "core");
  EXPECT_EQ(p.width_before, 2u);
  EXPECT_EQ(p.width_after, 1u);
  EXPECT_TRUE(p.safe);
}

// Per host, the hosts it reaches (switches forward, hosts do not), walked
// from each host on its own: the reference the planner's shortcuts must
// agree with.
std::vector<size_t> bruteReach(const Topology& t, const std::set<LinkId>& down) {
  std::vector<size_t> reach(t.nodeCount(), 0);
  for (NodeId h = 0; h < t.nodeCount(); ++h) {
    if (!t.node(h).isHost()) continue;
    std::set<NodeId> seen{h}, hosts;
    std::vector<NodeId> stack{h};
    while (!stack.empty()) {
      NodeId u = stack.back();
      stack.pop_back();
      for (DirLinkId d : t.outLinks(u)) {
        NodeId v = t.dirDstNode(d);
        if (down.count(Topology::linkOf(d)) || !seen.insert(v).second) continue;
        if (t.node(v).isHost()) {
          hosts.insert(v);
        } else {
          stack.push_back(v);
        }
      }
    }
    reach[h] = hosts.size();
  }
  return reach;
}

TEST(DrainPlan, StrandedHostsMatchABruteForceCountOnEveryLink) {
  const std::vector<std::pair<std::string, Topology>> fabrics = {
      {"leaf-spine 1 NIC",
       generateLeafSpine({.spines = 2, .leaves = 3, .hosts_per_leaf = 2, .nics_per_host = 1})},
      {"leaf-spine 2 NICs, parallel",
       generateLeafSpine(
           {.spines = 2, .leaves = 3, .hosts_per_leaf = 2, .nics_per_host = 2, .parallel = 2})},
      {"fat-tree k=4", generateFatTree({.k = 4})},
      {"rail",
       generateRail(
           {.sus = 2, .hosts_per_su = 2, .rails = 2, .spines = 2, .leaf_uplinks = 2, .cores = 2})},
  };
  std::mt19937_64 rng(11);
  size_t stranding = 0;
  for (const auto& [name, t] : fabrics) {
    for (int round = 0; round < 6; ++round) {
      // Round 0 with every link up, then up to a fifth of the links down.
      Router router(t);
      std::set<LinkId> down;
      std::uniform_int_distribution<LinkId> any(0, t.linkCount() - 1);
      for (size_t i = 0; round > 0 && i < t.linkCount() * round / 30; ++i) down.insert(any(rng));
      for (LinkId l : down) router.setLinkDown(l, true);
      const std::vector<size_t> before = bruteReach(t, down);
      for (LinkId l = 0; l < t.linkCount(); ++l) {
        std::set<LinkId> more = down;
        more.insert(l);
        const std::vector<size_t> after = bruteReach(t, more);
        size_t best = 0;
        std::vector<NodeId> lost;
        for (NodeId h = 0; h < t.nodeCount(); ++h) {
          if (!t.node(h).isHost()) continue;
          best = std::max(best, after[h]);
          if (after[h] < before[h]) lost.push_back(h);
        }
        std::vector<NodeId> stranded;
        for (NodeId h : lost) {
          if (after[h] < best) stranded.push_back(h);
        }
        if (stranded.empty()) stranded = lost;
        const DrainPlan p = planDrain(router, l);
        SCOPED_TRACE(name + ", round " + std::to_string(round) + ": " + p.summary);
        if (p.already_down) {
          EXPECT_TRUE(p.stranded_hosts.empty());
          continue;
        }
        EXPECT_EQ(p.stranded_hosts, stranded);
        EXPECT_EQ(p.safe, p.width_after >= 1 && lost.empty());
        stranding += stranded.empty() ? 0 : 1;
      }
    }
  }
  EXPECT_GT(stranding, 0u);  // the count saw partitions, not only safe drains
}

}  // namespace
}  // namespace netdiag::topology
