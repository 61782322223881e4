#include "topology/ecmp.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "topology/generators.h"

namespace netdiag::topology {
namespace {

// Builds small fabrics by hand: nodes by name and role, links by port refs.
class Fab {
 public:
  NodeId node(const std::string& name, Role role) {
    Node n;
    n.name = name;
    n.role = role;
    n.role_name = std::string(roleName(role));
    NodeId id = topo_.addNode(std::move(n));
    EXPECT_NE(id, kNone) << name;
    return id;
  }
  NodeId host(const std::string& name) { return node(name, Role::kHost); }
  NodeId leaf(const std::string& name) { return node(name, Role::kLeaf); }
  NodeId spine(const std::string& name) { return node(name, Role::kSpine); }

  PortId port(std::string_view ref) {
    auto split = splitPortRef(ref);
    EXPECT_TRUE(split.has_value()) << ref;
    auto n = topo_.findNode(split->first);
    EXPECT_TRUE(n.has_value()) << ref;
    return topo_.addPort(*n, split->second);
  }
  LinkId link(std::string_view a, std::string_view b, double speed = 0) {
    PortId pa = port(a);
    PortId pb = port(b);
    return topo_.addLink(pa, pb, speed);
  }
  Topology done() {
    topo_.finalize();
    return std::move(topo_);
  }

