#include "topology/model.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace netdiag::topology {
namespace {

Node makeNode(const std::string& name, Role role) {
  Node n;
  n.name = name;
  n.role = role;
  n.role_name = std::string(roleName(role));
  return n;
}

// h1:eth0 - leaf1:swp1, leaf1:swp49 - spine1:swp1, plus an unlinked leaf1:swp2
// and a node (spine2) with no ports.
Topology small() {
  Topology t;
  NodeId spine1 = t.addNode(makeNode("spine1", Role::kSpine));
  NodeId leaf1 = t.addNode(makeNode("leaf1", Role::kLeaf));
  NodeId h1 = t.addNode(makeNode("h1", Role::kHost));
  t.addNode(makeNode("spine2", Role::kSpine));
  PortId h1e0 = t.addPort(h1, "eth0");
  PortId l1s1 = t.addPort(leaf1, "swp1");
  t.addLink(h1e0, l1s1, 400, 7);
  t.addPort(leaf1, "swp2");
  PortId l1s49 = t.addPort(leaf1, "swp49");
  PortId s1s1 = t.addPort(spine1, "swp1");
  t.addLink(l1s49, s1s1, 100);
  t.finalize();
  return t;
}

TEST(ModelBuild, AddNodeAndPort) {
  Topology t;
  NodeId a = t.addNode(makeNode("a", Role::kLeaf));
  NodeId b = t.addNode(makeNode("b", Role::kSpine));
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, 1u);
  EXPECT_EQ(t.addNode(makeNode("a", Role::kHost)), kNone);
  EXPECT_EQ(t.nodeCount(), 2u);
  EXPECT_EQ(t.node(a).role, Role::kLeaf);  // the duplicate changed nothing

  PortId p = t.addPort(a, "swp1");
  PortId q = t.addPort(b, "swp1");  // same port name on another node is a new port
  EXPECT_NE(p, q);
  EXPECT_EQ(t.addPort(a, "swp1"), p);
  EXPECT_EQ(t.portCount(), 2u);
  EXPECT_EQ(t.port(p).node, a);
  EXPECT_EQ(t.port(p).name, "swp1");
  EXPECT_EQ(t.port(p).link, kNone);

  LinkId l = t.addLink(p, q, 400, 12);
  EXPECT_EQ(l, 0u);
  EXPECT_EQ(t.linkCount(), 1u);
  EXPECT_EQ(t.dirLinkCount(), 2u);
  EXPECT_EQ(t.link(l).a, p);
  EXPECT_EQ(t.link(l).b, q);
  EXPECT_DOUBLE_EQ(t.link(l).speed_gbps, 400);
  EXPECT_EQ(t.link(l).line, 12u);
  EXPECT_EQ(t.port(p).link, l);
  EXPECT_EQ(t.port(q).link, l);
  // Re-adding a linked port keeps its link.
  EXPECT_EQ(t.addPort(b, "swp1"), q);
  EXPECT_EQ(t.port(q).link, l);
}

TEST(ModelBuild, DefaultLinkSpeedUnknown) {
  Topology t;
  NodeId a = t.addNode(makeNode("a", Role::kLeaf));
  NodeId b = t.addNode(makeNode("b", Role::kLeaf));
  LinkId l = t.addLink(t.addPort(a, "p"), t.addPort(b, "p"));
  EXPECT_EQ(t.link(l).speed_gbps, 0);
  EXPECT_EQ(t.link(l).line, 0u);
}

