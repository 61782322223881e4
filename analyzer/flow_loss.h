#pragma once

// Per-flow loss of the few host ports whose access link is a hypothesis.
// ECMP hashes a flow's 5-tuple the same way at every hop, so a fabric
// link's loss falls on the flows hashed through it and leaves the others
// clean, while a cable's (or its host's) falls on every flow of the port
// alike. Window by window the two can look the same (one or two losses a
// window); flow by flow they do not. Kept only for tracked ports, from the
// pass that asked on, so memory is bounded whatever the fabric's size.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::analyzer {

class FlowLoss {
 public:
  // What one flow saw on one direction of the access link: one-way counts
  // and round trips apart (their backgrounds differ).
  struct Flow {
    double n1 = 0, k1 = 0;  // one-way
    double n2 = 0, k2 = 0;  // round trips
  };
  static constexpr size_t kMaxPorts = 64;
  static constexpr size_t kMaxFlowsPerPort = 4096;

  // Tracks host port p's flows from now on (until `expire` finds it unasked
  // for `idle_s`). Beyond kMaxPorts tracked ports, new ones are refused.
  void track(topology::PortId p, double now);
  void add(const telemetry::ProbeRecord& r);
  void expire(double now, double idle_s);
  // The flows of port p over the direction of its access link that leaves
  // the host (`out`) or enters it; empty when p is not tracked.
  std::vector<Flow> flows(topology::PortId p, bool out) const;

 private:
  struct PerFlow {
    Flow out, in;
  };
  struct Port {
    double asked = 0;
    std::unordered_map<uint64_t, PerFlow> flows;
  };
  void addTo(Port& port, uint64_t key, const telemetry::ProbeRecord& r, bool as_source);
  std::unordered_map<topology::PortId, Port> ports_;
};

}  // namespace netdiag::analyzer