 private:
  Topology topo_;
};

PortId P(const Topology& t, std::string_view ref) {
  auto p = t.findPort(ref);
  EXPECT_TRUE(p.has_value()) << ref;
  return p.value_or(0);
}

LinkId L(const Topology& t, std::string_view a, std::string_view b) {
  PortId pa = P(t, a);
  PortId pb = P(t, b);
  LinkId l = t.port(pa).link;
  EXPECT_NE(l, kNone) << a;
  EXPECT_EQ(t.port(pb).link, l) << a << " " << b;
  return l;
}

DirLinkId D(const Topology& t, std::string_view name) {
  auto d = t.findDirLink(name);
  EXPECT_TRUE(d.has_value()) << name;
  return d.value_or(kNone);
}

std::vector<std::vector<DirLinkId>> enumerate(const PathSet& set, size_t limit = 1000000) {
  std::vector<std::vector<DirLinkId>> out;
  auto c = set.cursor();
  std::vector<DirLinkId> path;
  while (out.size() < limit && c.next(path)) out.push_back(path);
  return out;
}

std::vector<std::string> refs(const Topology& t, const std::vector<PortId>& ports) {
  std::vector<std::string> out;
  for (PortId p : ports) out.push_back(t.portRef(p));
  return out;
}

std::map<DirLinkId, double> shareMap(const PathSet& set) {
  std::map<DirLinkId, double> m;
  for (auto [d, s] : set.linkShares()) {
    EXPECT_FALSE(m.count(d)) << "duplicate share for link " << d;
    m[d] += s;
  }
  return m;
}

// Checks every path is a chain from src to dst with hops() links, and paths are distinct.
void expectWellFormedPaths(const Topology& t, const PathSet& set, PortId src, PortId dst,
                           const std::vector<std::vector<DirLinkId>>& paths) {
  std::set<std::vector<DirLinkId>> distinct(paths.begin(), paths.end());
  EXPECT_EQ(distinct.size(), paths.size()) << "paths repeat";
  for (const auto& path : paths) {
    ASSERT_EQ(path.size(), set.hops());
    EXPECT_EQ(t.dirSrcPort(path.front()), src);
    EXPECT_EQ(t.dirDstPort(path.back()), dst);
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      EXPECT_EQ(t.dirDstNode(path[i]), t.dirSrcNode(path[i + 1])) << "not a chain at hop " << i;
      // Hosts never forward.
      EXPECT_FALSE(t.node(t.dirDstNode(path[i])).isHost());
    }
    auto ports = pathPorts(t, path);
    EXPECT_EQ(ports.size(), 2 * path.size());
    EXPECT_EQ(ports.front(), src);
    EXPECT_EQ(ports.back(), dst);
  }
}

// --- Independent oracle: BFS over up, non-host links, then an explicit DFS.

std::vector<int> oracleDist(const Topology& t, const Router& r, NodeId dst) {
  std::vector<int> dist(t.nodeCount(), -1);
  std::vector<NodeId> q{dst};
  dist[dst] = 0;
  for (size_t h = 0; h < q.size(); ++h) {
    NodeId u = q[h];
    for (LinkId l = 0; l < t.linkCount(); ++l) {
      if (r.isDown(l)) continue;
      NodeId a = t.port(t.link(l).a).node;
      NodeId b = t.port(t.link(l).b).node;
      NodeId v = a == u ? b : b == u ? a : kNone;
      if (v == kNone || t.node(v).isHost() || dist[v] >= 0) continue;
      dist[v] = dist[u] + 1;
      q.push_back(v);
    }
  }
  return dist;
}

std::vector<DirLinkId> oracleNextHops(const Topology& t, const Router& r,
                                      const std::vector<int>& dist, NodeId u) {
  std::vector<DirLinkId> hops;
  for (DirLinkId d = 0; d < t.dirLinkCount(); ++d) {
    if (t.dirSrcNode(d) != u || r.isDown(Topology::linkOf(d))) continue;
    NodeId v = t.dirDstNode(d);
    if (!t.node(v).isHost() && dist[v] >= 0 && dist[v] + 1 == dist[u]) hops.push_back(d);
  }
  return hops;
}

void oracleDfs(const Topology& t, const Router& r, const std::vector<int>& dist, NodeId u,
               NodeId dst, std::vector<DirLinkId>& cur, std::set<std::vector<DirLinkId>>& out) {
  if (u == dst) {
    out.insert(cur);
    return;
  }
  for (DirLinkId d : oracleNextHops(t, r, dist, u)) {
    cur.push_back(d);
    oracleDfs(t, r, dist, t.dirDstNode(d), dst, cur, out);
    cur.pop_back();
  }
}

// All switch-level shortest paths (between attached switches), wrapped with access links.
std::set<std::vector<DirLinkId>> oraclePaths(const Topology& t, const Router& r, PortId src,
                                             PortId dst) {
  std::set<std::vector<DirLinkId>> out;
  DirLinkId first = t.egressOf(src);
  DirLinkId last = t.ingressOf(dst);
  if (first == kNone || last == kNone || r.isDown(Topology::linkOf(first)) ||
      r.isDown(Topology::linkOf(last))) {
    return out;
  }
  NodeId s = t.dirDstNode(first);
  NodeId d = t.dirSrcNode(last);
  if (t.node(s).isHost() || t.node(d).isHost()) {
    if (t.dirDstPort(first) == dst) out.insert({first});
    return out;
  }
  auto dist = oracleDist(t, r, d);
  if (dist[s] < 0) return out;
  std::vector<DirLinkId> cur{first};
  std::set<std::vector<DirLinkId>> mid;
  oracleDfs(t, r, dist, s, d, cur, mid);
  for (auto p : mid) {
    p.push_back(last);
    out.insert(std::move(p));
  }
  return out;
}

// Probability of one path under even per-hop splitting (oracle next hops).
double perHopProbability(const Topology& t, const Router& r, const std::vector<int>& dist,
                         const std::vector<DirLinkId>& path) {
  double p = 1;
  for (size_t i = 1; i + 1 < path.size(); ++i) {
    NodeId u = t.dirSrcNode(path[i]);
    auto hops = oracleNextHops(t, r, dist, u);
    EXPECT_FALSE(hops.empty());
    p /= static_cast<double>(hops.size());
  }
  return p;
}

// A 2-leaf, 2-spine fabric with one host per leaf.
Topology twoByTwo() {
  Fab f;
  f.spine("spine1");
  f.spine("spine2");
  f.leaf("leaf1");
  f.leaf("leaf2");
  f.host("h1");
  f.host("h2");
  f.link("h1:eth0", "leaf1:swp1");
  f.link("h2:eth0", "leaf2:swp1");
  f.link("leaf1:swp49", "spine1:swp1");
  f.link("leaf1:swp50", "spine2:swp1");
  f.link("leaf2:swp49", "spine1:swp2");
  f.link("leaf2:swp50", "spine2:swp2");
  return f.done();
}

TEST(EcmpBasic, TwoLeavesTwoSpines) {
  Topology t = twoByTwo();
  Router r(t);
  PortId src = P(t, "h1:eth0");
  PortId dst = P(t, "h2:eth0");
  PathSet set = r.paths(src, dst);
  ASSERT_FALSE(set.empty()) << set.error();
  EXPECT_FALSE(set.badQuery());
  EXPECT_FALSE(set.saturated());
  EXPECT_EQ(set.count(), 2u);
  EXPECT_EQ(set.hops(), 4u);
  auto paths = enumerate(set);
  ASSERT_EQ(paths.size(), 2u);
  expectWellFormedPaths(t, set, src, dst, paths);
  std::set<std::vector<std::string>> got;
  for (const auto& p : paths) got.insert(refs(t, pathPorts(t, p)));
  std::set<std::vector<std::string>> want = {
      {"h1:eth0", "leaf1:swp1", "leaf1:swp49", "spine1:swp1", "spine1:swp2", "leaf2:swp49",
       "leaf2:swp1", "h2:eth0"},
      {"h1:eth0", "leaf1:swp1", "leaf1:swp50", "spine2:swp1", "spine2:swp2", "leaf2:swp50",
       "leaf2:swp1", "h2:eth0"},
  };
  EXPECT_EQ(got, want);
  // Deterministic order: next hops by link id, so spine1 first.
  EXPECT_EQ(refs(t, pathPorts(t, paths[0]))[3], "spine1:swp1");

  auto shares = shareMap(set);
  EXPECT_EQ(shares.size(), 6u);
  EXPECT_DOUBLE_EQ(shares[D(t, "h1:eth0->leaf1:swp1")], 1.0);
  EXPECT_DOUBLE_EQ(shares[D(t, "leaf1:swp49->spine1:swp1")], 0.5);
  EXPECT_DOUBLE_EQ(shares[D(t, "leaf1:swp50->spine2:swp1")], 0.5);
  EXPECT_DOUBLE_EQ(shares[D(t, "spine1:swp2->leaf2:swp49")], 0.5);
  EXPECT_DOUBLE_EQ(shares[D(t, "spine2:swp2->leaf2:swp50")], 0.5);
  EXPECT_DOUBLE_EQ(shares[D(t, "leaf2:swp1->h2:eth0")], 1.0);

  // The reverse direction uses the reverse links.
  PathSet back = r.paths(dst, src);
  EXPECT_EQ(back.count(), 2u);
  for (const auto& p : enumerate(back)) {
    EXPECT_EQ(t.portRef(t.dirSrcPort(p.front())), "h2:eth0");
    EXPECT_EQ(t.portRef(t.dirDstPort(p.back())), "h1:eth0");
  }
}

TEST(EcmpBasic, CursorEndsAndStaysEnded) {
  Topology t = twoByTwo();
  Router r(t);
  PathSet set = r.paths(P(t, "h1:eth0"), P(t, "h2:eth0"));
  auto c = set.cursor();
  std::vector<DirLinkId> path;
  EXPECT_TRUE(c.next(path));
  EXPECT_TRUE(c.next(path));
  EXPECT_FALSE(c.next(path));
  EXPECT_FALSE(c.next(path));
  // A fresh cursor starts over.
  EXPECT_EQ(enumerate(set).size(), 2u);
}

// leaf1 has two parallel links to each spine; leaf2 one link to each.
TEST(EcmpParallel, ParallelUplinksAreSeparatePaths) {
  Fab f;
  f.spine("spine1");
  f.spine("spine2");
  f.leaf("leaf1");
  f.leaf("leaf2");
  f.host("h1");
  f.host("h2");
  f.link("h1:eth0", "leaf1:swp1");
  f.link("h2:eth0", "leaf2:swp1");
  f.link("leaf1:swp49", "spine1:swp1");
  f.link("leaf1:swp50", "spine1:swp2");
  f.link("leaf1:swp51", "spine2:swp1");
  f.link("leaf1:swp52", "spine2:swp2");
  f.link("leaf2:swp49", "spine1:swp3");
  f.link("leaf2:swp50", "spine2:swp3");
  Topology t = f.done();
  Router r(t);
  PortId src = P(t, "h1:eth0");
  PortId dst = P(t, "h2:eth0");
  PathSet set = r.paths(src, dst);
  EXPECT_EQ(set.count(), 4u);
  EXPECT_EQ(set.hops(), 4u);
  auto paths = enumerate(set);
  EXPECT_EQ(paths.size(), 4u);
  expectWellFormedPaths(t, set, src, dst, paths);

  auto shares = shareMap(set);
  EXPECT_EQ(shares.size(), 8u);
  for (const char* up : {"leaf1:swp49->spine1:swp1", "leaf1:swp50->spine1:swp2",
                         "leaf1:swp51->spine2:swp1", "leaf1:swp52->spine2:swp2"}) {
    EXPECT_DOUBLE_EQ(shares[D(t, up)], 0.25) << up;
  }
  EXPECT_DOUBLE_EQ(shares[D(t, "spine1:swp3->leaf2:swp49")], 0.5);
  EXPECT_DOUBLE_EQ(shares[D(t, "spine2:swp3->leaf2:swp50")], 0.5);
  EXPECT_DOUBLE_EQ(shares[D(t, "h1:eth0->leaf1:swp1")], 1.0);
  EXPECT_DOUBLE_EQ(shares[D(t, "leaf2:swp1->h2:eth0")], 1.0);

  // Reverse: leaf2 splits 1/2 per spine, each spine splits over its 2 parallel downlinks.
  auto back = shareMap(r.paths(dst, src));
  EXPECT_DOUBLE_EQ(back[D(t, "leaf2:swp49->spine1:swp3")], 0.5);
  EXPECT_DOUBLE_EQ(back[D(t, "spine1:swp1->leaf1:swp49")], 0.25);
  EXPECT_DOUBLE_EQ(back[D(t, "spine2:swp2->leaf1:swp52")], 0.25);
}

TEST(EcmpParallel, SharesOnEachHopSumToOne) {
  LeafSpineParams p;
  p.spines = 2;
  p.leaves = 2;
  p.hosts_per_leaf = 1;
  p.parallel = 2;
  Topology t = generateLeafSpine(p);
  Router r(t);
  PathSet set = r.paths(P(t, "host1:eth0"), P(t, "host2:eth0"));
  // Parallel links on both sides: spines * parallel up * parallel down.
  EXPECT_EQ(set.count(), 8u);
  EXPECT_EQ(enumerate(set).size(), 8u);
  // Group shares by hop: the src node's role orders the hops of a leaf-spine path.
  std::map<std::string, double> per_hop;
  for (auto [d, s] : set.linkShares()) {
    std::string key = std::string(roleName(t.node(t.dirSrcNode(d)).role)) + "->" +
                      std::string(roleName(t.node(t.dirDstNode(d)).role));
    per_hop[key] += s;
    if (key == "leaf->spine" || key == "spine->leaf") {
      EXPECT_DOUBLE_EQ(s, 0.25) << t.dirLinkName(d);
    } else {
      EXPECT_DOUBLE_EQ(s, 1.0) << t.dirLinkName(d);
    }
  }
  ASSERT_EQ(per_hop.size(), 4u);
  for (auto [hop, sum] : per_hop) EXPECT_NEAR(sum, 1.0, 1e-12) << hop;
}

// leaf1 reaches leaf2 through spine1 (two downlinks to leaf2) and spine2 (one).
// Per-hop ECMP: each spine gets 1/2; spine1's downlinks 1/4 each, spine2's 1/2.
// Per-path splitting would give every one of the 3 paths 1/3 instead.
TEST(EcmpShares, PerHopNotPerPath) {
  Fab f;
  f.spine("spine1");
  f.spine("spine2");
  f.leaf("leaf1");
  f.leaf("leaf2");
  f.host("h1");
  f.host("h2");
  f.link("h1:eth0", "leaf1:swp1");
  f.link("h2:eth0", "leaf2:swp1");
  f.link("leaf1:swp49", "spine1:swp1");
  f.link("leaf1:swp50", "spine2:swp1");
  f.link("leaf2:swp49", "spine1:swp2");
  f.link("leaf2:swp50", "spine1:swp3");
  f.link("leaf2:swp51", "spine2:swp2");
  Topology t = f.done();
  Router r(t);
  PortId src = P(t, "h1:eth0");
  PortId dst = P(t, "h2:eth0");
  PathSet set = r.paths(src, dst);
  EXPECT_EQ(set.count(), 3u);
  auto shares = shareMap(set);
  EXPECT_DOUBLE_EQ(shares[D(t, "leaf1:swp49->spine1:swp1")], 0.5);
  EXPECT_DOUBLE_EQ(shares[D(t, "leaf1:swp50->spine2:swp1")], 0.5);
  EXPECT_DOUBLE_EQ(shares[D(t, "spine1:swp2->leaf2:swp49")], 0.25);
  EXPECT_DOUBLE_EQ(shares[D(t, "spine1:swp3->leaf2:swp50")], 0.25);
  EXPECT_DOUBLE_EQ(shares[D(t, "spine2:swp2->leaf2:swp51")], 0.5);

  auto dist = oracleDist(t, r, t.port(P(t, "leaf2:swp1")).node);
  double total = 0;
  std::vector<double> probs;
  for (const auto& path : enumerate(set)) {
    probs.push_back(perHopProbability(t, r, dist, path));
    total += probs.back();
  }
  std::sort(probs.begin(), probs.end());
  ASSERT_EQ(probs.size(), 3u);
  EXPECT_DOUBLE_EQ(probs[0], 0.25);
  EXPECT_DOUBLE_EQ(probs[1], 0.25);
  EXPECT_DOUBLE_EQ(probs[2], 0.5);
  EXPECT_DOUBLE_EQ(total, 1.0);
}

TEST(EcmpLinkDown, RemovesAndRestoresPaths) {
  Topology t = twoByTwo();
  Router r(t);
  PortId src = P(t, "h1:eth0");
  PortId dst = P(t, "h2:eth0");
  LinkId up1 = L(t, "leaf1:swp49", "spine1:swp1");
  EXPECT_EQ(r.paths(src, dst).count(), 2u);

  r.setLinkDown(up1, true);
  EXPECT_TRUE(r.isDown(up1));
  {
    PathSet set = r.paths(src, dst);
    EXPECT_EQ(set.count(), 1u);
    EXPECT_EQ(set.hops(), 4u);
    auto paths = enumerate(set);
    ASSERT_EQ(paths.size(), 1u);
    for (DirLinkId d : paths[0]) EXPECT_NE(Topology::linkOf(d), up1);
    auto shares = shareMap(set);
    EXPECT_FALSE(shares.count(2 * up1));
    EXPECT_FALSE(shares.count(2 * up1 + 1));
    EXPECT_DOUBLE_EQ(shares[D(t, "leaf1:swp50->spine2:swp1")], 1.0);
    // The other direction loses it too.
    PathSet back = r.paths(dst, src);
    EXPECT_EQ(back.count(), 1u);
    for (const auto& p : enumerate(back))
      for (DirLinkId d : p) EXPECT_NE(Topology::linkOf(d), up1);
  }
  // A spine downlink down: only spine2 remains.
  LinkId down1 = L(t, "leaf2:swp49", "spine1:swp2");
  r.setLinkDown(up1, false);
  r.setLinkDown(down1, true);
  {
    PathSet set = r.paths(src, dst);
    EXPECT_EQ(set.count(), 1u);
    for (const auto& p : enumerate(set))
      for (DirLinkId d : p) EXPECT_NE(Topology::linkOf(d), down1);
  }
  r.setLinkDown(down1, false);
  EXPECT_FALSE(r.isDown(down1));
  PathSet set = r.paths(src, dst);
  EXPECT_EQ(set.count(), 2u);
  EXPECT_EQ(enumerate(set).size(), 2u);

  // Both uplinks of leaf1 down: no path, not a bad query.
  r.setLinkDown(up1, true);
  r.setLinkDown(L(t, "leaf1:swp50", "spine2:swp1"), true);
  PathSet none = r.paths(src, dst);
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(none.badQuery());
  EXPECT_FALSE(none.error().empty());
  EXPECT_TRUE(enumerate(none).empty());
  EXPECT_TRUE(none.linkShares().empty());
}

TEST(EcmpLinkDown, AccessLinkDownGivesEmptyWithReason) {
  Topology t = twoByTwo();
  Router r(t);
  PortId src = P(t, "h1:eth0");
  PortId dst = P(t, "h2:eth0");
  LinkId access = L(t, "h1:eth0", "leaf1:swp1");
  r.setLinkDown(access, true);
  for (auto [a, b] : {std::pair{src, dst}, std::pair{dst, src}}) {
    PathSet set = r.paths(a, b);
    EXPECT_TRUE(set.empty());
    EXPECT_EQ(set.count(), 0u);
    EXPECT_FALSE(set.badQuery());
    EXPECT_NE(set.error().find("down"), std::string::npos) << set.error();
    EXPECT_TRUE(enumerate(set).empty());
    EXPECT_TRUE(set.linkShares().empty());
  }
  r.setLinkDown(access, false);
  EXPECT_EQ(r.paths(src, dst).count(), 2u);
}

// A detour: the shortest path grows when links go down, and all paths of the
// new length are used. fat-tree(4), pod 1: edge1-1 keeps only agg1-1 and
// edge1-2 only agg1-2, so traffic leaves the pod through core1/2 and comes
// back through core3/4 after crossing another pod's edge switch.
TEST(EcmpLinkDown, DetourLengthensPaths) {
  Topology t = generateFatTree({.k = 4, .speed_gbps = 400, .addresses = false});
  Router r(t);
  PortId src = P(t, "host1-1-1:eth0");
  PortId dst = P(t, "host1-2-1:eth0");
  EXPECT_EQ(r.paths(src, dst).count(), 2u);
  // edge1-1 swp4 -> agg1-2; edge1-2 swp3 -> agg1-1.
  r.setLinkDown(Topology::linkOf(D(t, "edge1-1:swp4->agg1-2:swp1")), true);
  r.setLinkDown(Topology::linkOf(D(t, "edge1-2:swp3->agg1-1:swp2")), true);
  PathSet set = r.paths(src, dst);
  EXPECT_EQ(set.hops(), 10u);
  // agg1-1 -> 2 cores -> 3 other pods' agg-1 -> 2 edges -> agg-2 -> 2 cores -> agg1-2.
  EXPECT_EQ(set.count(), 24u);
  auto paths = enumerate(set);
  EXPECT_EQ(paths.size(), 24u);
  expectWellFormedPaths(t, set, src, dst, paths);
  std::set<std::vector<DirLinkId>> got(paths.begin(), paths.end());
  EXPECT_EQ(got, oraclePaths(t, r, src, dst));
}

// sw1 and sw2 connect only through a host with two NICs: hosts never forward.
TEST(EcmpHosts, HostsNeverForward) {
  Fab f;
  f.leaf("sw1");
  f.leaf("sw2");
  f.host("h1");
  f.host("h2");
  f.host("relay");
  f.link("h1:eth0", "sw1:swp1");
  f.link("h2:eth0", "sw2:swp1");
  f.link("relay:eth0", "sw1:swp2");
  f.link("relay:eth1", "sw2:swp2");
  Topology t = f.done();
  Router r(t);
  PathSet set = r.paths(P(t, "h1:eth0"), P(t, "h2:eth0"));
  EXPECT_TRUE(set.empty());
  EXPECT_FALSE(set.badQuery());
  EXPECT_FALSE(set.error().empty());
  EXPECT_TRUE(enumerate(set).empty());
  auto dist = r.distancesTo(t.findNode("sw2").value());
  EXPECT_EQ((*dist)[t.findNode("sw1").value()], Router::kUnreachable);
  EXPECT_EQ((*dist)[t.findNode("relay").value()], Router::kUnreachable);
  EXPECT_EQ((*dist)[t.findNode("sw2").value()], 0);
  // The relay host's own ports still reach both hosts.
  EXPECT_EQ(r.paths(P(t, "relay:eth0"), P(t, "h1:eth0")).count(), 1u);
  EXPECT_EQ(r.paths(P(t, "relay:eth1"), P(t, "h2:eth0")).count(), 1u);
  EXPECT_TRUE(r.paths(P(t, "relay:eth0"), P(t, "h2:eth0")).empty());
}

// Adding a host shortcut must not shorten paths: sw1 - relay - sw3 is not a route.
TEST(EcmpHosts, HostShortcutIgnored) {
  Fab f;
  f.leaf("sw1");
  f.spine("sw2");
  f.leaf("sw3");
  f.host("h1");
  f.host("h3");
  f.host("relay");
  f.link("h1:eth0", "sw1:swp1");
  f.link("h3:eth0", "sw3:swp1");
  f.link("sw1:swp2", "sw2:swp1");
  f.link("sw2:swp2", "sw3:swp2");
  f.link("relay:eth0", "sw1:swp3");
  f.link("relay:eth1", "sw3:swp3");
  Topology t = f.done();
  Router r(t);
  PathSet set = r.paths(P(t, "h1:eth0"), P(t, "h3:eth0"));
  EXPECT_EQ(set.count(), 1u);
  EXPECT_EQ(set.hops(), 4u);
  auto paths = enumerate(set);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(refs(t, pathPorts(t, paths[0])),
            (std::vector<std::string>{"h1:eth0", "sw1:swp1", "sw1:swp2", "sw2:swp1", "sw2:swp2",
                                      "sw3:swp2", "sw3:swp1", "h3:eth0"}));
}

TEST(EcmpHosts, SameLeafAndDirectCable) {
  Fab f;
  f.leaf("leaf1");
  f.host("h1");
  f.host("h2");
  f.host("h3");
  f.host("h4");
  f.link("h1:eth0", "leaf1:swp1");
  f.link("h2:eth0", "leaf1:swp2");
  f.link("h3:eth0", "h4:eth0");
  f.link("h3:eth1", "leaf1:swp3");
  Topology t = f.done();
  Router r(t);

  PathSet same = r.paths(P(t, "h1:eth0"), P(t, "h2:eth0"));
  EXPECT_EQ(same.count(), 1u);
  EXPECT_EQ(same.hops(), 2u);
  auto paths = enumerate(same);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(refs(t, pathPorts(t, paths[0])),
            (std::vector<std::string>{"h1:eth0", "leaf1:swp1", "leaf1:swp2", "h2:eth0"}));
  auto shares = shareMap(same);
  EXPECT_EQ(shares.size(), 2u);
  for (auto [d, s] : shares) EXPECT_DOUBLE_EQ(s, 1.0);

  PathSet direct = r.paths(P(t, "h3:eth0"), P(t, "h4:eth0"));
  EXPECT_EQ(direct.count(), 1u);
  EXPECT_EQ(direct.hops(), 1u);
  paths = enumerate(direct);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(refs(t, pathPorts(t, paths[0])), (std::vector<std::string>{"h3:eth0", "h4:eth0"}));
  auto dshares = direct.linkShares();
  ASSERT_EQ(dshares.size(), 1u);
  EXPECT_EQ(dshares[0].first, D(t, "h3:eth0->h4:eth0"));
  EXPECT_DOUBLE_EQ(dshares[0].second, 1.0);

  // h4 hangs only off h3: nothing but h3:eth0 reaches it.
  PathSet via_host = r.paths(P(t, "h1:eth0"), P(t, "h4:eth0"));
  EXPECT_TRUE(via_host.empty());
  EXPECT_FALSE(via_host.badQuery());
  EXPECT_FALSE(via_host.error().empty());
  PathSet from_h4 = r.paths(P(t, "h4:eth0"), P(t, "h1:eth0"));
  EXPECT_TRUE(from_h4.empty());
  EXPECT_FALSE(from_h4.badQuery());
  // Two ports of one host through the leaf: h3:eth1 -> h1 is fine.
  EXPECT_EQ(r.paths(P(t, "h3:eth1"), P(t, "h1:eth0")).count(), 1u);

  // Direct cable down.
  r.setLinkDown(L(t, "h3:eth0", "h4:eth0"), true);
  PathSet cut = r.paths(P(t, "h3:eth0"), P(t, "h4:eth0"));
  EXPECT_TRUE(cut.empty());
  EXPECT_FALSE(cut.badQuery());
}

TEST(EcmpQuery, BadQueries) {
  Fab f;
  f.spine("spine1");
  f.leaf("leaf1");
  f.leaf("leaf2");
  f.host("h1");
  f.host("h2");
  f.link("h1:eth0", "leaf1:swp1");
  f.link("h2:eth0", "leaf2:swp1");
  f.link("leaf1:swp49", "spine1:swp1");
  f.link("leaf2:swp49", "spine1:swp2");
  f.port("h1:eth1");  // declared by no link
  Topology t = f.done();
  Router r(t);
  PortId h1 = P(t, "h1:eth0");
  PortId h2 = P(t, "h2:eth0");

  PathSet same = r.paths(h1, h1);
  EXPECT_TRUE(same.empty());
  EXPECT_TRUE(same.badQuery());
  EXPECT_FALSE(same.error().empty());
  EXPECT_TRUE(enumerate(same).empty());
  EXPECT_TRUE(same.linkShares().empty());

  for (const char* sw : {"leaf1:swp1", "leaf1:swp49", "spine1:swp1"}) {
    PathSet a = r.paths(P(t, sw), h2);
    EXPECT_TRUE(a.empty()) << sw;
    EXPECT_TRUE(a.badQuery()) << sw;
    EXPECT_NE(a.error().find(sw), std::string::npos) << a.error();
    PathSet b = r.paths(h1, P(t, sw));
    EXPECT_TRUE(b.empty()) << sw;
    EXPECT_TRUE(b.badQuery()) << sw;
  }

  // An unconnected host port: a valid query the fabric cannot route.
  PathSet loose = r.paths(P(t, "h1:eth1"), h2);
  EXPECT_TRUE(loose.empty());
  EXPECT_FALSE(loose.badQuery());
  EXPECT_FALSE(loose.error().empty());
  EXPECT_TRUE(r.paths(h2, P(t, "h1:eth1")).empty());

  EXPECT_EQ(r.paths(h1, h2).count(), 1u);
}

TEST(EcmpQuery, DisconnectedSwitchesAreEmptyNotBad) {
  Fab f;
  f.leaf("leaf1");
  f.leaf("leaf2");
  f.host("h1");
  f.host("h2");
  f.link("h1:eth0", "leaf1:swp1");
  f.link("h2:eth0", "leaf2:swp1");
  Topology t = f.done();
  Router r(t);
  PathSet set = r.paths(P(t, "h1:eth0"), P(t, "h2:eth0"));
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.count(), 0u);
  EXPECT_FALSE(set.badQuery());
  EXPECT_FALSE(set.saturated());
  EXPECT_FALSE(set.error().empty());
  EXPECT_TRUE(enumerate(set).empty());
  EXPECT_TRUE(set.linkShares().empty());
}