TEST(ModelLookup, FindNodeAndPort) {
  Topology t = small();
  EXPECT_EQ(t.findNode("spine1"), 0u);
  EXPECT_EQ(t.findNode("h1"), 2u);
  EXPECT_EQ(t.findNode("spine2"), 3u);
  EXPECT_FALSE(t.findNode("nope"));
  EXPECT_FALSE(t.findNode(""));
  EXPECT_FALSE(t.findNode("Spine1"));
  EXPECT_FALSE(t.findNode("spine1:swp1"));

  auto p = t.findPort("leaf1:swp49");
  ASSERT_TRUE(p);
  EXPECT_EQ(t.portRef(*p), "leaf1:swp49");
  EXPECT_TRUE(t.findPort("leaf1:swp2"));  // known but unlinked
  EXPECT_FALSE(t.findPort("leaf1:swp3"));
  EXPECT_FALSE(t.findPort("leaf1"));
  EXPECT_FALSE(t.findPort("swp1"));
  EXPECT_FALSE(t.findPort(""));
  EXPECT_FALSE(t.findPort(":"));
  EXPECT_FALSE(t.findPort("leaf1:"));
  EXPECT_FALSE(t.findPort(":swp1"));
  EXPECT_FALSE(t.findPort("leaf1:swp1:x"));
  EXPECT_FALSE(t.findPort("leaf1::swp1"));
  EXPECT_FALSE(t.findPort(" leaf1:swp1"));
  EXPECT_FALSE(t.findPort("leaf1:swp1 "));
  EXPECT_FALSE(t.findPort("spine2:swp1"));
  // Every port round-trips through its ref.
  for (PortId id = 0; id < t.portCount(); ++id) EXPECT_EQ(t.findPort(t.portRef(id)), id);
}

TEST(ModelLookup, DirLinks) {
  Topology t = small();
  PortId h1 = t.findPort("h1:eth0").value();
  PortId l1 = t.findPort("leaf1:swp1").value();
  PortId l49 = t.findPort("leaf1:swp49").value();
  PortId s1 = t.findPort("spine1:swp1").value();
  PortId loose = t.findPort("leaf1:swp2").value();

  // Link 0 is h1:eth0 (a) - leaf1:swp1 (b); 2*l is a->b.
  EXPECT_EQ(t.findDirLink("h1:eth0->leaf1:swp1"), 0u);
  EXPECT_EQ(t.findDirLink("leaf1:swp1->h1:eth0"), 1u);
  EXPECT_EQ(t.findDirLink("leaf1:swp49->spine1:swp1"), 2u);
  EXPECT_EQ(t.findDirLink("spine1:swp1->leaf1:swp49"), 3u);
  for (DirLinkId d = 0; d < t.dirLinkCount(); ++d) {
    EXPECT_EQ(t.findDirLink(t.dirLinkName(d)), d);
    EXPECT_EQ(Topology::reverse(Topology::reverse(d)), d);
    EXPECT_EQ(Topology::linkOf(Topology::reverse(d)), Topology::linkOf(d));
    EXPECT_EQ(t.dirSrcPort(Topology::reverse(d)), t.dirDstPort(d));
    EXPECT_EQ(t.dirDstNode(Topology::reverse(d)), t.dirSrcNode(d));
  }
  EXPECT_EQ(t.dirLinkName(0), "h1:eth0->leaf1:swp1");
  EXPECT_EQ(t.dirLinkName(3), "spine1:swp1->leaf1:swp49");
  EXPECT_EQ(Topology::reverse(2), 3u);
  EXPECT_EQ(Topology::reverse(3), 2u);
  EXPECT_EQ(Topology::linkOf(3), 1u);

  // Wrong pairing: both ports exist and are linked, but not to each other.
  EXPECT_FALSE(t.findDirLink("h1:eth0->spine1:swp1"));
  EXPECT_FALSE(t.findDirLink("h1:eth0->leaf1:swp49"));
  EXPECT_FALSE(t.findDirLink("h1:eth0->h1:eth0"));
  // Unknown or unlinked ports.
  EXPECT_FALSE(t.findDirLink("h1:eth1->leaf1:swp1"));
  EXPECT_FALSE(t.findDirLink("leaf1:swp2->spine1:swp1"));
  EXPECT_FALSE(t.findDirLink("leaf1:swp1->leaf1:swp2"));
  // Malformed.
  EXPECT_FALSE(t.findDirLink(""));
  EXPECT_FALSE(t.findDirLink("->"));
  EXPECT_FALSE(t.findDirLink("h1:eth0"));
  EXPECT_FALSE(t.findDirLink("h1:eth0-leaf1:swp1"));
  EXPECT_FALSE(t.findDirLink("h1:eth0<-leaf1:swp1"));
  EXPECT_FALSE(t.findDirLink("h1:eth0->"));
  EXPECT_FALSE(t.findDirLink("->leaf1:swp1"));
  EXPECT_FALSE(t.findDirLink("h1:eth0 -> leaf1:swp1"));
  EXPECT_FALSE(t.findDirLink("h1:eth0->leaf1:swp1->h1:eth0"));
  EXPECT_FALSE(t.findDirLink("h1:eth0=>leaf1:swp1"));

  EXPECT_EQ(t.egressOf(h1), 0u);
  EXPECT_EQ(t.ingressOf(h1), 1u);
  EXPECT_EQ(t.egressOf(l1), 1u);
  EXPECT_EQ(t.ingressOf(l1), 0u);
  EXPECT_EQ(t.egressOf(l49), 2u);
  EXPECT_EQ(t.egressOf(s1), 3u);
  EXPECT_EQ(t.ingressOf(s1), 2u);
  EXPECT_EQ(t.egressOf(loose), kNone);
  EXPECT_EQ(t.ingressOf(loose), kNone);
  EXPECT_EQ(t.peerNode(loose), kNone);
  EXPECT_EQ(t.peerNode(h1), t.findNode("leaf1"));
  EXPECT_EQ(t.peerNode(l1), t.findNode("h1"));
  EXPECT_EQ(t.peerNode(l49), t.findNode("spine1"));
  EXPECT_EQ(t.peerNode(s1), t.findNode("leaf1"));
  EXPECT_EQ(t.dirSrcNode(0), t.findNode("h1"));
  EXPECT_EQ(t.dirDstNode(0), t.findNode("leaf1"));
}

