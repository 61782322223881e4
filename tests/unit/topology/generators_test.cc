#include "topology/generators.h"

#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include <gtest/gtest.h>

namespace netdiag::topology {
namespace {

size_t countRole(const Topology& t, Role role) {
  size_t n = 0;
  for (const Node& node : t.nodes()) n += node.role == role ? 1 : 0;
  return n;
}

// Links whose two ends have the given roles, in either order.
size_t countLinks(const Topology& t, Role x, Role y) {
  size_t n = 0;
  for (const Link& l : t.links()) {
    Role a = t.node(t.port(l.a).node).role;
    Role b = t.node(t.port(l.b).node).role;
    n += (a == x && b == y) || (a == y && b == x) ? 1 : 0;
  }
  return n;
}

uint32_t parseAddr(const std::string& s) {
  uint32_t v = 0;
  uint32_t octet = 0;
  int dots = 0;
  for (char c : s) {
    if (c == '.') {
      v = (v << 8) | octet;
      octet = 0;
      ++dots;
    } else {
      octet = octet * 10 + static_cast<uint32_t>(c - '0');
    }
  }
  EXPECT_EQ(dots, 3) << s;
  return (v << 8) | octet;
}

// Invariants every generated fabric keeps, whatever its shape.
void expectWellFormed(const Topology& t, bool addresses) {
  for (const Node& n : t.nodes()) EXPECT_TRUE(isValidNodeName(n.name)) << n.name;
  for (PortId p = 0; p < t.portCount(); ++p) {
    const Port& port = t.port(p);
    EXPECT_TRUE(isValidPortName(port.name)) << port.name;
    // Every port, host NICs included, is on exactly one link.
    ASSERT_NE(port.link, kNone) << t.portRef(p);
    const Link& l = t.link(port.link);
    EXPECT_TRUE(l.a == p || l.b == p) << t.portRef(p);
    EXPECT_EQ(t.findPort(t.portRef(p)), p);
  }
  for (NodeId n = 0; n < t.nodeCount(); ++n) {
    const Node& node = t.node(n);
    EXPECT_EQ(t.findNode(node.name), n);
    // Ports are eth0.. on hosts and swp1.. on switches, created in number order.
    auto ports = t.portsOf(n);
    EXPECT_EQ(ports.size(), t.outLinks(n).size()) << node.name;
    for (size_t i = 0; i < ports.size(); ++i) {
      std::string want = node.isHost() ? "eth" + std::to_string(i) : "swp" + std::to_string(i + 1);
      EXPECT_EQ(t.port(ports[i]).name, want) << node.name;
    }
  }
  std::unordered_set<std::string> seen;
  int phase = 0;  // 0 access, 1 switch-switch: access links come first
  for (LinkId id = 0; id < t.linkCount(); ++id) {
    const Link& l = t.link(id);
    const Node& a = t.node(t.port(l.a).node);
    const Node& b = t.node(t.port(l.b).node);
    EXPECT_GT(l.speed_gbps, 0);
    EXPECT_NE(t.port(l.a).node, t.port(l.b).node);
    EXPECT_FALSE(b.isHost()) << "host must be side a";
    if (a.isHost()) {
      EXPECT_EQ(phase, 0) << "access link after fabric links: " << id;
    } else {
      phase = 1;
    }
    if (!addresses) {
      EXPECT_TRUE(t.port(l.a).addr.empty());
      EXPECT_TRUE(t.port(l.b).addr.empty());
      continue;
    }
    uint32_t x = parseAddr(t.port(l.a).addr);
    uint32_t y = parseAddr(t.port(l.b).addr);
    EXPECT_EQ(x % 2, 0u) << t.port(l.a).addr;
    EXPECT_EQ(y, x + 1) << t.port(l.b).addr;
    // 10.128.0.0/9 for access links, 10.0.0.0/9 for fabric links.
    EXPECT_EQ(x >> 23, a.isHost() ? 0x15u : 0x14u) << t.port(l.a).addr;
    EXPECT_TRUE(seen.insert(t.port(l.a).addr).second) << t.port(l.a).addr;
    EXPECT_TRUE(seen.insert(t.port(l.b).addr).second) << t.port(l.b).addr;
    if (a.isHost() && t.port(l.a).name == "eth0") {
      EXPECT_EQ(a.addr, t.port(l.a).addr);
    }
  }
  for (const Node& n : t.nodes()) {
    if (!n.isHost() || !addresses) {
      EXPECT_TRUE(n.addr.empty()) << n.name;
    }
  }
}

size_t portCount(const Topology& t, std::string_view name) {
  return t.portsOf(*t.findNode(name)).size();
}

NodeId peerOf(const Topology& t, std::string_view ref) { return t.peerNode(*t.findPort(ref)); }

// Parallel links between each pair of nodes.
std::map<std::pair<NodeId, NodeId>, int> pairCounts(const Topology& t) {
  std::map<std::pair<NodeId, NodeId>, int> m;
  for (const Link& l : t.links()) ++m[{t.port(l.a).node, t.port(l.b).node}];
  return m;
}

TEST(GeneratorLeafSpine, DefaultsAreValid) {
  EXPECT_TRUE(validate(LeafSpineParams{}).empty());
  EXPECT_TRUE(validate(FatTreeParams{}).empty());
  EXPECT_TRUE(validate(RailParams{}).empty());
}

TEST(GeneratorLeafSpine, CountsDegreesAndParallelLinks) {
  LeafSpineParams p;
  p.spines = 3;
  p.leaves = 4;
  p.hosts_per_leaf = 5;
  p.nics_per_host = 2;
  p.parallel = 2;
  p.host_speed_gbps = 200;
  p.fabric_speed_gbps = 800;
  ASSERT_TRUE(validate(p).empty());
  Topology t = generateLeafSpine(p);
  expectWellFormed(t, true);
  EXPECT_EQ(countRole(t, Role::kSpine), 3u);
  EXPECT_EQ(countRole(t, Role::kLeaf), 4u);
  EXPECT_EQ(countRole(t, Role::kHost), 20u);
  EXPECT_EQ(t.nodeCount(), 27u);
  EXPECT_EQ(countLinks(t, Role::kHost, Role::kLeaf), 40u);
  EXPECT_EQ(countLinks(t, Role::kLeaf, Role::kSpine), 24u);
  EXPECT_EQ(t.linkCount(), 64u);
  for (const Node& n : t.nodes()) {
    EXPECT_FALSE(n.pod.has_value());
    EXPECT_EQ(n.role_name, roleName(n.role));
  }
  EXPECT_EQ(portCount(t, "leaf1"), 10u + 6u);
  EXPECT_EQ(portCount(t, "spine3"), 8u);
  EXPECT_EQ(portCount(t, "host20"), 2u);
  for (const auto& [pair, n] : pairCounts(t)) {
    if (!t.node(pair.first).isHost()) {
      EXPECT_EQ(n, 2);
    }
  }
  for (const Link& l : t.links()) {
    bool access = t.node(t.port(l.a).node).isHost();
    EXPECT_EQ(l.speed_gbps, access ? 200 : 800);
  }
  // Down-ports first: host h of a leaf on swp(2h-1), swp(2h); uplinks after.
  EXPECT_EQ(peerOf(t, "host1:eth0"), *t.findNode("leaf1"));
  EXPECT_EQ(t.peerNode(*t.findPort("leaf1:swp2")), *t.findNode("host1"));
  EXPECT_EQ(peerOf(t, "host6:eth1"), *t.findNode("leaf2"));
  EXPECT_EQ(t.portRef(t.dirDstPort(t.egressOf(*t.findPort("host6:eth1")))), "leaf2:swp2");
  EXPECT_EQ(peerOf(t, "leaf1:swp11"), *t.findNode("spine1"));
  EXPECT_EQ(peerOf(t, "leaf1:swp13"), *t.findNode("spine2"));
  EXPECT_EQ(t.portRef(t.dirDstPort(t.egressOf(*t.findPort("leaf2:swp11")))), "spine1:swp3");
  // Ids are stable by order: link 0 is host1's eth0, the first fabric link follows access.
  EXPECT_EQ(t.portRef(t.link(0).a), "host1:eth0");
  EXPECT_EQ(t.portRef(t.link(40).a), "leaf1:swp11");
  EXPECT_EQ(t.port(t.link(0).a).addr, "10.128.0.0");
  EXPECT_EQ(t.port(t.link(0).b).addr, "10.128.0.1");
  EXPECT_EQ(t.port(t.link(40).a).addr, "10.0.0.0");
  EXPECT_EQ(t.node(*t.findNode("host1")).addr, "10.128.0.0");
  EXPECT_EQ(t.node(*t.findNode("host2")).addr, "10.128.0.4");
}

TEST(GeneratorLeafSpine, NoAddresses) {
  LeafSpineParams p;
  p.addresses = false;
  Topology t = generateLeafSpine(p);
  expectWellFormed(t, false);
  EXPECT_EQ(t.linkCount(), 64u + 32u);
}

TEST(GeneratorLeafSpine, DirLinkNamesRoundTrip) {
  Topology t = generateLeafSpine(LeafSpineParams{});
  for (LinkId l : {0u, 1u, 63u, 64u, 95u}) {
    for (DirLinkId d : {2 * l, 2 * l + 1}) {
      std::string name = t.dirLinkName(d);
      EXPECT_EQ(t.findDirLink(name), d) << name;
    }
  }
  EXPECT_EQ(t.dirLinkName(0), "host1:eth0->leaf1:swp1");
  EXPECT_EQ(t.dirLinkName(2 * 64 + 1), "spine1:swp1->leaf1:swp9");
}

TEST(GeneratorLeafSpine, ValidateRejectsBadParams) {
  for (int LeafSpineParams::*field :
       {&LeafSpineParams::spines, &LeafSpineParams::leaves, &LeafSpineParams::hosts_per_leaf,
        &LeafSpineParams::nics_per_host, &LeafSpineParams::parallel}) {
    for (int bad : {0, -1}) {
      LeafSpineParams p;
      p.*field = bad;
      auto problems = validate(p);
      ASSERT_EQ(problems.size(), 1u);
      EXPECT_NE(problems[0].find("must be >= 1, got " + std::to_string(bad)), std::string::npos)
          << problems[0];
    }
  }
  LeafSpineParams p;
  p.host_speed_gbps = 0;
  EXPECT_EQ(validate(p).size(), 1u);
  p = {};
  p.fabric_speed_gbps = -400;
  EXPECT_EQ(validate(p).size(), 1u);
  // Sizes whose ids or /31s would overflow are refused, not wrapped.
  p = {};
  p.leaves = 1 << 20;
  p.hosts_per_leaf = 1 << 20;
  p.nics_per_host = 1 << 20;
  EXPECT_EQ(validate(p).size(), 1u);
  p = {};
  p.leaves = 1 << 12;
  p.hosts_per_leaf = 1 << 9;
  p.nics_per_host = 2;  // exactly 2^22 access links
  p.spines = 1;
  EXPECT_TRUE(validate(p).empty());
  p.nics_per_host = 3;
  EXPECT_EQ(validate(p).size(), 1u);
  p = {};
  p.spines = 2'000'000'000;
  p.leaves = 2'000'000'000;
  p.parallel = 2'000'000'000;
  p.hosts_per_leaf = 1;
  EXPECT_FALSE(validate(p).empty());
}

TEST(GeneratorFatTree, CountsForSeveralK) {
  for (int k : {2, 4, 8}) {
    SCOPED_TRACE(k);
    FatTreeParams p;
    p.k = k;
    ASSERT_TRUE(validate(p).empty());
    Topology t = generateFatTree(p);
    expectWellFormed(t, true);
    const size_t half = static_cast<size_t>(k / 2);
    const size_t k3 = static_cast<size_t>(k * k * k);
    EXPECT_EQ(countRole(t, Role::kHost), k3 / 4);
    EXPECT_EQ(countRole(t, Role::kLeaf) + countRole(t, Role::kSpine) + countRole(t, Role::kCore),
              5u * static_cast<size_t>(k * k) / 4);
    EXPECT_EQ(countRole(t, Role::kLeaf), static_cast<size_t>(k) * half);
    EXPECT_EQ(countRole(t, Role::kSpine), static_cast<size_t>(k) * half);
    EXPECT_EQ(countRole(t, Role::kCore), half * half);
    EXPECT_EQ(t.linkCount(), k3 / 4 * 3);
    EXPECT_EQ(countLinks(t, Role::kHost, Role::kLeaf), k3 / 4);
    EXPECT_EQ(countLinks(t, Role::kLeaf, Role::kSpine), k3 / 4);
    EXPECT_EQ(countLinks(t, Role::kSpine, Role::kCore), k3 / 4);
    // Every switch has k ports, every host one; no parallel links.
    for (NodeId n = 0; n < t.nodeCount(); ++n) {
      const Node& node = t.node(n);
      EXPECT_EQ(t.portsOf(n).size(), node.isHost() ? 1u : static_cast<size_t>(k)) << node.name;
      EXPECT_EQ(node.pod.has_value(), node.role != Role::kCore) << node.name;
      if (node.pod) {
        EXPECT_GE(*node.pod, 1);
        EXPECT_LE(*node.pod, k);
      }
    }
    for (const auto& [pair, n] : pairCounts(t)) EXPECT_EQ(n, 1);
    // Links stay inside a pod below the core.
    for (const Link& l : t.links()) {
      const Node& a = t.node(t.port(l.a).node);
      const Node& b = t.node(t.port(l.b).node);
      EXPECT_EQ(l.speed_gbps, 400);
      if (b.role != Role::kCore) {
        EXPECT_EQ(a.pod, b.pod) << a.name << " " << b.name;
      }
    }
  }
}

TEST(GeneratorFatTree, WiringOfK4) {
  FatTreeParams p;
  p.k = 4;
  Topology t = generateFatTree(p);
  EXPECT_EQ(t.node(*t.findNode("host3-2-1")).pod, 3);
  EXPECT_EQ(t.node(*t.findNode("edge3-2")).role_name, "leaf");
  EXPECT_EQ(t.node(*t.findNode("agg3-2")).role_name, "spine");
  EXPECT_EQ(t.node(*t.findNode("core4")).role_name, "core");
  EXPECT_EQ(t.dirLinkName(0), "host1-1-1:eth0->edge1-1:swp1");
  EXPECT_EQ(peerOf(t, "host3-2-2:eth0"), *t.findNode("edge3-2"));
  EXPECT_EQ(peerOf(t, "edge3-2:swp3"), *t.findNode("agg3-1"));
  EXPECT_EQ(peerOf(t, "edge3-2:swp4"), *t.findNode("agg3-2"));
  // Agg j (1-based) reaches cores (j-1)*k/2+1 .. j*k/2 on core port <pod>.
  EXPECT_EQ(t.portRef(t.dirDstPort(t.egressOf(*t.findPort("agg3-1:swp3")))), "core1:swp3");
  EXPECT_EQ(t.portRef(t.dirDstPort(t.egressOf(*t.findPort("agg3-1:swp4")))), "core2:swp3");
  EXPECT_EQ(t.portRef(t.dirDstPort(t.egressOf(*t.findPort("agg4-2:swp3")))), "core3:swp4");
  EXPECT_EQ(t.portRef(t.dirDstPort(t.egressOf(*t.findPort("agg4-2:swp4")))), "core4:swp4");
  for (LinkId l : {0u, 15u, 16u, 31u, 32u, 47u}) {
    std::string name = t.dirLinkName(2 * l + 1);
    EXPECT_EQ(t.findDirLink(name), 2 * l + 1) << name;
  }
}

TEST(GeneratorFatTree, ValidateRejectsBadK) {
  for (int k : {3, 1, 0, -2, 7}) {
    FatTreeParams p;
    p.k = k;
    auto problems = validate(p);
    ASSERT_EQ(problems.size(), 1u) << k;
    EXPECT_EQ(problems[0], "k must be even and >= 2, got " + std::to_string(k));
  }
  FatTreeParams p;
  p.k = 202;  // k^3/2 fabric links: the largest k within a /9 of /31s
  EXPECT_TRUE(validate(p).empty());
  p.k = 204;
  EXPECT_EQ(validate(p).size(), 1u);
  p.k = 4096;
  EXPECT_EQ(validate(p).size(), 1u);
  p.k = 1 << 30;
  EXPECT_EQ(validate(p).size(), 1u);
  p = {};
  p.speed_gbps = 0;
  EXPECT_EQ(validate(p).size(), 1u);
}

TEST(GeneratorRail, FlatSpineLayer) {
  RailParams p;
  p.sus = 3;
  p.hosts_per_su = 4;
  p.rails = 4;
  p.spines = 2;
  p.leaf_uplinks = 6;
  ASSERT_TRUE(validate(p).empty());
  Topology t = generateRail(p);
  expectWellFormed(t, true);
  EXPECT_EQ(countRole(t, Role::kHost), 12u);
  EXPECT_EQ(countRole(t, Role::kLeaf), 12u);
  EXPECT_EQ(countRole(t, Role::kSpine), 2u);
  EXPECT_EQ(countRole(t, Role::kCore), 0u);
  EXPECT_EQ(countLinks(t, Role::kHost, Role::kLeaf), 48u);
  EXPECT_EQ(countLinks(t, Role::kLeaf, Role::kSpine), 72u);
  EXPECT_EQ(t.linkCount(), 120u);
  EXPECT_EQ(portCount(t, "su2-rail3"), 4u + 6u);
  EXPECT_EQ(portCount(t, "spine2"), 12u * 3u);
  EXPECT_EQ(portCount(t, "su3-host4"), 4u);
  for (const auto& [pair, n] : pairCounts(t)) {
    EXPECT_EQ(n, t.node(pair.first).isHost() ? 1 : 3);
  }
  // Every leaf reaches every spine.
  for (NodeId n = 0; n < t.nodeCount(); ++n) {
    if (t.node(n).role != Role::kLeaf) continue;
    std::set<NodeId> up;
    for (DirLinkId d : t.outLinks(n)) {
      if (t.node(t.dirDstNode(d)).role == Role::kSpine) up.insert(t.dirDstNode(d));
    }
    EXPECT_EQ(up.size(), 2u) << t.node(n).name;
  }
}

TEST(GeneratorRail, NicLandsOnItsRailLeaf) {
  RailParams p;
  p.sus = 3;
  p.hosts_per_su = 5;
  p.rails = 8;
  p.spines = 4;
  p.leaf_uplinks = 8;
  p.cores = 2;
  Topology t = generateRail(p);
  for (NodeId n = 0; n < t.nodeCount(); ++n) {
    const Node& host = t.node(n);
    if (!host.isHost()) continue;
    ASSERT_TRUE(host.pod.has_value());
    auto ports = t.portsOf(n);
    ASSERT_EQ(ports.size(), 8u);
    for (size_t i = 0; i < ports.size(); ++i) {
      const Node& leaf = t.node(t.peerNode(ports[i]));
      EXPECT_EQ(leaf.name, "su" + std::to_string(*host.pod) + "-rail" + std::to_string(i));
      EXPECT_EQ(leaf.pod, host.pod);
      EXPECT_EQ(leaf.role, Role::kLeaf);
    }
  }
  EXPECT_EQ(t.dirLinkName(2 * 7), "su1-host1:eth7->su1-rail7:swp1");
  EXPECT_EQ(t.dirLinkName(2 * 8), "su1-host2:eth0->su1-rail0:swp2");
}

TEST(GeneratorRail, RailPlanesAndCores) {
  RailParams p;
  p.sus = 3;
  p.hosts_per_su = 4;
  p.rails = 2;
  p.spines = 2;
  p.leaf_uplinks = 4;
  p.cores = 3;
  p.speed_gbps = 800;
  ASSERT_TRUE(validate(p).empty());
  Topology t = generateRail(p);
  expectWellFormed(t, true);
  EXPECT_EQ(countRole(t, Role::kHost), 12u);
  EXPECT_EQ(countRole(t, Role::kLeaf), 6u);
  EXPECT_EQ(countRole(t, Role::kSpine), 4u);
  EXPECT_EQ(countRole(t, Role::kCore), 3u);
  EXPECT_EQ(countLinks(t, Role::kHost, Role::kLeaf), 24u);
  EXPECT_EQ(countLinks(t, Role::kLeaf, Role::kSpine), 24u);
  EXPECT_EQ(countLinks(t, Role::kSpine, Role::kCore), 12u);
  EXPECT_EQ(t.linkCount(), 60u);
  for (const Link& l : t.links()) EXPECT_EQ(l.speed_gbps, 800);
  // A spine: one port pair per SU's rail leaf (2 parallel) plus one per core.
  EXPECT_EQ(portCount(t, "rail1-spine2"), 3u * 2u + 3u);
  EXPECT_EQ(portCount(t, "core3"), 4u);
  EXPECT_EQ(portCount(t, "su2-rail1"), 4u + 4u);
  // Rail-r leaves reach only plane-r spines.
  for (const Link& l : t.links()) {
    const Node& a = t.node(t.port(l.a).node);
    const Node& b = t.node(t.port(l.b).node);
    if (a.role == Role::kLeaf && b.role == Role::kSpine) {
      std::string rail = a.name.substr(a.name.find("-rail") + 1);
      EXPECT_EQ(b.name.rfind(rail + "-spine", 0), 0u) << a.name << " " << b.name;
    }
    if (a.role == Role::kLeaf) {
      EXPECT_TRUE(b.role == Role::kSpine);
    }
    if (a.role == Role::kSpine) {
      EXPECT_TRUE(b.role == Role::kCore);
    }
  }
  for (const auto& [pair, n] : pairCounts(t)) {
    EXPECT_EQ(n, t.node(pair.first).role == Role::kLeaf ? 2 : 1);
  }
  EXPECT_EQ(t.portRef(t.dirDstPort(t.egressOf(*t.findPort("su2-rail1:swp7")))),
            "rail1-spine2:swp3");
  EXPECT_EQ(t.portRef(t.dirDstPort(t.egressOf(*t.findPort("rail1-spine2:swp8")))), "core2:swp4");
  for (LinkId l : {0u, 23u, 24u, 47u, 48u, 59u}) {
    for (DirLinkId d : {2 * l, 2 * l + 1}) {
      EXPECT_EQ(t.findDirLink(t.dirLinkName(d)), d) << t.dirLinkName(d);
    }
  }
}

TEST(GeneratorRail, ValidateRejectsBadParams) {
  for (int RailParams::*field : {&RailParams::sus, &RailParams::hosts_per_su, &RailParams::rails,
                                 &RailParams::spines, &RailParams::leaf_uplinks}) {
    RailParams p;
    p.*field = 0;
    EXPECT_FALSE(validate(p).empty());
  }
  RailParams p;
  p.cores = -1;
  EXPECT_EQ(validate(p), std::vector<std::string>{"cores must be >= 0, got -1"});
  p = {};
  p.spines = 8;
  p.leaf_uplinks = 30;
  auto problems = validate(p);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("multiple"), std::string::npos) << problems[0];
  p.cores = 4;  // still per plane
  EXPECT_EQ(validate(p).size(), 1u);
  p = {};
  p.sus = 100'000;
  p.hosts_per_su = 1'000;
  EXPECT_EQ(validate(p).size(), 2u);  // access and fabric ranges both overflow
  p = {};
  p.speed_gbps = std::numeric_limits<double>::infinity();
  EXPECT_EQ(validate(p).size(), 1u);
}

TEST(GeneratorRail, SuperPodScaleCounts) {
  RailParams p;
  p.sus = 400;
  p.hosts_per_su = 32;
  p.rails = 8;
  p.spines = 32;
  p.leaf_uplinks = 32;
  p.cores = 16;
  ASSERT_TRUE(validate(p).empty());
  Topology t = generateRail(p);
  EXPECT_EQ(countRole(t, Role::kHost), 12'800u);
  EXPECT_EQ(countRole(t, Role::kLeaf), 3'200u);
  EXPECT_EQ(countRole(t, Role::kSpine), 256u);
  EXPECT_EQ(countRole(t, Role::kCore), 16u);
  EXPECT_EQ(t.linkCount(), 102'400u + 102'400u + 4'096u);
  EXPECT_EQ(t.portCount(), 2 * t.linkCount());
  EXPECT_EQ(portCount(t, "rail7-spine32"), 400u + 16u);
  EXPECT_EQ(portCount(t, "core16"), 256u);
  // The last links still fit their /9s.
  EXPECT_EQ(t.port(t.link(102'399).b).addr, "10.131.31.255");
  EXPECT_EQ(t.port(t.link(static_cast<LinkId>(t.linkCount() - 1)).b).addr, "10.3.63.255");
}

}  // namespace
}  // namespace netdiag::topology
