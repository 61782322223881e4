#pragma once

// Per-hop ECMP shares between two switches: the probability that a flow
// entering at `from` and leaving at `to` crosses a given directed link when
// every switch splits flows evenly over its next hops (formats.md §1). Used
// to weigh evidence from the parts of paths that discovery did not see,
// never a vendor's hash.

#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "topology/ecmp.h"
#include "topology/model.h"

namespace netdiag::analyzer {

class EcmpShares {
 public:
  // `max_entries` bounds the cache (link shares kept over all pairs).
  explicit EcmpShares(const topology::Topology& topo, size_t max_entries = 8'000'000);

  // Share of link `d` on the switch pair; 0 when it is not on any path.
  // Checks hop distances first, so pairs whose paths cannot contain `d` are
  // answered without building their shares.
  double share(topology::NodeId from, topology::NodeId to, topology::DirLinkId d);

  // Every link on the ECMP paths of the pair with its share, sorted by link.
  // The reference is valid until the next call.
  using Shares = std::vector<std::pair<topology::DirLinkId, double>>;
  const Shares& linksOn(topology::NodeId from, topology::NodeId to) { return pair(from, to); }

  // The links out of the graph now (drained by netdiag): routes and shares
  // are taken without them. Clears the cache when the set changes.
  void setDown(const std::set<topology::LinkId>& links);

 private:
  const Shares& pair(topology::NodeId from, topology::NodeId to);

  const topology::Topology& topo_;
  topology::Router router_;
  size_t max_entries_;
  size_t entries_ = 0;
  std::set<topology::LinkId> down_;
  std::unordered_map<uint64_t, Shares> cache_;
};

}  // namespace netdiag::analyzer
