#pragma once

// What the planner and the coverage model need to know about a fabric under
// a set of constraints, computed once: which host ports can probe, the switch
// each attaches to ("edge switch"), the switch graph without drained links,
// and hop distances from every switch to every edge switch.
//
// Distances come from a multi-source BFS that advances 64 edge switches at a
// time with one bit each, so the whole table costs about
// (#edge switches / 64) x diameter x (#switch links) word operations —
// tens of milliseconds for a 100,000-host-port rail fabric.
//
// Thread-safety: immutable after construction; const methods may be called
// concurrently. Holds a reference to the topology, which must outlive it.

#include <cstdint>
#include <span>
#include <vector>

#include "planner/plan.h"
#include "topology/model.h"

namespace netdiag::planner {

class FabricIndex {
 public:
  static constexpr uint8_t kUnreachable = UINT8_MAX;

  FabricIndex(const topology::Topology& topo, const Constraints& constraints);

  const topology::Topology& topology() const { return topo_; }

  bool linkUp(LinkId link) const { return !drained_[link]; }
  bool hostPresent(NodeId host) const { return !absent_[host]; }

  // Host ports that can probe and be probed: on a present host, linked by an
  // up link to a switch. In port-id order.
  std::span<const PortId> hostPorts() const { return host_ports_; }
  // Edge switch index of a plannable host port; kNone otherwise.
  uint32_t edgeOfPort(PortId p) const { return port_edge_[p]; }

  // Switches, densely numbered 0..switchCount()-1.
  uint32_t switchCount() const { return static_cast<uint32_t>(switch_nodes_.size()); }
  NodeId switchNode(uint32_t sw) const { return switch_nodes_[sw]; }
  uint32_t switchIndex(NodeId n) const { return switch_index_[n]; }  // kNone for hosts

  struct Hop {
    DirLinkId link;
    uint32_t to;  // switch index
  };
  // Up switch-to-switch links leaving a switch, in link-id order.
  std::span<const Hop> hops(uint32_t sw) const {
    return {hops_.data() + hop_begin_[sw], hop_begin_[sw + 1] - hop_begin_[sw]};
  }

  // Edge switches: switches with at least one host port linked to them in
  // the topology (present or not, so the list does not move when hosts come
  // and go). Dense index 0..edgeCount()-1 in switch order.
  uint32_t edgeCount() const { return static_cast<uint32_t>(edge_switch_.size()); }
  uint32_t edgeSwitch(uint32_t edge) const { return edge_switch_[edge]; }
  uint32_t edgeIndexOfSwitch(uint32_t sw) const { return switch_edge_[sw]; }  // kNone if none
  // Plannable host ports attached to an edge switch, in port-id order.
  std::span<const PortId> portsAt(uint32_t edge) const {
    return {edge_ports_.data() + edge_port_begin_[edge],
            edge_port_begin_[edge + 1] - edge_port_begin_[edge]};
  }

  // Hops from switch `sw` to edge switch `edge` over up links (kUnreachable
  // when cut off). Links are bidirectional, so this is also edge -> sw.
  uint8_t distance(uint32_t edge, uint32_t sw) const {
    return dist_[static_cast<size_t>(edge) * switchCount() + sw];
  }
  std::span<const uint8_t> distanceRow(uint32_t edge) const {
    return {dist_.data() + static_cast<size_t>(edge) * switchCount(), switchCount()};
  }

  // A stable 64-bit key per port (a hash of "node:port"), so peer choice
  // depends on names rather than on file order.
  uint64_t portKey(PortId p) const { return port_key_[p]; }

 private:
  void computeDistances();

  const topology::Topology& topo_;
  std::vector<bool> drained_;
  std::vector<bool> absent_;
  std::vector<PortId> host_ports_;
  std::vector<uint32_t> port_edge_;
  std::vector<uint64_t> port_key_;
  std::vector<NodeId> switch_nodes_;
  std::vector<uint32_t> switch_index_;
  std::vector<uint32_t> hop_begin_;
  std::vector<Hop> hops_;
  std::vector<uint32_t> edge_switch_;
  std::vector<uint32_t> switch_edge_;
  std::vector<uint32_t> edge_port_begin_;
  std::vector<PortId> edge_ports_;
  std::vector<uint8_t> dist_;
};

// The planner on a prebuilt index (the CLI builds one index for the plan and
// its coverage report). makePlan(topo, ...) is this with a fresh index.
Plan makePlan(const FabricIndex& index, const Budget& budget, uint64_t seed);
AdaptResult adaptPlan(const FabricIndex& index, const Plan& plan,
                      std::span<const uint32_t> observed_flows, const AdaptOptions& options = {});
AdaptResult focusPlan(const FabricIndex& index, const Plan& plan,
                      std::span<const DirLinkId> suspects, AdaptOptions options = {});
// Peers per host port the planner uses for a budget with peers == 0.
int derivePeers(const FabricIndex& index, const Budget& budget);

// Deterministic 64-bit mixing (splitmix64 finalizer) used for every choice
// the planner makes, so a plan depends only on (seed, names, constraints).
uint64_t mix64(uint64_t x);
inline uint64_t hashCombine(uint64_t a, uint64_t b) {
  return mix64(a ^ mix64(b + 0x9e3779b97f4a7c15ULL));
}

}  // namespace netdiag::planner
