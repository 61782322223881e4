#pragma once

// Everything the analyzer remembers of the fabric, over the evidence
// horizon: per-directed-link and per-host probe tallies, the lossy records
// one by one (so a pass can explain them away), per-flow path memory, the
// background loss, port counters, latency excess and LLDP neighbours. It
// owns that state; the explanation step (explain.h) reads it, and the
// engine (engine.h) feeds it records and moves its clock.

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/counters.h"
#include "analyzer/drain_state.h"
#include "analyzer/ecmp_shares.h"
#include "analyzer/evidence.h"
#include "analyzer/flow_loss.h"
#include "analyzer/flow_paths.h"
#include "analyzer/latency.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::analyzer {

// Background loss per probe, over a round trip and over one direction (the
// larger of forward and reverse): a one-way count is tested against one
// direction's background, about half the round trip's.
struct Background {
  double round_trip = 1e-3;
  double one_way = 1e-3;
};

struct EvidenceConfig {
  double bucket_s = 5;
  double horizon_s = 180;
  size_t expected_flows = 0;  // sizes the path memory up front (0: grow as seen)
};

// Telemetry strings kept as evidence (an LLDP neighbour) come from the
// fabric, not from us: one 1 MB string would otherwise be held per port and
// copied into every incident, report and database row naming it. Longer
// ones are cut at a UTF-8 boundary to at most this many bytes and marked
// "...[N bytes]" with their full size. Comparisons use the full string.
inline constexpr size_t kMaxEvidenceText = 256;
std::string capEvidenceText(std::string_view s);

class FabricEvidence {
 public:
  FabricEvidence(const topology::Topology& topo, const EvidenceConfig& config);

  void addProbe(const telemetry::ProbeRecord& r);
  void prefetch(const telemetry::ProbeRecord& r) const { flows_.prefetch(r); }
  void addPort(const telemetry::PortRecord& r);
  void addLldp(const telemetry::LldpRecord& r);
  // Moves every ring to `now`, forgets lossy records older than the
  // horizon and re-estimates the background.
  void advanceTo(double now);

  const topology::Topology& topology() const { return topo_; }
  // Links from the nearest host (hosts 0, their switches 1, ...): which way
  // a link goes, up the fabric or down (topology::kNone: no host reaches it).
  uint32_t hopsFromHosts(topology::NodeId n) const { return hops_from_hosts_[n]; }
  size_t buckets() const { return buckets_; }
  double bucketWidth() const { return cfg_.bucket_s; }
  double horizon() const { return cfg_.horizon_s; }

  // Certain-path probes and losses per directed link, and (when any record
  // had no one-way counts) those of round-trip segments among them.
  const BucketedTallies& links() const { return links_; }
  const BucketedTallies* linksRoundTrip() const { return links_rt_.get(); }
  // Probes sent to each node, and their losses.
  const BucketedTallies& toNode() const { return to_node_; }
  // Per host: the probes of its flows (sent to it, or from it) and their
  // losses, per segment (a one-way record counts its two directions apart):
  // what a host-side fault would hit.
  const BucketedTallies& hostSide() const { return host_side_; }
  const LossyStore& lossy() const { return lossy_; }
  // Claims: a paged hypothesis owns the segments it explained (engine).
  void claim(uint32_t segment, uint64_t owner);
  // Per-flow loss of the host ports whose access link is a hypothesis: the
  // engine asks each pass; a port unasked for a horizon is forgotten.
  void trackFlows(topology::PortId host_port, double now) { flow_loss_.track(host_port, now); }
  const FlowLoss& flowLoss() const { return flow_loss_; }
  const PortCounters& counters() const { return counters_; }
  LatencyEvidence& latency() { return latency_; }
  const LatencyEvidence& latency() const { return latency_; }
  // The ECMP share cache (a cache: answering fills it).
  EcmpShares& shares() const { return shares_; }

  // Probes a host port sent and their losses, over the horizon.
  Tally sentFrom(topology::PortId host_port) const;
  // The same split by direction: of its one-way records, the probes sent
  // and the forward losses (out), the probes that arrived and the reverse
  // losses (back); the rest of `all` are round trips.
  struct OwnFlows {
    Tally all, out, back;
  };
  OwnFlows ownFlows(topology::PortId host_port) const;
  // The same over every host port: all the probes of the horizon.
  OwnFlows allFlows() const;
  // Receive errors at the far end of a directed link: at least 10, and at
  // least 1e-6 of the packets received there, over the horizon.
  bool rxErrorsImplicate(topology::DirLinkId d) const;
  // Whether the counters on a directed link implicate it by themselves:
  // receive errors at its far end, or a carrier change within the horizon.
  bool countersImplicate(topology::DirLinkId d) const;

