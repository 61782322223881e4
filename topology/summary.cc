#include "topology/summary.h"

#include <algorithm>
#include <climits>
#include <map>

namespace netdiag::topology {

double TierSummary::oversubscription() const {
  if (up_links == 0) return 0;
  if (links_without_speed > 0) {
    return static_cast<double>(down_links) / static_cast<double>(up_links);
  }
  return up_gbps > 0 ? down_gbps / up_gbps : 0;
}

Summary summarize(const Topology& topo) {
  Summary s;
  s.name = topo.name;
  s.nodes = topo.nodeCount();
  s.ports = topo.portCount();
  s.links = topo.linkCount();

  // Level = hops from the nearest host, by multi-source BFS; it orders tiers
  // for any role words, not only the well-known ones.
  std::vector<int> level(topo.nodeCount(), INT_MAX);
  std::vector<NodeId> queue;
  for (NodeId n = 0; n < topo.nodeCount(); ++n) {
    if (topo.node(n).isHost()) {
      level[n] = 0;
      queue.push_back(n);
      ++s.hosts;
      s.host_ports += topo.portsOf(n).size();
    }
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    NodeId u = queue[head];
    for (DirLinkId d : topo.outLinks(u)) {
      NodeId v = topo.dirDstNode(d);
      if (level[v] == INT_MAX) {
        level[v] = level[u] + 1;
        queue.push_back(v);
      }
    }
  }

  std::map<std::string, TierSummary> by_role;
  for (NodeId n = 0; n < topo.nodeCount(); ++n) {
    const Node& node = topo.node(n);
    const std::string role =
        node.role_name.empty() ? std::string(roleName(node.role)) : node.role_name;
    TierSummary& t = by_role[role];
    if (t.nodes == 0) {
      t.role = role;
      t.level = level[n];
    }
    t.level = std::min(t.level, level[n]);
    ++t.nodes;
    for (DirLinkId d : topo.outLinks(n)) {
      NodeId v = topo.dirDstNode(d);
      double gbps = topo.link(Topology::linkOf(d)).speed_gbps;
      if (gbps == 0 && level[v] != level[n]) ++t.links_without_speed;
      if (level[v] < level[n]) {
        ++t.down_links;
        t.down_gbps += gbps;
      } else if (level[v] > level[n]) {
        ++t.up_links;
        t.up_gbps += gbps;
      } else {
        ++t.peer_links;
      }
    }
  }
  for (auto& [role, t] : by_role) s.tiers.push_back(t);
  std::stable_sort(s.tiers.begin(), s.tiers.end(),
                   [](const TierSummary& a, const TierSummary& b) { return a.level < b.level; });
  return s;
}

}  // namespace netdiag::topology