TEST(EcmpQuery, SmallCacheStillCorrect) {
  FatTreeParams p;
  p.k = 4;
  p.addresses = false;
  Topology t = generateFatTree(p);
  Router r(t, 1);
  Router big(t);
  for (int round = 0; round < 2; ++round) {
    for (PortId a : {P(t, "host1-1-1:eth0"), P(t, "host2-1-1:eth0"), P(t, "host1-2-2:eth0")}) {
      for (PortId b : {P(t, "host3-2-1:eth0"), P(t, "host1-1-2:eth0"), P(t, "host1-2-1:eth0")}) {
        EXPECT_EQ(r.paths(a, b).count(), big.paths(a, b).count());
      }
    }
  }
}

// --- Generated fabrics.

void expectCount(Router& r, const Topology& t, std::string_view a, std::string_view b,
                 uint64_t want, size_t hops, bool check_oracle = true) {
  PortId src = P(t, a);
  PortId dst = P(t, b);
  PathSet set = r.paths(src, dst);
  ASSERT_FALSE(set.empty()) << a << " -> " << b << ": " << set.error();
  EXPECT_EQ(set.count(), want) << a << " -> " << b;
  EXPECT_EQ(set.hops(), hops) << a << " -> " << b;
  auto paths = enumerate(set);
  EXPECT_EQ(paths.size(), set.count()) << a << " -> " << b;
  expectWellFormedPaths(t, set, src, dst, paths);
  if (check_oracle) {
    std::set<std::vector<DirLinkId>> got(paths.begin(), paths.end());
    EXPECT_EQ(got, oraclePaths(t, r, src, dst)) << a << " -> " << b;
  }
  double sum_first = 0;
  for (auto [d, s] : set.linkShares()) {
    if (t.dirSrcNode(d) == t.dirDstNode(paths[0][0])) sum_first += s;
  }
  if (hops > 2) {
    EXPECT_NEAR(sum_first, 1.0, 1e-12);
  }
}

