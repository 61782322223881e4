#pragma once

// ECMP shortest paths between host ports, per the forwarding model of
// formats.md §1: traffic leaves through the source port, crosses the
// switches on shortest (hop-count) paths between the two attached switches,
// and arrives through the destination port. Hosts never forward; parallel
// links are separate next hops; links marked down leave the graph. Each
// switch splits flows evenly over its next hops (per-hop ECMP), which is what
// linkShares() reports — never a particular vendor's hash.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "topology/model.h"

namespace netdiag::topology {

class Router;

// All ECMP paths of one (src port, dst port) pair. Cheap to make; paths are
// counted without being enumerated and enumerated one at a time on demand.
// A PathSet must not outlive the Router that made it, and is invalidated by
// Router::setLinkDown().
class PathSet {
 public:
  // Empty with a reason when there is no path (or the query was invalid).
  bool empty() const { return count_ == 0; }
  const std::string& error() const { return error_; }
  // True when the query itself was wrong (same port, not a host port), as
  // opposed to a valid query that the fabric cannot route.
  bool badQuery() const { return bad_query_; }

  // Number of distinct paths; saturates at UINT64_MAX (see saturated()).
  uint64_t count() const { return count_; }
  bool saturated() const { return saturated_; }
  // Hops (directed links) on every path: all shortest paths have one length.
  size_t hops() const { return hops_; }

  // Lazy enumeration in a deterministic order (next hops by link id).
  class Cursor {
   public:
    // Fills `path` with the next path's directed links; false at the end.
    bool next(std::vector<DirLinkId>& path);

   private:
    friend class PathSet;
    explicit Cursor(const PathSet& set);
    const PathSet* set_;
    std::vector<std::pair<NodeId, uint32_t>> stack_;  // node, next out-link index
    std::vector<DirLinkId> links_;
    bool done_ = false;
    bool started_ = false;
  };
  Cursor cursor() const { return Cursor(*this); }

  // Probability that a flow of this pair crosses each directed link, under
  // even per-hop ECMP splitting; shares on each hop sum to 1.
  std::vector<std::pair<DirLinkId, double>> linkShares() const;

 private:
  friend class Router;
  PathSet() = default;
  // Next hops of switch u toward the destination switch, appended to out.
  void nextHops(NodeId u, std::vector<DirLinkId>& out) const;
  bool isNextHop(NodeId u, DirLinkId d, NodeId v) const;

  const Router* router_ = nullptr;
  std::shared_ptr<const std::vector<uint16_t>> dist_;  // hops to dst switch
  DirLinkId first_ = kNone;                            // src port's egress link
  DirLinkId last_ = kNone;  // link into the dst port; kNone on a direct host-host cable
  NodeId src_switch_ = kNone;
  NodeId dst_switch_ = kNone;
  uint64_t count_ = 0;
  bool saturated_ = false;
  size_t hops_ = 0;
  bool bad_query_ = false;
  std::string error_;
};

// Answers path queries on one topology, caching hop distances per
// destination switch. Not thread-safe: use one Router per thread.
class Router {
 public:
  static constexpr uint16_t kUnreachable = UINT16_MAX;

  explicit Router(const Topology& topo, size_t max_cached_destinations = 4096);

  const Topology& topology() const { return topo_; }

  // Marks a link down (both directions) or back up; clears the cache.
  void setLinkDown(LinkId link, bool down);
  bool isDown(LinkId link) const { return down_[link]; }

  PathSet paths(PortId src, PortId dst);

  // Next hops of switch `u` towards switch `dst` (links one hop closer, in
  // link-id order), appended to `out`; what a switch's ECMP group holds.
  void nextHops(NodeId u, NodeId dst, std::vector<DirLinkId>& out);

  // Hop distances from every node to switch `dst` over up links through
  // switches only; kUnreachable for hosts and cut-off switches.
  std::shared_ptr<const std::vector<uint16_t>> distancesTo(NodeId dst);

 private:
  friend class PathSet;
  // Switch-to-switch hops only, packed per node: paths never enter a host
  // mid-way, and a compact array keeps the BFS in cache at 100k-port scale.
  struct Hop {
    DirLinkId link;
    NodeId to;
  };
  std::span<const Hop> switchHops(NodeId n) const {
    return {hops_.data() + hop_begin_[n], hop_begin_[n + 1] - hop_begin_[n]};
  }
  // The one next-hop rule: an up link to a switch one hop closer to the
  // destination whose distances are `dist`.
  bool isNextHop(const std::vector<uint16_t>& dist, NodeId u, DirLinkId d, NodeId v) const;
  void appendNextHops(const std::vector<uint16_t>& dist, NodeId u,
                      std::vector<DirLinkId>& out) const;

  const Topology& topo_;
  std::vector<uint32_t> hop_begin_;
  std::vector<Hop> hops_;
  std::vector<bool> down_;
  size_t max_cached_;
  std::unordered_map<NodeId, std::shared_ptr<const std::vector<uint16_t>>> cache_;
};

// The contract's `path` form of a path: source port, then each switch's
// ingress and egress port, then the destination port.
std::vector<PortId> pathPorts(const Topology& topo, const std::vector<DirLinkId>& links);

}  // namespace netdiag::topology