// Names with '-' next to the arrow still split at the right "->".
TEST(ModelLookup, DirLinkWithDashes) {
  Topology t;
  NodeId a = t.addNode(makeNode("a-", Role::kLeaf));
  NodeId b = t.addNode(makeNode("-b", Role::kSpine));
  PortId pa = t.addPort(a, "p-");
  PortId pb = t.addPort(b, "-q");
  t.addLink(pa, pb);
  t.finalize();
  EXPECT_EQ(t.dirLinkName(0), "a-:p-->-b:-q");
  EXPECT_EQ(t.findDirLink("a-:p-->-b:-q"), 0u);
  EXPECT_EQ(t.findDirLink("-b:-q->a-:p-"), 1u);
}

TEST(ModelAdjacency, OutLinksAndPorts) {
  Topology t = small();
  NodeId spine1 = t.findNode("spine1").value();
  NodeId leaf1 = t.findNode("leaf1").value();
  NodeId h1 = t.findNode("h1").value();
  NodeId spine2 = t.findNode("spine2").value();

  auto leaf_out = t.outLinks(leaf1);
  ASSERT_EQ(leaf_out.size(), 2u);
  EXPECT_EQ(leaf_out[0], 1u);  // leaf1:swp1->h1:eth0 (link 0, side b)
  EXPECT_EQ(leaf_out[1], 2u);  // leaf1:swp49->spine1:swp1 (link 1, side a)
  for (NodeId n = 0; n < t.nodeCount(); ++n) {
    for (DirLinkId d : t.outLinks(n)) EXPECT_EQ(t.dirSrcNode(d), n);
  }
  ASSERT_EQ(t.outLinks(h1).size(), 1u);
  EXPECT_EQ(t.outLinks(h1)[0], 0u);
  ASSERT_EQ(t.outLinks(spine1).size(), 1u);
  EXPECT_EQ(t.outLinks(spine1)[0], 3u);
  EXPECT_TRUE(t.outLinks(spine2).empty());

  auto ports = t.portsOf(leaf1);
  ASSERT_EQ(ports.size(), 3u);  // declaration order, the unlinked one too
  EXPECT_EQ(t.portRef(ports[0]), "leaf1:swp1");
  EXPECT_EQ(t.portRef(ports[1]), "leaf1:swp2");
  EXPECT_EQ(t.portRef(ports[2]), "leaf1:swp49");
  ASSERT_EQ(t.portsOf(h1).size(), 1u);
  EXPECT_EQ(t.portRef(t.portsOf(h1)[0]), "h1:eth0");
  EXPECT_TRUE(t.portsOf(spine2).empty());
  size_t total = 0;
  for (NodeId n = 0; n < t.nodeCount(); ++n) total += t.portsOf(n).size();
  EXPECT_EQ(total, t.portCount());
}

