#pragma once

// Synthetic agents: a RecordSink that streams a simulated fabric's telemetry
// to a running analyzer over the agents' own wire, one AgentLink (a gRPC
// stream on the callback API, loadgen/agent_link.h) per synthetic agent, the
// records of each node going to its agent. Links share gRPC's threads and one
// maintenance thread, so 16k of them are a few threads in all.
//
// Streams and the analyzer's authority (server/authority.h): by default
// there is a stream per node, each named after its node and saying only what
// that node's own agent would, so any analyzer accepts it. With fewer
// streams than nodes (--agents N), stream i is `sim-<i>` and speaks for the nodes
// simAgentGroups() puts on it: the analyzer accepts those only when started
// with `--accept-sim-agents N` for the same N. Telemetry times are shifted
// onto the wall clock (the first record is stamped "now"); at speed S the
// records are paced so that S seconds of telemetry go out per wall second
// (speed 0: as fast as the analyzer acknowledges, with the unacknowledged
// bytes bounding what is outstanding). The first window goes out alone: the
// rest waits until every agent's batches of it are acknowledged, so that the
// analyzer has heard from all of them before any runs ahead (its watermark
// follows the agents it has heard from). Once an agent's acks carry the
// fingerprint of its own topology, its batches name ports by compact id
// (proto::topologyFingerprint), not by name.
//
// `netdiag simulate --live` and the ingest benchmark use it.
//
// Thread-safety: feed it from one thread (the simulator's).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "loadgen/agent_link.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::loadgen {

struct SimAgentsOptions {
  std::string analyzer = "127.0.0.1:7600";
  // 0 or >= the node count: one stream per node; else this many grouped
  // streams sim-0..sim-(N-1).
  size_t agents = 0;
  // Streams per connection (HTTP/2 channel); 1, like real agents: each its
  // own TCP connection.
  size_t agents_per_connection = 1;
  double speed = 1;                               // telemetry seconds per wall second; 0: no pacing
  double batch_interval_s = 1;                    // telemetry time per batch
  size_t max_batch_records = 5000;                // a batch is sent early when this full
  uint64_t max_outstanding_bytes = 256ull << 20;  // unacknowledged, all agents together
  std::string tls_ca, tls_cert, tls_key;
  // Every connection is up before the first record is stamped, or this
  // much time passed (the rest connect as they can).
  double connect_timeout_s = 120;
  // The shift is a multiple of this, so simulated windows keep their
  // alignment with the analyzer's pass boundaries (multiples of 5 s).
  double align_s = 5;
};

struct SimAgentsStats {
  uint64_t records = 0, batches = 0, acked = 0, reconnects = 0;
  std::string reconnect_reason;  // the last error most links last saw, if any
  uint64_t id_batches = 0;       // batches that named ports by compact id
  double seconds = 0;            // wall time from the first record to the last ack
  double time_shift = 0;         // added to every telemetry time
};

// How many streams SimAgents opens for `requested` (SimAgentsOptions::agents)
// and whether they are per node (named after the nodes) or grouped (sim-<i>).
struct SimAgentsLayout {
  size_t streams = 0;
  bool per_node = false;
};
SimAgentsLayout simAgentsLayout(const topology::Topology& topo, size_t requested);

class SimAgents final : public telemetry::RecordSink {
 public:
  SimAgents(const topology::Topology& topo, SimAgentsOptions options);
  ~SimAgents() override;

  void onProbe(const telemetry::ProbeRecord& r) override;
  void onPort(const telemetry::PortRecord& r) override;
  void onLldp(const telemetry::LldpRecord& r) override;

  // Sends what is buffered and waits until every batch is acknowledged or
  // `timeout_s` passes; false on timeout (the analyzer is down or too slow),
  // with *error saying so.
  bool finish(double timeout_s, std::string* error);
  SimAgentsStats stats() const;
  size_t agentCount() const { return agents_.size(); }
  // False when the streams are grouped sim-<i> agents (the analyzer needs
  // --accept-sim-agents agentCount()).
  bool perNode() const { return per_node_; }
  const std::string& agentName(size_t i) const { return agents_[i]->link->agent(); }

 private:
  struct Agent {
    std::unique_ptr<AgentLink> link;
    v1::Batch batch;
    size_t records = 0;
    // The batch being filled names ports by compact id: the analyzer's
    // acks showed our topology's fingerprint when it was begun.
    bool ids = false;
  };
  uint64_t unackedBytes() const;
  size_t unackedBatches() const;
  Agent& agentFor(topology::PortId port);
  Agent& begun(Agent& a);  // a batch's first record decides names or ids
  void before(double t);   // pacing and batch boundaries
  void flush(Agent& a);
  void flushAll();

  const topology::Topology& topo_;
  const SimAgentsOptions options_;
  const uint64_t fingerprint_;  // of topo_, for compact port ids
  Outstanding outstanding_;     // every link's unacknowledged, summed as they go
  std::vector<std::unique_ptr<Agent>> agents_;
  std::vector<uint32_t> agent_of_node_;
  bool per_node_ = false;
  bool started_ = false;
  bool heard_ = false;  // every agent's first window acknowledged (or given up on)
  double t_first_ = 0, shift_ = 0, next_flush_ = 0;
  std::chrono::steady_clock::time_point wall_first_;
  uint64_t records_ = 0, batches_ = 0, id_batches_ = 0;
  double seconds_ = 0;
  std::atomic<bool> stop_{false};
  std::thread maintainer_;  // opens and reopens every link's stream
};

}  // namespace netdiag::loadgen
