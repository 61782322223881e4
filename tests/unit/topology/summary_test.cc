#include "topology/summary.h"

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "topology/generators.h"

namespace netdiag::topology {
namespace {

const TierSummary* tier(const Summary& s, std::string_view role) {
  for (const auto& t : s.tiers)
    if (t.role == role) return &t;
  return nullptr;
}

std::vector<std::string> tierRoles(const Summary& s) {
  std::vector<std::string> out;
  for (const auto& t : s.tiers) out.push_back(t.role);
  return out;
}

class Hand {
 public:
  NodeId node(const std::string& name, const std::string& role_word) {
    Node n;
    n.name = name;
    n.role = roleFromName(role_word);
    n.role_name = role_word;
    return t.addNode(std::move(n));
  }
  void link(NodeId a, const std::string& pa, NodeId b, const std::string& pb, double gbps = 0) {
    t.addLink(t.addPort(a, pa), t.addPort(b, pb), gbps);
  }
  Topology t;
};

TEST(SummaryLeafSpine, KnownNumbers) {
  LeafSpineParams p;
  p.spines = 4;
  p.leaves = 6;
  p.hosts_per_leaf = 8;
  p.nics_per_host = 1;
  p.parallel = 1;
  p.host_speed_gbps = 400;
  p.fabric_speed_gbps = 400;
  Topology t = generateLeafSpine(p);
  Summary s = summarize(t);
  EXPECT_EQ(s.name, t.name);
  EXPECT_EQ(s.nodes, 4u + 6u + 48u);
  EXPECT_EQ(s.links, 48u + 24u);
  EXPECT_EQ(s.ports, 2u * (48u + 24u));
  EXPECT_EQ(s.hosts, 48u);
  EXPECT_EQ(s.host_ports, 48u);
  ASSERT_EQ(tierRoles(s), (std::vector<std::string>{"host", "leaf", "spine"}));

  const TierSummary& host = s.tiers[0];
  EXPECT_EQ(host.level, 0);
  EXPECT_EQ(host.nodes, 48u);
  EXPECT_EQ(host.down_links, 0u);
  EXPECT_EQ(host.up_links, 48u);
  EXPECT_EQ(host.peer_links, 0u);
  EXPECT_DOUBLE_EQ(host.up_gbps, 48 * 400.0);
  EXPECT_DOUBLE_EQ(host.oversubscription(), 0);

  const TierSummary& leaf = s.tiers[1];
  EXPECT_EQ(leaf.level, 1);
  EXPECT_EQ(leaf.nodes, 6u);
  EXPECT_EQ(leaf.down_links, 48u);
  EXPECT_EQ(leaf.up_links, 24u);
  EXPECT_EQ(leaf.peer_links, 0u);
  EXPECT_DOUBLE_EQ(leaf.down_gbps, 48 * 400.0);
  EXPECT_DOUBLE_EQ(leaf.up_gbps, 24 * 400.0);
  EXPECT_EQ(leaf.links_without_speed, 0u);
  EXPECT_DOUBLE_EQ(leaf.oversubscription(), 2.0);

  const TierSummary& spine = s.tiers[2];
  EXPECT_EQ(spine.level, 2);
  EXPECT_EQ(spine.nodes, 4u);
  EXPECT_EQ(spine.down_links, 24u);
  EXPECT_EQ(spine.up_links, 0u);
  EXPECT_DOUBLE_EQ(spine.oversubscription(), 0);
}

TEST(SummaryLeafSpine, SpeedsWeighOversubscription) {
  LeafSpineParams p;
  p.spines = 2;
  p.leaves = 2;
  p.hosts_per_leaf = 8;
  p.nics_per_host = 2;
  p.parallel = 2;
  p.host_speed_gbps = 100;
  p.fabric_speed_gbps = 400;
  Summary s = summarize(generateLeafSpine(p));
  const TierSummary* leaf = tier(s, "leaf");
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(leaf->down_links, 2u * 16u);
  EXPECT_EQ(leaf->up_links, 2u * 4u);
  // 16 x 100G down, 4 x 400G up per leaf: 1:1 by capacity (4:1 by count).
  EXPECT_DOUBLE_EQ(leaf->oversubscription(), 1.0);
  EXPECT_EQ(s.host_ports, 32u);
  EXPECT_EQ(s.hosts, 16u);
}

TEST(SummaryFatTree, K4) {
  FatTreeParams p;
  p.k = 4;
  Summary s = summarize(generateFatTree(p));
  EXPECT_EQ(s.nodes, 4u + 8u + 8u + 16u);
  EXPECT_EQ(s.hosts, 16u);
  EXPECT_EQ(s.links, 16u + 16u + 16u);
  ASSERT_EQ(tierRoles(s), (std::vector<std::string>{"host", "leaf", "spine", "core"}));
  const TierSummary& edge = s.tiers[1];
  EXPECT_EQ(edge.level, 1);
  EXPECT_EQ(edge.nodes, 8u);
  EXPECT_EQ(edge.down_links, 16u);
  EXPECT_EQ(edge.up_links, 16u);
  EXPECT_DOUBLE_EQ(edge.oversubscription(), 1.0);
  const TierSummary& agg = s.tiers[2];
  EXPECT_EQ(agg.level, 2);
  EXPECT_EQ(agg.nodes, 8u);
  EXPECT_EQ(agg.down_links, 16u);
  EXPECT_EQ(agg.up_links, 16u);
  EXPECT_DOUBLE_EQ(agg.oversubscription(), 1.0);
  const TierSummary& core = s.tiers[3];
  EXPECT_EQ(core.level, 3);
  EXPECT_EQ(core.nodes, 4u);
  EXPECT_EQ(core.down_links, 16u);
  EXPECT_EQ(core.up_links, 0u);
  EXPECT_EQ(core.peer_links, 0u);
  EXPECT_DOUBLE_EQ(core.oversubscription(), 0);
}

TEST(SummaryHand, NoSpeedsUsesLinkCounts) {
  Hand h;
  NodeId s1 = h.node("s1", "spine");
  NodeId l1 = h.node("l1", "leaf");
  NodeId l2 = h.node("l2", "leaf");
  for (int i = 0; i < 3; ++i) {
    NodeId host = h.node("h" + std::to_string(i), "host");
    h.link(host, "eth0", l1, "swp" + std::to_string(i + 1));
  }
  NodeId h9 = h.node("h9", "host");
  h.link(h9, "eth0", l2, "swp1");
  h.link(l1, "swp49", s1, "swp1");
  h.link(l2, "swp49", s1, "swp2");
  h.t.finalize();
  Summary s = summarize(h.t);
  const TierSummary* leaf = tier(s, "leaf");
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(leaf->down_links, 4u);
  EXPECT_EQ(leaf->up_links, 2u);
  EXPECT_EQ(leaf->links_without_speed, 6u);
  EXPECT_DOUBLE_EQ(leaf->down_gbps, 0);
  EXPECT_DOUBLE_EQ(leaf->oversubscription(), 2.0);
}

TEST(SummaryHand, PartlyUnknownSpeedsUseLinkCounts) {
  Hand h;
  NodeId s1 = h.node("s1", "spine");
  NodeId l1 = h.node("l1", "leaf");
  NodeId a = h.node("a", "host");
  NodeId b = h.node("b", "host");
  h.link(a, "eth0", l1, "swp1", 100);
  h.link(b, "eth0", l1, "swp2");  // unknown speed
  h.link(l1, "swp49", s1, "swp1", 400);
  h.t.finalize();
  Summary s = summarize(h.t);
  const TierSummary* leaf = tier(s, "leaf");
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(leaf->links_without_speed, 1u);
  EXPECT_DOUBLE_EQ(leaf->oversubscription(), 2.0);  // 2 down / 1 up, not 100/400
}

TEST(SummaryHand, UnknownRoleWordsAreTiersOrderedByLevel) {
  Hand h;
  NodeId border = h.node("border1", "border");
  NodeId spine = h.node("spine1", "spine");
  NodeId rr = h.node("rr1", "aggregator");  // level 2 like the spine
  NodeId leaf = h.node("leaf1", "leaf");
  NodeId host = h.node("host1", "host");
  h.link(host, "eth0", leaf, "swp1", 100);
  h.link(leaf, "swp49", spine, "swp1", 100);
  h.link(leaf, "swp50", rr, "swp1", 100);
  h.link(spine, "swp9", border, "swp1", 100);
  h.link(spine, "swp10", rr, "swp2", 100);  // a peer link within level 2
  h.t.finalize();
  Summary s = summarize(h.t);
  // Level first, then role name: aggregator < spine at level 2.
  ASSERT_EQ(tierRoles(s),
            (std::vector<std::string>{"host", "leaf", "aggregator", "spine", "border"}));
  EXPECT_EQ(s.tiers[2].level, 2);
  EXPECT_EQ(s.tiers[3].level, 2);
  EXPECT_EQ(s.tiers[4].level, 3);
  const TierSummary* b = tier(s, "border");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->nodes, 1u);
  EXPECT_EQ(b->down_links, 1u);
  EXPECT_EQ(b->up_links, 0u);
  const TierSummary* sp = tier(s, "spine");
  ASSERT_NE(sp, nullptr);
  EXPECT_EQ(sp->down_links, 1u);
  EXPECT_EQ(sp->up_links, 1u);
  EXPECT_EQ(sp->peer_links, 1u);
  EXPECT_DOUBLE_EQ(sp->oversubscription(), 1.0);
  const TierSummary* ag = tier(s, "aggregator");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->peer_links, 1u);
  EXPECT_EQ(ag->up_links, 0u);
  EXPECT_DOUBLE_EQ(ag->oversubscription(), 0);
}

TEST(SummaryHand, EmptyTopology) {
  Topology t;
  t.name = "empty";
  t.finalize();
  Summary s = summarize(t);
  EXPECT_EQ(s.name, "empty");
  EXPECT_EQ(s.nodes, 0u);
  EXPECT_EQ(s.links, 0u);
  EXPECT_EQ(s.hosts, 0u);
  EXPECT_TRUE(s.tiers.empty());
}

TEST(SummaryTier, OversubscriptionEdgeCases) {
  TierSummary t;
  EXPECT_DOUBLE_EQ(t.oversubscription(), 0);  // no uplinks
  t.down_links = 4;
  t.up_links = 2;
  t.down_gbps = 400;
  t.up_gbps = 800;
  EXPECT_DOUBLE_EQ(t.oversubscription(), 0.5);
  t.links_without_speed = 1;
  EXPECT_DOUBLE_EQ(t.oversubscription(), 2.0);
}

}  // namespace
}  // namespace netdiag::topology
