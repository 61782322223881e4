#pragma once

// What is known of each flow's path. ECMP hashes a flow's 5-tuple the same
// way every time, so a path discovered once holds for the flow's later
// records that carry none, until the path changes: a new discovery replaces
// it, and a partial discovery that disagrees with it drops it. (A cached
// path may be stale for one window after a reroute; clean records on it
// then exonerate links the flow no longer crosses, which costs little.)
// Without any discovery, only a flow's access links are certain.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "analyzer/evidence.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::analyzer {

class FlowPaths {
 public:
  explicit FlowPaths(const topology::Topology& topo);

  // The directed links the record's probes certainly crossed on the way out
  // (and, for reverseLinks, on the way back), and the stretch that remains
  // unseen. Learns from the record.
  Middle forwardLinks(const telemetry::ProbeRecord& r, std::vector<topology::DirLinkId>& out);
  Middle reverseLinks(const telemetry::ProbeRecord& r, std::vector<topology::DirLinkId>& out) const;

  size_t cachedFlows() const { return cache_.size(); }

 private:
  struct Key {
    topology::PortId src, dst;
    uint64_t flow;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = (static_cast<uint64_t>(k.src) << 32 | k.dst) * 0x9e3779b97f4a7c15ull;
      return static_cast<size_t>(h ^ (k.flow * 0xc2b2ae3d27d4eb4full));
    }
  };
  // Only the two access links are certain; the switches between are unseen.
  Middle accessOnly(topology::PortId src, topology::PortId dst,
                    std::vector<topology::DirLinkId>& out) const;

  const topology::Topology& topo_;
  std::unordered_map<Key, std::vector<topology::DirLinkId>, KeyHash> cache_;
};

}  // namespace netdiag::analyzer