TEST(EcmpGenerated, FatTree) {
  for (int k : {4, 8}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    FatTreeParams p;
    p.k = k;
    p.addresses = false;
    Topology t = generateFatTree(p);
    Router r(t);
    const uint64_t half = static_cast<uint64_t>(k / 2);
    bool oracle = k == 4;
    // Different pods: edge -> agg (k/2) -> core (k/2) -> agg -> edge.
    expectCount(r, t, "host1-1-1:eth0", "host2-1-1:eth0", half * half, 6, oracle);
    expectCount(r, t, "host1-2-1:eth0", "host" + std::to_string(k) + "-1-2:eth0", half * half, 6,
                oracle);
    // Same pod, different edges.
    expectCount(r, t, "host1-1-1:eth0", "host1-2-1:eth0", half, 4, oracle);
    // Same edge.
    expectCount(r, t, "host1-1-1:eth0", "host1-1-2:eth0", 1, 2, oracle);
  }
}

TEST(EcmpGenerated, FatTreeAllPairsK4) {
  FatTreeParams p;
  p.k = 4;
  p.addresses = false;
  Topology t = generateFatTree(p);
  Router r(t);
  std::vector<PortId> hosts;
  for (NodeId n = 0; n < t.nodeCount(); ++n)
    if (t.node(n).isHost()) hosts.push_back(t.portsOf(n)[0]);
  ASSERT_EQ(hosts.size(), 16u);
  for (PortId a : hosts) {
    for (PortId b : hosts) {
      if (a == b) continue;
      const Node& na = t.node(t.port(a).node);
      const Node& nb = t.node(t.port(b).node);
      NodeId ea = t.peerNode(a);
      NodeId eb = t.peerNode(b);
      uint64_t want = ea == eb ? 1 : na.pod == nb.pod ? 2 : 4;
      PathSet set = r.paths(a, b);
      EXPECT_EQ(set.count(), want) << t.portRef(a) << " -> " << t.portRef(b);
      EXPECT_EQ(enumerate(set).size(), want);
    }
  }
}