  const Background& background() const { return background_; }
  // The background of n probes of which n_rt are round trips, pooled.
  double nullRate(double n, double n_rt) const;

  // Counter state of a link. Carrier transitions seen by the busier end
  // over the horizon: one down/up cycle is 2; flapping is at least two cycles.
  static constexpr double kFlapChanges = 4;
  double carrierChanges(topology::LinkId l) const;
  // Whether a carrier change of link l (either end) could have caused loss
  // in a probe window ending at t: the change lies before t (allowing its
  // report a window's lag) and at most kCarrierTransientS before the
  // window's start.
  bool carrierTransientAt(topology::LinkId l, double t, double window_s) const;
  // Rerouting and the window that saw it: how long after a carrier change
  // (or a routing change) its loss may still show in a probe window.
  static constexpr double kCarrierTransientS = 15;
  // netdiag's own routing changes per link (drains, restores: DrainState).
  void setRoutingChanges(std::map<topology::LinkId, std::vector<DrainState::Change>> changes) {
    routing_changes_ = std::move(changes);
  }
  // Whether link l's switches reconverged within the horizon: its carrier
  // changed, or netdiag drained or restored it.
  bool changedRecently(topology::LinkId l) const;
  // Whether such a change could have caused loss in a probe window ending
  // at t (carrierTransientAt, or the same test against a routing change).
  bool transientAt(topology::LinkId l, double t, double window_s) const;
  bool reportedDown(topology::LinkId l) const;
  bool allLinksDown(topology::NodeId host) const;
  // LLDP: whether port p's neighbour disagrees with the topology, and the
  // neighbour as reported, cut to kMaxEvidenceText (see capEvidenceText).
  bool lldpMismatch(topology::PortId p) const { return lldp_mismatch_[p]; }
  const std::string& lldpNeighbor(topology::PortId p) const { return lldp_neighbor_[p]; }

 private:
  Background estimateBackground() const;
  void addSegment(double t, uint32_t n, uint32_t k, const std::vector<topology::DirLinkId>& seg,
                  topology::NodeId src, topology::NodeId dst, bool forward, uint32_t flow,
                  Middle m0);
  void addRoundTrip(double t, uint32_t n, uint32_t k, const std::vector<topology::DirLinkId>& seg,
                    topology::NodeId src, topology::NodeId dst, uint32_t flow, Middle m0,
                    Middle m1);

  const topology::Topology& topo_;
  EvidenceConfig cfg_;
  size_t buckets_;
  FlowPaths flows_;
  mutable EcmpShares shares_;
  BucketedTallies links_;      // per directed link: certain-path probes / losses
  BucketedTallies to_node_;    // per node: probes sent to it / lost
  BucketedTallies host_side_;  // per node: probes of its flows / lost (hostSide)
  // Per host port (background), three keys from its slot i: 3i all probes it
  // sent and their losses, 3i+1 one-way records' probes and forward losses,
  // 3i+2 their probes that arrived and reverse losses. Adjacent keys share a
  // cache line. Probes sent from a switch port count for nothing here.
  std::vector<uint32_t> host_slot_;  // per port: its slot, or kNone
  BucketedTallies from_port_;
  // Per directed link: the probes and losses of round-trip segments among
  // `links_` (records without one-way counts), whose background is a whole
  // round trip's. Made on the first such record.
  std::unique_ptr<BucketedTallies> links_rt_;
  PortCounters counters_;
  LossyStore lossy_;
  FlowLoss flow_loss_;
  LatencyEvidence latency_;
  std::vector<std::string> lldp_neighbor_;  // last LLDP neighbour per port
  std::vector<bool> lldp_mismatch_;
  std::vector<uint32_t> hops_from_hosts_;
  Background background_;
  std::map<topology::LinkId, std::vector<DrainState::Change>> routing_changes_;
  double now_ = 0;  // the time of the last advanceTo
  // Scratch buffers reused per record.
  std::vector<topology::DirLinkId> fwd_, rev_, both_;
};

}  // namespace netdiag::analyzer
