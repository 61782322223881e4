#include "topology/drain.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

namespace netdiag::topology {
namespace {

constexpr uint32_t kFar = UINT32_MAX;

// Hop distance of node n from the nearest host over all links (up or down:
// tiers are a property of the cabling, not of today's state). A walk out
// from n that stops at the first host, so a node's tier costs its
// neighbourhood, not the fabric.
uint32_t tierOf(const Topology& topo, NodeId n) {
  if (topo.node(n).isHost()) return 0;
  std::vector<bool> seen(topo.nodeCount(), false);
  std::vector<NodeId> level{n}, next;
  seen[n] = true;
  for (uint32_t dist = 1; !level.empty(); ++dist) {
    next.clear();
    for (NodeId u : level) {
      for (DirLinkId d : topo.outLinks(u)) {
        const NodeId v = topo.dirDstNode(d);
        if (topo.node(v).isHost()) return dist;
        if (!seen[v]) {
          seen[v] = true;
          next.push_back(v);
        }
      }
    }
    level.swap(next);
  }
  return kFar;
}

struct UnionFind {
  std::vector<uint32_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0u); }
  uint32_t find(uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(uint32_t a, uint32_t b) { parent[find(a)] = find(b); }
};

// For each host, how many other hosts it can reach: switches forward, hosts
// do not, so hosts meet through the switch components their up links touch
// (or a direct host-host cable).
std::vector<size_t> reachableHosts(const Topology& topo, const Router& router, LinkId extra_down) {
  auto down = [&](LinkId l) { return l == extra_down || router.isDown(l); };
  UnionFind uf(topo.nodeCount());
  for (LinkId l = 0; l < topo.linkCount(); ++l) {
    if (down(l)) continue;
    NodeId a = topo.port(topo.link(l).a).node, b = topo.port(topo.link(l).b).node;
    if (!topo.node(a).isHost() && !topo.node(b).isHost()) uf.join(a, b);
  }
  // Per host: the components (or peer hosts) it touches.
  std::vector<std::vector<uint32_t>> touches(topo.nodeCount());
  std::vector<std::vector<NodeId>> comp_hosts(topo.nodeCount());
  for (NodeId h = 0; h < topo.nodeCount(); ++h) {
    if (!topo.node(h).isHost()) continue;
    for (DirLinkId d : topo.outLinks(h)) {
      if (down(Topology::linkOf(d))) continue;
      NodeId v = topo.dirDstNode(d);
      if (topo.node(v).isHost()) continue;  // counted below as a direct cable
      uint32_t c = uf.find(v);
      if (std::find(touches[h].begin(), touches[h].end(), c) == touches[h].end()) {
        touches[h].push_back(c);
        comp_hosts[c].push_back(h);
      }
    }
  }
  std::vector<size_t> reach(topo.nodeCount(), 0);
  for (NodeId h = 0; h < topo.nodeCount(); ++h) {
    if (!topo.node(h).isHost()) continue;
    std::unordered_set<NodeId> seen;
    if (touches[h].size() == 1) {
      reach[h] = comp_hosts[touches[h][0]].size() - 1;
    } else {
      for (uint32_t c : touches[h]) seen.insert(comp_hosts[c].begin(), comp_hosts[c].end());
    }
    for (DirLinkId d : topo.outLinks(h)) {
      NodeId v = topo.dirDstNode(d);
      if (!down(Topology::linkOf(d)) && topo.node(v).isHost()) seen.insert(v);
    }
    seen.erase(h);
    reach[h] += seen.size();
  }
  return reach;
}

// Whether a switch of `targets` is reachable from switch `from` over up
// switch-to-switch links other than `skip`. A breadth-first walk that stops
// at the first one: in a Clos fabric that is a few hops away, where
// reachableHosts walks every link of the fabric (12 ms at 102,400 host ports).
bool switchesMeet(const Topology& topo, const Router& router, NodeId from,
                  const std::vector<NodeId>& targets, LinkId skip) {
  auto target = [&](NodeId n) {
    return std::find(targets.begin(), targets.end(), n) != targets.end();
  };
  if (target(from)) return true;
  std::vector<bool> seen(topo.nodeCount(), false);
  std::vector<NodeId> queue{from};
  seen[from] = true;
  for (size_t head = 0; head < queue.size(); ++head) {
    for (DirLinkId d : topo.outLinks(queue[head])) {
      const LinkId l = Topology::linkOf(d);
      const NodeId v = topo.dirDstNode(d);
      if (l == skip || router.isDown(l) || seen[v] || topo.node(v).isHost()) continue;
      if (target(v)) return true;
      seen[v] = true;
      queue.push_back(v);
    }
  }
  return false;
}

// Whether taking `link` out could change which hosts reach which: false when
// its two ends stay joined without it. Hosts do not forward, so switches
// meet over switch links only, and a host keeps its reach when another of
// its up links lands in the same switch component. Host-to-host cables and
// hosts with no other link are left to the full count.
bool reachMayChange(const Topology& topo, const Router& router, LinkId link) {
  const NodeId a = topo.port(topo.link(link).a).node, b = topo.port(topo.link(link).b).node;
  const bool a_host = topo.node(a).isHost(), b_host = topo.node(b).isHost();
  if (a_host && b_host) return true;
  if (!a_host && !b_host) return !switchesMeet(topo, router, a, {b}, link);
  const NodeId host = a_host ? a : b, sw = a_host ? b : a;
  std::vector<NodeId> others;
  for (DirLinkId d : topo.outLinks(host)) {
    const NodeId v = topo.dirDstNode(d);
    if (Topology::linkOf(d) != link && !router.isDown(Topology::linkOf(d)) &&
        !topo.node(v).isHost()) {
      others.push_back(v);
    }
  }
  return others.empty() || !switchesMeet(topo, router, sw, others, kNone);
}

std::string tierName(const Topology& topo, uint32_t tier, NodeId n) {
  // Named after the node's role; nodes of other roles by their distance.
  const Node& node = topo.node(n);
  if (node.role != Role::kOther) return std::string(roleName(node.role));
  return tier == kFar ? "isolated" : "tier " + std::to_string(tier);
}

}  // namespace