TEST(EcmpGenerated, LeafSpineParallel) {
  LeafSpineParams p;
  p.spines = 3;
  p.leaves = 3;
  p.hosts_per_leaf = 2;
  p.nics_per_host = 2;
  p.parallel = 2;
  p.addresses = false;
  Topology t = generateLeafSpine(p);
  Router r(t);
  // Each leaf-spine pair has `parallel` links on both the up and the down side.
  const uint64_t want = 3u * 2u * 2u;
  expectCount(r, t, "host1:eth0", "host3:eth0", want, 4);
  expectCount(r, t, "host1:eth1", "host6:eth0", want, 4);
  // Same leaf, including two NICs of one host.
  expectCount(r, t, "host1:eth0", "host2:eth1", 1, 2);
  expectCount(r, t, "host1:eth0", "host1:eth1", 1, 2);

  // Every uplink of leaf1 carries 1/(spines*parallel).
  PathSet set = r.paths(P(t, "host1:eth0"), P(t, "host3:eth0"));
  NodeId leaf1 = t.findNode("leaf1").value();
  size_t ups = 0;
  for (auto [d, s] : set.linkShares()) {
    if (t.dirSrcNode(d) == leaf1) {
      EXPECT_DOUBLE_EQ(s, 1.0 / 6.0);
      ++ups;
    }
  }
  EXPECT_EQ(ups, 6u);
}