// Ports and links added out of node order still index correctly.
TEST(ModelAdjacency, InterleavedAdds) {
  Topology t;
  std::vector<NodeId> n;
  for (int i = 0; i < 4; ++i)
    n.push_back(t.addNode(makeNode("n" + std::to_string(i), Role::kLeaf)));
  // A ring n0-n1-n2-n3-n0 with ports created in mixed order.
  LinkId l0 = t.addLink(t.addPort(n[3], "a"), t.addPort(n[0], "b"));
  LinkId l1 = t.addLink(t.addPort(n[1], "a"), t.addPort(n[2], "b"));
  LinkId l2 = t.addLink(t.addPort(n[0], "a"), t.addPort(n[1], "b"));
  LinkId l3 = t.addLink(t.addPort(n[2], "a"), t.addPort(n[3], "b"));
  t.finalize();
  auto out0 = t.outLinks(n[0]);
  ASSERT_EQ(out0.size(), 2u);
  EXPECT_EQ(out0[0], 2 * l0 + 1);
  EXPECT_EQ(out0[1], 2 * l2);
  auto out3 = t.outLinks(n[3]);
  ASSERT_EQ(out3.size(), 2u);
  EXPECT_EQ(out3[0], 2 * l0);
  EXPECT_EQ(out3[1], 2 * l3 + 1);
  EXPECT_EQ(t.outLinks(n[1])[0], 2 * l1);
  auto ports0 = t.portsOf(n[0]);
  ASSERT_EQ(ports0.size(), 2u);
  EXPECT_EQ(t.port(ports0[0]).name, "b");
  EXPECT_EQ(t.port(ports0[1]).name, "a");
}

TEST(ModelRoles, RoundTrip) {
  EXPECT_EQ(roleFromName("host"), Role::kHost);
  EXPECT_EQ(roleFromName("leaf"), Role::kLeaf);
  EXPECT_EQ(roleFromName("spine"), Role::kSpine);
  EXPECT_EQ(roleFromName("superspine"), Role::kSuperspine);
  EXPECT_EQ(roleFromName("core"), Role::kCore);
  EXPECT_EQ(roleFromName("border"), Role::kOther);
  EXPECT_EQ(roleFromName(""), Role::kOther);
  EXPECT_EQ(roleFromName("Leaf"), Role::kOther);
  EXPECT_EQ(roleFromName("leaf "), Role::kOther);
  EXPECT_EQ(roleFromName("other"), Role::kOther);
  for (Role r : {Role::kHost, Role::kLeaf, Role::kSpine, Role::kSuperspine, Role::kCore}) {
    EXPECT_EQ(roleFromName(roleName(r)), r);
  }
  EXPECT_EQ(roleName(Role::kHost), "host");
  EXPECT_EQ(roleName(Role::kSuperspine), "superspine");
  EXPECT_EQ(roleName(Role::kOther), "other");
  Node n;
  n.role = Role::kHost;
  EXPECT_TRUE(n.isHost());
  n.role = Role::kLeaf;
  EXPECT_FALSE(n.isHost());
}