DrainPlan planDrain(const Router& router, LinkId link) {
  const Topology& topo = router.topology();
  DrainPlan plan;
  plan.link = link;
  NodeId a = topo.port(topo.link(link).a).node, b = topo.port(topo.link(link).b).node;
  // The end nearer the hosts is the lower one; on a tie (a link within one
  // tier) the first end in the file.
  const uint32_t tier_a = tierOf(topo, a), tier_b = tierOf(topo, b);
  plan.lower = tier_b < tier_a ? b : a;
  plan.upper = plan.lower == a ? b : a;
  const uint32_t upper_tier = plan.lower == a ? tier_b : tier_a;
  plan.lower_tier = tierName(topo, plan.lower == a ? tier_a : tier_b, plan.lower);
  plan.upper_tier = tierName(topo, upper_tier, plan.upper);
  plan.already_down = router.isDown(link);

  for (DirLinkId d : topo.outLinks(plan.lower)) {
    LinkId l = Topology::linkOf(d);
    if (router.isDown(l) || tierOf(topo, topo.dirDstNode(d)) != upper_tier) continue;
    ++plan.width_before;
    if (l != link) ++plan.width_after;
  }

  bool partitions = false;
  if (!plan.already_down && reachMayChange(topo, router, link)) {
    std::vector<size_t> before = reachableHosts(topo, router, kNone);
    std::vector<size_t> after = reachableHosts(topo, router, link);
    // Stranded: hosts cut off from the bulk of the fabric (those left
    // reaching fewer hosts than the best-connected ones), not every host
    // that merely loses them; on an even split, every host that lost some.
    size_t best = 0;
    std::vector<NodeId> lost_some;
    for (NodeId h = 0; h < topo.nodeCount(); ++h) {
      if (!topo.node(h).isHost()) continue;
      best = std::max(best, after[h]);
      if (after[h] < before[h]) lost_some.push_back(h);
    }
    partitions = !lost_some.empty();
    for (NodeId h : lost_some) {
      if (after[h] < best) plan.stranded_hosts.push_back(h);
    }
    if (plan.stranded_hosts.empty()) plan.stranded_hosts = lost_some;
  }
  plan.safe = plan.already_down || (plan.width_after >= 1 && !partitions);

  const std::string& lower = topo.node(plan.lower).name;
  std::string width = lower + " keeps " + std::to_string(plan.width_after) + " of " +
                      std::to_string(plan.width_before) +
                      (topo.node(plan.lower).isHost() ? " links" : " uplinks") + " to the " +
                      plan.upper_tier + " tier";
  if (plan.already_down) {
    plan.summary = "safe: the link is already down; " + width;
  } else if (plan.stranded_hosts.empty()) {
    plan.summary = (plan.safe ? "safe: " : "unsafe: ") + width + "; no host loses all its paths";
  } else {
    std::string hosts;
    for (size_t i = 0; i < plan.stranded_hosts.size() && i < 3; ++i) {
      hosts += (i ? ", " : "") + topo.node(plan.stranded_hosts[i]).name;
    }
    if (plan.stranded_hosts.size() > 3) {
      hosts += " and " + std::to_string(plan.stranded_hosts.size() - 3) + " more";
    }
    plan.summary =
        "unsafe: " + width + "; " + hosts + " would be cut off from the rest of the fabric";
  }
  return plan;
}

}  // namespace netdiag::topology