TEST(EcmpGenerated, RailWithoutCores) {
  RailParams p;
  p.sus = 2;
  p.hosts_per_su = 2;
  p.rails = 2;
  p.spines = 2;
  p.leaf_uplinks = 4;  // 2 parallel links per leaf-spine pair
  p.cores = 0;
  p.addresses = false;
  Topology t = generateRail(p);
  Router r(t);
  // Every leaf connects to every spine with leaf_uplinks/spines links:
  // spines * per_spine (up) * per_spine (down).
  const uint64_t per_spine = 2;
  const uint64_t want = 2 * per_spine * per_spine;
  expectCount(r, t, "su1-host1:eth0", "su2-host1:eth0", want, 4);  // same rail, other SU
  expectCount(r, t, "su1-host1:eth0", "su1-host2:eth1", want, 4);  // other rail, same SU
  expectCount(r, t, "su1-host1:eth0", "su1-host1:eth1", want, 4);  // two NICs of one host
  expectCount(r, t, "su1-host1:eth0", "su2-host2:eth1", want, 4);
  expectCount(r, t, "su1-host1:eth1", "su1-host2:eth1", 1, 2);  // same rail leaf
}

TEST(EcmpGenerated, RailWithCores) {
  RailParams p;
  p.sus = 2;
  p.hosts_per_su = 2;
  p.rails = 2;
  p.spines = 2;  // per rail plane
  p.leaf_uplinks = 4;
  p.cores = 3;
  p.addresses = false;
  Topology t = generateRail(p);
  Router r(t);
  const uint64_t per_spine = 2;
  const uint64_t spines = 2;
  const uint64_t cores = 3;
  // Same rail: leaf -> plane spine -> leaf.
  expectCount(r, t, "su1-host1:eth0", "su2-host1:eth0", spines * per_spine * per_spine, 4);
  expectCount(r, t, "su1-host2:eth1", "su2-host1:eth1", spines * per_spine * per_spine, 4);
  // Cross rail: leaf -> plane-r spine -> core -> plane-r' spine -> leaf.
  const uint64_t cross = spines * per_spine * cores * spines * per_spine;
  expectCount(r, t, "su1-host1:eth0", "su1-host1:eth1", cross, 6);
  expectCount(r, t, "su1-host1:eth0", "su2-host2:eth1", cross, 6);
  expectCount(r, t, "su2-host2:eth1", "su1-host1:eth0", cross, 6);
  expectCount(r, t, "su1-host1:eth0", "su1-host2:eth0", 1, 2);
}

