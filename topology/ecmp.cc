#include "topology/ecmp.h"

#include <deque>

namespace netdiag::topology {
namespace {

uint64_t saturatingAdd(uint64_t a, uint64_t b, bool& saturated) {
  if (a > UINT64_MAX - b) {
    saturated = true;
    return UINT64_MAX;
  }
  return a + b;
}

}  // namespace

Router::Router(const Topology& topo, size_t max_cached_destinations)
    : topo_(topo), down_(topo.linkCount(), false), max_cached_(max_cached_destinations) {
  hop_begin_.reserve(topo.nodeCount() + 1);
  hop_begin_.push_back(0);
  for (NodeId n = 0; n < topo.nodeCount(); ++n) {
    if (!topo.node(n).isHost()) {
      for (DirLinkId d : topo.outLinks(n)) {
        NodeId v = topo.dirDstNode(d);
        if (!topo.node(v).isHost()) hops_.push_back({d, v});
      }
    }
    hop_begin_.push_back(static_cast<uint32_t>(hops_.size()));
  }
}

void Router::setLinkDown(LinkId link, bool down) {
  if (down_[link] == down) return;
  down_[link] = down;
  cache_.clear();
}

std::shared_ptr<const std::vector<uint16_t>> Router::distancesTo(NodeId dst) {
  if (auto it = cache_.find(dst); it != cache_.end()) return it->second;
  auto dist = std::make_shared<std::vector<uint16_t>>(topo_.nodeCount(), kUnreachable);
  std::vector<NodeId> queue{dst};
  (*dist)[dst] = 0;
  for (size_t head = 0; head < queue.size(); ++head) {
    NodeId u = queue[head];
    for (auto [d, v] : switchHops(u)) {
      if ((*dist)[v] != kUnreachable || down_[Topology::linkOf(d)]) continue;
      (*dist)[v] = static_cast<uint16_t>((*dist)[u] + 1);
      queue.push_back(v);
    }
  }
  if (cache_.size() >= max_cached_) cache_.clear();
  cache_.emplace(dst, dist);
  return dist;
}

PathSet Router::paths(PortId src, PortId dst) {
  PathSet set;
  set.router_ = this;
  auto fail = [&](std::string why) {
    set.error_ = std::move(why);
    return set;
  };
  const std::string src_ref = topo_.portRef(src);
  const std::string dst_ref = topo_.portRef(dst);
  auto bad = [&](std::string why) {
    set.bad_query_ = true;
    return fail(std::move(why));
  };
  if (src == dst) return bad("source and destination are the same port " + src_ref);
  for (auto [p, ref] : {std::pair{src, &src_ref}, std::pair{dst, &dst_ref}}) {
    if (!topo_.node(topo_.port(p).node).isHost()) return bad(*ref + " is not a host port");
    if (topo_.port(p).link == kNone) return fail(*ref + " is not connected to anything");
    if (down_[topo_.port(p).link]) return fail("the link of " + *ref + " is down");
  }
  set.first_ = topo_.egressOf(src);
  NodeId s = topo_.dirDstNode(set.first_);
  if (topo_.node(s).isHost()) {
    // A direct host-to-host cable: the only path is that cable.
    if (topo_.dirDstPort(set.first_) != dst) {
      return fail("no path: " + src_ref + " is cabled to host " + topo_.node(s).name +
                  ", and hosts do not forward");
    }
    set.count_ = 1;
    set.hops_ = 1;
    return set;
  }
  set.last_ = topo_.ingressOf(dst);
  NodeId d = topo_.dirSrcNode(set.last_);
  if (topo_.node(d).isHost()) {
    return fail("no path: " + dst_ref + " is cabled to host " + topo_.node(d).name);
  }
  set.src_switch_ = s;
  set.dst_switch_ = d;
  set.dist_ = distancesTo(d);
  if ((*set.dist_)[s] == kUnreachable) {
    return fail("no path: switches " + topo_.node(s).name + " and " + topo_.node(d).name +
                " are not connected through up links");
  }
  set.hops_ = (*set.dist_)[s] + 2u;

  // Count paths over the DAG of next hops: nodes in BFS order from s have
  // non-increasing distance, so counting backwards sees successors first.
  std::vector<NodeId> order{s};
  std::unordered_map<NodeId, uint64_t> counts{{s, 0}};
  std::vector<DirLinkId> hops;
  for (size_t i = 0; i < order.size(); ++i) {
    hops.clear();
    set.nextHops(order[i], hops);
    for (DirLinkId h : hops) {
      if (counts.emplace(topo_.dirDstNode(h), 0).second) order.push_back(topo_.dirDstNode(h));
    }
  }
  counts[d] = 1;
  for (size_t i = order.size(); i-- > 0;) {
    if (order[i] == d) continue;
    hops.clear();
    set.nextHops(order[i], hops);
    uint64_t c = 0;
    for (DirLinkId h : hops) c = saturatingAdd(c, counts[topo_.dirDstNode(h)], set.saturated_);
    counts[order[i]] = c;
  }
  set.count_ = counts[s];
  return set;
}

void Router::nextHops(NodeId u, NodeId dst, std::vector<DirLinkId>& out) {
  appendNextHops(*distancesTo(dst), u, out);
}

bool Router::isNextHop(const std::vector<uint16_t>& dist, NodeId u, DirLinkId d, NodeId v) const {
  return dist[v] + 1u == dist[u] && !down_[Topology::linkOf(d)];
}

void Router::appendNextHops(const std::vector<uint16_t>& dist, NodeId u,
                            std::vector<DirLinkId>& out) const {
  if (dist[u] == 0 || dist[u] == kUnreachable) return;
  for (auto [d, v] : switchHops(u)) {
    if (isNextHop(dist, u, d, v)) out.push_back(d);
  }
}

void PathSet::nextHops(NodeId u, std::vector<DirLinkId>& out) const {
  router_->appendNextHops(*dist_, u, out);
}

bool PathSet::isNextHop(NodeId u, DirLinkId d, NodeId v) const {
  return router_->isNextHop(*dist_, u, d, v);
}

std::vector<std::pair<DirLinkId, double>> PathSet::linkShares() const {
  std::vector<std::pair<DirLinkId, double>> shares;
  if (empty()) return shares;
  shares.emplace_back(first_, 1.0);
  if (last_ == kNone) return shares;
  // Push probability mass hop by hop; BFS order visits a node only after all
  // nodes one hop farther from the destination, so its mass is complete.
  std::unordered_map<NodeId, double> mass{{src_switch_, 1.0}};
  std::vector<NodeId> order{src_switch_};
  std::vector<DirLinkId> hops;
  for (size_t i = 0; i < order.size(); ++i) {
    hops.clear();
    nextHops(order[i], hops);
    if (hops.empty()) continue;
    double each = mass[order[i]] / static_cast<double>(hops.size());
    for (DirLinkId h : hops) {
      shares.emplace_back(h, each);
      NodeId v = router_->topo_.dirDstNode(h);
      auto [it, inserted] = mass.emplace(v, 0.0);
      if (inserted) order.push_back(v);
      it->second += each;
    }
  }
  shares.emplace_back(last_, 1.0);
  return shares;
}

PathSet::Cursor::Cursor(const PathSet& set) : set_(&set) {}

bool PathSet::Cursor::next(std::vector<DirLinkId>& path) {
  if (done_) return false;
  const PathSet& s = *set_;
  if (!started_) {
    started_ = true;
    if (s.empty()) {
      done_ = true;
      return false;
    }
    if (s.last_ == kNone) {
      path.assign(1, s.first_);
      done_ = true;
      return true;
    }
    stack_.push_back({s.src_switch_, 0});
  } else {
    // Resume after the path yielded last time, which ended at the dst switch.
    stack_.pop_back();
    if (!links_.empty()) links_.pop_back();
  }
  while (!stack_.empty()) {
    auto [u, i] = stack_.back();
    if (u == s.dst_switch_) {
      path.clear();
      path.push_back(s.first_);
      path.insert(path.end(), links_.begin(), links_.end());
      path.push_back(s.last_);
      return true;
    }
    auto out = s.router_->switchHops(u);
    bool advanced = false;
    while (i < out.size()) {
      auto [d, v] = out[i++];
      if (s.isNextHop(u, d, v)) {
        stack_.back().second = i;
        links_.push_back(d);
        stack_.push_back({v, 0});
        advanced = true;
        break;
      }
    }
    if (!advanced) {
      stack_.pop_back();
      if (!links_.empty()) links_.pop_back();
    }
  }
  done_ = true;
  return false;
}

std::vector<PortId> pathPorts(const Topology& topo, const std::vector<DirLinkId>& links) {
  std::vector<PortId> ports;
  ports.reserve(2 * links.size());
  for (DirLinkId d : links) {
    ports.push_back(topo.dirSrcPort(d));
    ports.push_back(topo.dirDstPort(d));
  }
  return ports;
}

}  // namespace netdiag::topology
