#pragma once

// Wire messages <-> telemetry records and probe plans. Records on the wire
// name ports as "node:port"; here they are resolved against the topology,
// and every problem is reported with what and where, never thrown.

#include <string>
#include <vector>

#include "netdiag/v1/collector.pb.h"
#include "planner/plan.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::proto {

// Resolves names and hop addresses of one topology; build once, reuse.
class Resolver {
 public:
  explicit Resolver(const topology::Topology& topo);

  const topology::Topology& topology() const { return topo_; }
  // "node:port" -> port id, kNone when unknown.
  topology::PortId port(const std::string& name) const;
  // An interface address (as in the topology's `addr`, without prefix
  // length) -> port id, kNone when unknown.
  topology::PortId portByAddr(const std::string& addr) const;

 private:
  const topology::Topology& topo_;
  std::unordered_map<std::string, topology::PortId> by_addr_;
};

// Hands every valid record of `batch` to `sink`; returns one message per
// rejected record ("probes[3]: unknown port \"x:y\""). A record whose path
// does not map onto the topology is kept without it, with a message in
// *warnings when given.
std::vector<std::string> deliver(const v1::Batch& batch, const Resolver& resolver,
                                 telemetry::RecordSink& sink,
                                 std::vector<std::string>* warnings = nullptr);

// Record -> wire (simulated agents); names come from the topology.
void toWire(const topology::Topology& topo, const telemetry::ProbeRecord& r, v1::Probe& out);
void toWire(const topology::Topology& topo, const telemetry::PortRecord& r, v1::PortCounters& out);
void toWire(const topology::Topology& topo, const telemetry::LldpRecord& r, v1::LldpNeighbor& out);

// Who probes one node under a plan: what its responder must answer.
struct Inbound {
  std::vector<std::string> addrs;  // the flows' source addresses, sorted, unique
  double probes_per_second = 0;    // of those flows together
  size_t flows = 0;
  // False when a flow towards the node has a source port without address:
  // its prober binds no address, the list cannot name it, and the plan
  // then carries no list and probed_by_known false (the responder answers
  // everyone).
  bool complete = true;
};

// Inbound of every node (indexed by NodeId), in one pass over the plan.
// Flows towards a port without address are left out: no agent can probe
// them (the prober skips them).
std::vector<Inbound> inboundByNode(const topology::Topology& topo, const planner::Plan& plan);

// The part of `plan` one agent runs: the flows of every host port of
// `node`, and who probes it (from `inbound`, inboundByNode's entry for
// `node`; nullptr: computed here with a pass over the whole plan).
v1::AgentPlan agentPlan(const topology::Topology& topo, const planner::Plan& plan,
                        topology::NodeId node, uint32_t responder_port, uint32_t dscp,
                        const Inbound* inbound = nullptr);

}  // namespace netdiag::proto