// --- Saturation.

// A chain of `n` diamonds between leaf "a" and leaf "z": each diamond is
// x_i -> {top_i, bot_i} -> x_{i+1} with `parallel` links on every edge, so each
// diamond multiplies the path count by 2 * parallel^2.
Topology diamondChain(int n, int parallel) {
  Fab f;
  f.host("h1");
  f.host("h2");
  std::vector<std::string> joints;
  for (int i = 0; i <= n; ++i) {
    joints.push_back("x" + std::to_string(i));
    f.leaf(joints.back());
  }
  for (int i = 0; i < n; ++i) {
    f.spine("top" + std::to_string(i));
    f.spine("bot" + std::to_string(i));
  }
  f.link("h1:eth0", "x0:host");
  f.link("h2:eth0", "x" + std::to_string(n) + ":host");
  for (int i = 0; i < n; ++i) {
    std::string x = "x" + std::to_string(i);
    std::string y = "x" + std::to_string(i + 1);
    for (const std::string& mid : {"top" + std::to_string(i), "bot" + std::to_string(i)}) {
      for (int k = 0; k < parallel; ++k) {
        std::string kk = std::to_string(k);
        f.link(x + ":r-" + mid + "-" + kk, mid + ":l" + kk);
        f.link(mid + ":r" + kk, y + ":l-" + mid + "-" + kk);
      }
    }
  }
  return f.done();
}

TEST(EcmpSaturation, SmallChainIsExact) {
  Topology t = diamondChain(3, 2);
  Router r(t);
  PathSet set = r.paths(P(t, "h1:eth0"), P(t, "h2:eth0"));
  EXPECT_EQ(set.count(), 512u);  // (2 * 2^2)^3
  EXPECT_FALSE(set.saturated());
  EXPECT_EQ(set.hops(), 2u + 6u);
  EXPECT_EQ(enumerate(set).size(), 512u);
}

