#pragma once

// Wire messages <-> telemetry records and probe plans. Records on the wire
// name ports as "node:port"; here they are resolved against the topology,
// and every problem is reported with what and where, never thrown.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "netdiag/v1/collector.pb.h"
#include "planner/plan.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::proto {

// What compact port ids on the wire are valid under: a 64-bit hash (FNV-1a)
// of every port's "node:port" in id order and every link's two ports, so two
// processes that loaded the same fabric agree, and any change to ports or
// cabling changes it. Never 0 (0 on the wire means "no ids").
uint64_t topologyFingerprint(const topology::Topology& topo);

// Resolves names and hop addresses of one topology; build once, reuse.
//
// Every record on the wire names a dozen ports or so (src, dst, each hop of
// both paths), so this is the analyzer's hottest lookup. It is an
// open-addressing table over one contiguous copy of the names, and each
// port's entry carries what checking a hop needs (its node, the link that
// arrives at it and where that link starts), so a hop costs one probe of
// the table and no walk through the topology's port and link arrays.
class Resolver {
 public:
  explicit Resolver(const topology::Topology& topo);

  // What a path check needs of one port, resolved once.
  struct PortEntry {
    topology::PortId port = topology::kNone;
    topology::NodeId node = topology::kNone;
    topology::DirLinkId ingress = topology::kNone;    // arrives at `port`; kNone: unlinked
    topology::NodeId ingress_from = topology::kNone;  // the node `ingress` leaves
    topology::PortId ingress_from_port = topology::kNone;
  };

  const topology::Topology& topology() const { return topo_; }
  uint64_t fingerprint() const { return fingerprint_; }
  // "node:port" -> port id, kNone when unknown.
  topology::PortId port(std::string_view name) const;
  // An interface address (as in the topology's `addr`, without prefix
  // length) -> port id, kNone when unknown.
  topology::PortId portByAddr(std::string_view addr) const;
  // The same lookups with the hop facts; nullptr when unknown.
  const PortEntry* entry(std::string_view name) const { return names_.find(name, entries_); }
  const PortEntry* entryByAddr(std::string_view addr) const { return addrs_.find(addr, entries_); }
  const PortEntry& entryOf(topology::PortId p) const { return entries_[p]; }
  // A wire port id (port index + 1) -> its entry; nullptr when out of range.
  const PortEntry* entryById(uint32_t id) const {
    return id - 1u < entries_.size() ? &entries_[id - 1u] : nullptr;
  }
  void prefetchId(uint32_t id) const {
    if (id - 1u < entries_.size()) __builtin_prefetch(&entries_[id - 1u]);
  }

 private:
  // Keys -> port ids; linear probing over a power-of-two table at most half
  // full. Each slot holds the key's hash and, when it is short (every port
  // name of the generated fabrics is), the key itself, so a lookup touches
  // one slot; longer keys are kept in one shared buffer.
  class Table {
   public:
    void build(const std::vector<std::pair<std::string, topology::PortId>>& keys);
    const PortEntry* find(std::string_view key, const std::vector<PortEntry>& entries) const;

   private:
    static constexpr size_t kInline = 24;
    struct Slot {
      uint64_t hash = 0;
      uint32_t size = 0;
      topology::PortId port = topology::kNone;  // kNone: empty slot
      char key[kInline] = {};  // the key when size <= kInline, else its offset in long_keys_
    };
    std::string_view keyOf(const Slot& s) const;
    std::vector<Slot> slots_;
    std::string long_keys_;
    uint64_t mask_ = 0;
  };

  const topology::Topology& topo_;
  uint64_t fingerprint_ = 0;
  std::vector<PortEntry> entries_;  // by port id
  Table names_, addrs_;
};

// Hands every valid record of `batch` to `sink`; returns one message per
// rejected record ("probes[3]: unknown port \"x:y\""). A record whose path
// does not map onto the topology is kept without it, with a message in
// *warnings when given.
std::vector<std::string> deliver(const v1::Batch& batch, const Resolver& resolver,
                                 telemetry::RecordSink& sink,
                                 std::vector<std::string>* warnings = nullptr);

// The valid records of one batch, in wire order per kind.
struct Decoded {
  std::vector<telemetry::ProbeRecord> probes;
  std::vector<telemetry::PortRecord> ports;
  std::vector<telemetry::LldpRecord> lldp;
  // Records that carried port ids under another topology fingerprint than
  // the resolver's (or none): their names were used, or, without names,
  // they are among the errors.
  size_t id_mismatch = 0;
};

// What deliver() does, appending to `out` instead of calling a sink (the
// records are built in place, never copied): the analyzer's ingest path.
std::vector<std::string> decode(const v1::Batch& batch, const Resolver& resolver, Decoded& out,
                                std::vector<std::string>* warnings = nullptr);

// Record -> wire (simulated agents); names come from the topology, or with
// `ids` the compact port ids instead (the batch must then carry
// topologyFingerprint(topo)).
void toWire(const topology::Topology& topo, const telemetry::ProbeRecord& r, v1::Probe& out,
            bool ids = false);
void toWire(const topology::Topology& topo, const telemetry::PortRecord& r, v1::PortCounters& out,
            bool ids = false);
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
