#include "topology/port_index.h"

#include <string>
#include <unordered_set>

#include <gtest/gtest.h>

#include "topology/generators.h"

namespace netdiag::topology {
namespace {

Node makeNode(const std::string& name, Role role) {
  Node n;
  n.name = name;
  n.role = role;
  return n;
}

Topology small() {
  Topology t;
  NodeId l = t.addNode(makeNode("leaf1", Role::kLeaf));
  NodeId h = t.addNode(makeNode("h1", Role::kHost));
  t.addNode(makeNode("spine9", Role::kSpine));  // no ports
  PortId he = t.addPort(h, "eth0");
  PortId ls = t.addPort(l, "swp1");
  t.addPort(l, "swp2");  // unlinked
  t.addLink(ls, he);
  t.finalize();
  return t;
}

TEST(PortIndex, FindsEveryPortAsTopologyDoes) {
  Topology t = small();
  PortIndex idx(t);
  ASSERT_EQ(idx.size(), 3u);
  for (PortId p = 0; p < t.portCount(); ++p) {
    EXPECT_EQ(idx.ref(p), t.portRef(p));
    EXPECT_TRUE(idx.is(p, t.portRef(p)));
    EXPECT_FALSE(idx.is(p, t.portRef(p) + "x"));
    EXPECT_FALSE(idx.is(p, std::string_view(t.portRef(p)).substr(1)));
    EXPECT_EQ(idx.find(t.portRef(p)), p);
    EXPECT_EQ(idx.node(p), t.port(p).node);
    EXPECT_EQ(idx.egress(p), t.egressOf(p));
  }
  PortId he = *t.findPort("h1:eth0");
  PortId ls = *t.findPort("leaf1:swp1");
  EXPECT_EQ(idx.peer(he), ls);
  EXPECT_EQ(idx.peer(ls), he);
  EXPECT_EQ(idx.peer(*t.findPort("leaf1:swp2")), kNone);
  EXPECT_EQ(idx.egress(*t.findPort("leaf1:swp2")), kNone);
}

TEST(PortIndex, RejectsWhatIsNotAPortReference) {
  Topology t = small();
  PortIndex idx(t);
  for (std::string_view bad : {"", ":", "h1", "h1:", "h1:eth", "h1:eth00", "H1:eth0", "leaf1:swp1 ",
                               " leaf1:swp1", "leaf1:swp3", "spine9:swp1"}) {
    EXPECT_EQ(idx.find(bad), kNone) << bad;
  }
  std::string with_nul("h1:eth0\0", 8);
  EXPECT_EQ(idx.find(with_nul), kNone);
  EXPECT_EQ(idx.find(std::string_view("h1:eth0\0", 7)), *t.findPort("h1:eth0"));
}

TEST(PortIndex, LongReferencesAreComparedInFull) {
  // Past the 48 bytes an entry holds in place.
  Topology t;
  std::string long_name(60, 'n');
  NodeId a = t.addNode(makeNode(long_name, Role::kLeaf));
  NodeId b = t.addNode(makeNode(long_name + "b", Role::kLeaf));
  PortId pa = t.addPort(a, "swp1");
  PortId pb = t.addPort(b, "swp1");
  t.addLink(pa, pb);
  t.finalize();
  PortIndex idx(t);
  EXPECT_EQ(idx.find(long_name + ":swp1"), pa);
  EXPECT_EQ(idx.find(long_name + "b:swp1"), pb);
  EXPECT_EQ(idx.find(long_name + ":swp2"), kNone);
  EXPECT_TRUE(idx.is(pa, long_name + ":swp1"));
  EXPECT_FALSE(idx.is(pa, long_name + ":swp2"));
  EXPECT_EQ(idx.peer(pa), pb);
}

TEST(PortIndex, EmptyTopology) {
  Topology t;
  t.finalize();
  PortIndex idx(t);
  EXPECT_EQ(idx.size(), 0u);
  EXPECT_EQ(idx.find("a:b"), kNone);
  EXPECT_EQ(idx.find(""), kNone);
}

TEST(PortIndex, LargeFabricMatchesTopology) {
  RailParams p;
  p.sus = 4;
  Topology t = generateRail(p);
  PortIndex idx(t);
  ASSERT_EQ(idx.size(), t.portCount());
  for (PortId id = 0; id < t.portCount(); ++id) {
    std::string r = t.portRef(id);
    ASSERT_EQ(idx.find(r), id) << r;
    r.back() = r.back() == '9' ? '0' : static_cast<char>(r.back() + 1);
    ASSERT_EQ(idx.find(r), t.findPort(r).value_or(kNone)) << r;
    r += 'x';
    ASSERT_EQ(idx.find(r), kNone) << r;
    ASSERT_EQ(idx.peer(id), idx.egress(id) == kNone ? kNone : t.dirDstPort(idx.egress(id)));
  }
}

TEST(PortIndex, HashDependsOnEveryByteAndTheLength) {
  std::unordered_set<uint64_t> seen;
  std::string s;
  for (int len = 0; len < 40; ++len) {
    EXPECT_TRUE(seen.insert(PortIndex::hash(s)).second) << len;
    s += 'a';
  }
  std::string base = "rail7-spine8:swp135-and-more";
  for (size_t i = 0; i < base.size(); ++i) {
    std::string v = base;
    v[i] ^= 1;
    EXPECT_NE(PortIndex::hash(v), PortIndex::hash(base)) << i;
  }
}

}  // namespace
}  // namespace netdiag::topology
