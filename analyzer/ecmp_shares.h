#pragma once

// Per-hop ECMP shares between two switches: the probability that a flow
// entering at `from` and leaving at `to` crosses a given directed link when
// every switch splits flows evenly over its next hops (formats.md §1). Used
// to weigh evidence from the parts of paths that discovery did not see,
// never a vendor's hash.

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "topology/ecmp.h"
#include "topology/model.h"

namespace netdiag::analyzer {

class EcmpShares {
 public:
  explicit EcmpShares(const topology::Topology& topo, size_t max_pairs = 200000);

  // Share of link `d` on the switch pair; 0 when it is not on any path.
  double share(topology::NodeId from, topology::NodeId to, topology::DirLinkId d);

 private:
  using Shares = std::vector<std::pair<topology::DirLinkId, double>>;  // sorted by link
  const Shares& pair(topology::NodeId from, topology::NodeId to);

  const topology::Topology& topo_;
  topology::Router router_;
  size_t max_pairs_;
  std::unordered_map<uint64_t, Shares> cache_;
};

}  // namespace netdiag::analyzer
