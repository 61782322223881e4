#include "analyzer/ecmp_shares.h"

#include <algorithm>

namespace netdiag::analyzer {

using topology::DirLinkId;
using topology::NodeId;

EcmpShares::EcmpShares(const topology::Topology& topo, size_t max_entries)
    : topo_(topo), router_(topo), max_entries_(max_entries) {}

void EcmpShares::setDown(const std::set<topology::LinkId>& links) {
  if (links == down_) return;
  for (topology::LinkId l : down_) {
    if (!links.count(l)) router_.setLinkDown(l, false);
  }
  for (topology::LinkId l : links) {
    if (!down_.count(l)) router_.setLinkDown(l, true);
  }
  down_ = links;
  cache_.clear();
  entries_ = 0;
}

const EcmpShares::Shares& EcmpShares::pair(NodeId from, NodeId to) {
  uint64_t key = static_cast<uint64_t>(from) << 32 | to;
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  if (entries_ >= max_entries_) {
    cache_.clear();
    entries_ = 0;
  }
  Shares shares;
  // Push probability mass hop by hop in BFS order from `from`: every node is
  // reached only from nodes one hop farther from `to`, so its mass is
  // complete before it is split.
  std::unordered_map<NodeId, double> mass{{from, 1.0}};
  std::vector<NodeId> order{from};
  std::vector<DirLinkId> hops;
  for (size_t i = 0; i < order.size(); ++i) {
    hops.clear();
    router_.nextHops(order[i], to, hops);
    if (hops.empty()) continue;
    double each = mass[order[i]] / static_cast<double>(hops.size());
    for (DirLinkId h : hops) {
      shares.emplace_back(h, each);
      auto [it, inserted] = mass.emplace(topo_.dirDstNode(h), 0.0);
      if (inserted) order.push_back(topo_.dirDstNode(h));
      it->second += each;
    }
  }
  std::sort(shares.begin(), shares.end());
  entries_ += shares.size();
  return cache_.emplace(key, std::move(shares)).first->second;
}

double EcmpShares::share(NodeId from, NodeId to, DirLinkId d) {
  if (from == topology::kNone || to == topology::kNone || from == to) return 0;
  // d = u->v lies on a shortest from->to path iff u is one hop farther from
  // `to` than v and as far from `from` as `from` is from `to` less the rest.
  const NodeId u = topo_.dirSrcNode(d), v = topo_.dirDstNode(d);
  auto to_dist = router_.distancesTo(to);
  const auto& dt = *to_dist;
  constexpr auto kFar = topology::Router::kUnreachable;
  if (dt[from] == kFar || dt[v] == kFar || dt[u] != dt[v] + 1 || dt[u] > dt[from]) return 0;
  if ((*router_.distancesTo(u))[from] + dt[u] != dt[from]) return 0;
  const Shares& s = pair(from, to);
  auto it = std::lower_bound(s.begin(), s.end(), std::make_pair(d, 0.0));
  return it != s.end() && it->first == d ? it->second : 0;
}

}  // namespace netdiag::analyzer