TEST(EcmpSaturation, HugeCountSaturates) {
  // (2 * 4^2)^13 = 2^65 > 2^64.
  Topology t = diamondChain(13, 4);
  Router r(t);
  PathSet set = r.paths(P(t, "h1:eth0"), P(t, "h2:eth0"));
  EXPECT_FALSE(set.empty());
  EXPECT_TRUE(set.saturated());
  EXPECT_EQ(set.count(), UINT64_MAX);
  EXPECT_EQ(set.hops(), 2u + 26u);
  // The cursor still starts fine; only take a few.
  auto some = enumerate(set, 5);
  EXPECT_EQ(some.size(), 5u);
  expectWellFormedPaths(t, set, P(t, "h1:eth0"), P(t, "h2:eth0"), some);
  // Shares stay exact: each diamond splits evenly.
  for (auto [d, s] : set.linkShares()) {
    const std::string& from = t.node(t.dirSrcNode(d)).name;
    if (t.node(t.dirDstNode(d)).isHost() || t.node(t.dirSrcNode(d)).isHost()) {
      EXPECT_DOUBLE_EQ(s, 1.0) << t.dirLinkName(d);
    } else if (from[0] == 'x') {
      EXPECT_DOUBLE_EQ(s, 1.0 / 8.0) << t.dirLinkName(d);
    } else if (from[0] == 't' || from[0] == 'b') {
      EXPECT_DOUBLE_EQ(s, 1.0 / 8.0) << t.dirLinkName(d);
    }
  }
}

TEST(EcmpSaturation, Boundary) {
  // (2 * 1)^63 = 2^63: exact; (2 * 1)^64 = 2^64: saturates.
  {
    Topology t = diamondChain(63, 1);
    Router r(t);
    PathSet set = r.paths(P(t, "h1:eth0"), P(t, "h2:eth0"));
    EXPECT_FALSE(set.saturated());
    EXPECT_EQ(set.count(), uint64_t{1} << 63);
  }
  {
    Topology t = diamondChain(64, 1);
    Router r(t);
    PathSet set = r.paths(P(t, "h1:eth0"), P(t, "h2:eth0"));
    EXPECT_TRUE(set.saturated());
    EXPECT_EQ(set.count(), UINT64_MAX);
  }
}

// --- Property test against the oracle on random fabrics with links down.

TEST(EcmpProperty, RandomFabricsMatchOracle) {
  size_t checked_pairs = 0;
  size_t nonempty_pairs = 0;
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    Topology t;
    if (seed % 2 == 0) {
      LeafSpineParams p;
      p.spines = pick(1, 4);
      p.leaves = pick(2, 5);
      p.hosts_per_leaf = pick(1, 3);
      p.nics_per_host = pick(1, 2);
      p.parallel = pick(1, 3);
      p.addresses = false;
      t = generateLeafSpine(p);
    } else {
      FatTreeParams p;
      p.k = seed % 4 == 1 ? 4 : 6;
      p.addresses = false;
      t = generateFatTree(p);
    }
    Router r(t);
    // A few random links down, access links now and then.
    int downs = pick(0, 5);
    for (int i = 0; i < downs; ++i) {
      r.setLinkDown(static_cast<LinkId>(pick(0, static_cast<int>(t.linkCount()) - 1)), true);
    }
    std::vector<PortId> host_ports;
    for (PortId p = 0; p < t.portCount(); ++p)
      if (t.node(t.port(p).node).isHost()) host_ports.push_back(p);
    for (int q = 0; q < 12; ++q) {
      PortId src =
          host_ports[static_cast<size_t>(pick(0, static_cast<int>(host_ports.size()) - 1))];
      PortId dst =
          host_ports[static_cast<size_t>(pick(0, static_cast<int>(host_ports.size()) - 1))];
      SCOPED_TRACE(t.portRef(src) + " -> " + t.portRef(dst));
      PathSet set = r.paths(src, dst);
      ++checked_pairs;
      if (src == dst) {
        EXPECT_TRUE(set.badQuery());
        continue;
      }
      EXPECT_FALSE(set.badQuery());
      EXPECT_FALSE(set.saturated());
      auto paths = enumerate(set);
      EXPECT_EQ(paths.size(), set.count());
      auto oracle = oraclePaths(t, r, src, dst);
      std::set<std::vector<DirLinkId>> got(paths.begin(), paths.end());
      EXPECT_EQ(got, oracle);
      EXPECT_EQ(set.empty(), oracle.empty());
      if (set.empty()) {
        EXPECT_FALSE(set.error().empty());
        EXPECT_TRUE(set.linkShares().empty());
        continue;
      }
      ++nonempty_pairs;
      expectWellFormedPaths(t, set, src, dst, paths);

      // Sum over paths of the per-hop product probability, per link.
      auto dist = oracleDist(t, r, t.dirSrcNode(t.ingressOf(dst)));
      std::map<DirLinkId, double> expected;
      double total = 0;
      for (const auto& path : paths) {
        double prob = perHopProbability(t, r, dist, path);
        total += prob;
        for (DirLinkId d : path) expected[d] += prob;
      }
      EXPECT_NEAR(total, 1.0, 1e-9);
      auto shares = shareMap(set);
      ASSERT_EQ(shares.size(), expected.size());
      for (auto [d, want] : expected) {
        ASSERT_TRUE(shares.count(d)) << t.dirLinkName(d);
        EXPECT_NEAR(shares[d], want, 1e-9) << t.dirLinkName(d);
      }
      // Shares on each hop (grouped by the distance of the link's source) sum to 1.
      std::map<int, double> per_hop;
      for (auto [d, s] : shares) {
        NodeId u = t.dirSrcNode(d);
        per_hop[t.node(u).isHost() ? 1000 : dist[u]] += s;
      }
      for (auto [level, sum] : per_hop) EXPECT_NEAR(sum, 1.0, 1e-9) << "hop level " << level;
    }
  }
  EXPECT_EQ(checked_pairs, 600u);
  EXPECT_GT(nonempty_pairs, 300u);
}

}  // namespace
}  // namespace netdiag::topology
