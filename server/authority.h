#pragma once

// Who may speak for what (docs/security.md, "Identity and authority").
//
// A stream to the analyzer is one identity, the `agent` of its batches:
//  - a topology node: it may send probes whose src port is one of its own
//    ports, and port counters and LLDP neighbours of its own ports;
//  - a collector identity declared in the analyzer's --collectors file (an
//    SNMP poller, say): port counters and LLDP neighbours of the nodes the
//    file assigns to it, and no probes;
//  - a synthetic agent of `netdiag simulate --live --agents N` (`sim-<i>`),
//    only when the analyzer was started with --accept-sim-agents N: what the
//    simulator groups on it (simAgentGroups below, loadgen/sim_agents.h), probes included. For
//    simulations and benchmarks, never in production.
// Anything else is unknown and may say nothing.
//
// Thread-safety: immutable after construction.

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "topology/loader.h"
#include "topology/model.h"

namespace netdiag::server {

// One collector identity of the --collectors file.
struct CollectorIdentity {
  std::string name;
  std::vector<topology::NodeId> nodes;  // the nodes it may speak for
};

struct CollectorsLoad {
  std::vector<CollectorIdentity> collectors;
  std::vector<topology::Diagnostic> errors;  // each with its file and line
  bool ok() const { return errors.empty(); }
};

// Parses and validates a --collectors file (docs/operations.md):
//
//   collectors:
//     snmp-poller-1:
//       nodes: [leaf1, leaf2, spine1]
//
// Errors (all reported, each naming its line): not YAML, a missing or
// misshapen `collectors` map, an unknown key, a collector name that is empty,
// not [A-Za-z0-9._-], repeated or the name of a topology node, an unknown
// node, a node listed twice, a node assigned to two collectors.
CollectorsLoad loadCollectors(std::istream& in, std::string_view source_name,
                              const topology::Topology& topo);
CollectorsLoad loadCollectorsFile(const std::string& path, const topology::Topology& topo);

// The grouping of nodes onto `n` grouped synthetic agents sim-0..sim-(n-1):
// hosts round-robin over the agents, a switch to the agent its id falls to.
// Per node: its agent's number. The load generator (loadgen/sim_agents.h)
// uses the same function, so both sides agree on who speaks for what.
std::vector<uint32_t> simAgentGroups(const topology::Topology& topo, size_t n);

class Authority {
 public:
  enum class Kind { kUnknown, kNode, kCollector, kSim };

  // What one identity may say; `index` points into the authority's tables.
  struct Identity {
    Kind kind = Kind::kUnknown;
    uint32_t index = 0;  // node id, or collector / sim group number
  };

  // `sim_agents` > 0 accepts sim-0..sim-(N-1) as grouped by SimAgents for
  // that many agents.
  Authority(const topology::Topology& topo, std::vector<CollectorIdentity> collectors,
            size_t sim_agents);

  Identity identify(std::string_view agent) const;
  // May `who` send a probe from a port of `src_node`?
  bool mayProbe(const Identity& who, topology::NodeId src_node) const;
  // May `who` send port counters or LLDP of a port of `node`?
  bool mayDescribe(const Identity& who, topology::NodeId node) const;

  size_t simAgents() const { return sim_groups_; }

 private:
  bool inGroup(const Identity& who, topology::NodeId node) const;

  const topology::Topology& topo_;
  std::unordered_map<std::string, uint32_t> collector_index_;
  // Per node: the collector that speaks for it, or kNoCollector.
  std::vector<uint32_t> collector_of_node_;
  size_t sim_groups_ = 0;
  std::vector<uint32_t> sim_group_of_node_;
};

}  // namespace netdiag::server