TEST(ModelNames, NodeNames) {
  EXPECT_TRUE(isValidNodeName("leaf1"));
  EXPECT_TRUE(isValidNodeName("a"));
  EXPECT_TRUE(isValidNodeName("A.b_c-D9"));
  EXPECT_TRUE(isValidNodeName("-"));
  EXPECT_TRUE(isValidNodeName("..."));
  EXPECT_FALSE(isValidNodeName(""));
  EXPECT_FALSE(isValidNodeName("a/b"));
  EXPECT_FALSE(isValidNodeName("a:b"));
  EXPECT_FALSE(isValidNodeName("a b"));
  EXPECT_FALSE(isValidNodeName(" a"));
  EXPECT_FALSE(isValidNodeName("a\t"));
  EXPECT_FALSE(isValidNodeName("a\n"));
  EXPECT_FALSE(isValidNodeName("leaf\xc3\xa9"));  // é
  EXPECT_FALSE(isValidNodeName("\xe2\x80\x8b"));  // zero-width space
  EXPECT_FALSE(isValidNodeName(std::string("a\0b", 3)));
  EXPECT_FALSE(isValidNodeName("a>b"));
  EXPECT_FALSE(isValidNodeName("a+b"));
  EXPECT_FALSE(isValidNodeName("a@b"));
  EXPECT_FALSE(isValidNodeName("a\\b"));
}

TEST(ModelNames, PortNames) {
  EXPECT_TRUE(isValidPortName("swp1"));
  EXPECT_TRUE(isValidPortName("Ethernet1/1"));
  EXPECT_TRUE(isValidPortName("eth1/2/3"));
  EXPECT_TRUE(isValidPortName("/"));
  EXPECT_TRUE(isValidPortName("a.b_c-d"));
  EXPECT_FALSE(isValidPortName(""));
  EXPECT_FALSE(isValidPortName("a:b"));
  EXPECT_FALSE(isValidPortName("a b"));
  EXPECT_FALSE(isValidPortName("eth\xc3\xa9"));
  EXPECT_FALSE(isValidPortName("a\\b"));
  EXPECT_FALSE(isValidPortName("a>b"));
}

TEST(ModelNames, SplitPortRef) {
  auto ok = splitPortRef("leaf1:swp1");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->first, "leaf1");
  EXPECT_EQ(ok->second, "swp1");
  auto slash = splitPortRef("sw-1.a:Ethernet1/1");
  ASSERT_TRUE(slash);
  EXPECT_EQ(slash->first, "sw-1.a");
  EXPECT_EQ(slash->second, "Ethernet1/1");
  auto single = splitPortRef("a:b");
  ASSERT_TRUE(single);
  EXPECT_EQ(single->first, "a");
  EXPECT_EQ(single->second, "b");

  EXPECT_FALSE(splitPortRef(""));
  EXPECT_FALSE(splitPortRef(":"));
  EXPECT_FALSE(splitPortRef("leaf1"));
  EXPECT_FALSE(splitPortRef("leaf1:"));
  EXPECT_FALSE(splitPortRef(":swp1"));
  EXPECT_FALSE(splitPortRef("a:b:c"));
  EXPECT_FALSE(splitPortRef("a::b"));
  EXPECT_FALSE(splitPortRef("::"));
  EXPECT_FALSE(splitPortRef("rack/leaf1:swp1"));  // slash only in the port
  EXPECT_FALSE(splitPortRef("leaf 1:swp1"));
  EXPECT_FALSE(splitPortRef("leaf1:swp 1"));
  EXPECT_FALSE(splitPortRef(" leaf1:swp1"));
  EXPECT_FALSE(splitPortRef("leaf1:swp1 "));
  EXPECT_FALSE(splitPortRef("l\xc3\xa9:swp1"));
  EXPECT_FALSE(splitPortRef("leaf1:sw\xc3\xa9"));
  EXPECT_FALSE(splitPortRef("h1:eth0->leaf1:swp1"));
}

}  // namespace
}  // namespace netdiag::topology
