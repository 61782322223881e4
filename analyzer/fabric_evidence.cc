#include "analyzer/fabric_evidence.h"

#include <algorithm>
#include <cmath>

namespace netdiag::analyzer {

using namespace topology;
using telemetry::LldpRecord;
using telemetry::PortRecord;
using telemetry::ProbeRecord;

namespace {

std::vector<uint32_t> hostSlots(const Topology& t) {
  std::vector<uint32_t> slot(t.portCount(), kNone);
  uint32_t next = 0;
  for (PortId p = 0; p < t.portCount(); ++p) {
    if (t.node(t.port(p).node).isHost()) slot[p] = next++;
  }
  return slot;
}

// A probe flow's identity (its ports and source port), mixed to 32 bits.
uint32_t flowHash(const ProbeRecord& r) {
  uint64_t h = (uint64_t{r.src} << 32 | r.dst) * 0x9e3779b97f4a7c15ULL;
  h ^= r.flow + 0x632be59bd9b4e019ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return static_cast<uint32_t>(h >> 32);
}

size_t countSlots(const std::vector<uint32_t>& slots) {
  return static_cast<size_t>(std::ranges::count_if(slots, [](uint32_t s) { return s != kNone; }));
}

}  // namespace

FabricEvidence::FabricEvidence(const Topology& t, const EvidenceConfig& c)
    : topo_(t),
      cfg_(c),
      buckets_(static_cast<size_t>(std::ceil(c.horizon_s / c.bucket_s))),
      flows_(t),
      shares_(t),
      links_(t.dirLinkCount(), buckets_, c.bucket_s),
      to_node_(t.nodeCount(), buckets_, c.bucket_s),
      host_side_(t.nodeCount(), buckets_, c.bucket_s),
      host_slot_(hostSlots(t)),
      from_port_(3 * countSlots(host_slot_), buckets_, c.bucket_s),
      counters_(t.portCount(), buckets_, c.bucket_s),
      latency_(t.dirLinkCount(), buckets_, c.bucket_s),
      lldp_neighbor_(t.portCount()),
      lldp_mismatch_(t.portCount(), false),
      hops_from_hosts_(t.nodeCount(), kNone) {
  if (c.expected_flows > 0) flows_.reserve(c.expected_flows);
  std::vector<NodeId> frontier;
  for (NodeId n = 0; n < t.nodeCount(); ++n) {
    if (t.node(n).isHost()) hops_from_hosts_[n] = 0, frontier.push_back(n);
  }
  for (uint32_t hops = 1; !frontier.empty(); ++hops) {
    std::vector<NodeId> next;
    for (NodeId n : frontier) {
      for (DirLinkId d : t.outLinks(n)) {
        const NodeId m = t.dirDstNode(d);
        if (hops_from_hosts_[m] == kNone) hops_from_hosts_[m] = hops, next.push_back(m);
      }
    }
    frontier.swap(next);
  }
}

void FabricEvidence::addSegment(double t, uint32_t n, uint32_t k, const std::vector<DirLinkId>& seg,
                                NodeId src, NodeId dst, bool forward, uint32_t flow, Middle m0) {
  if (n == 0) return;
  for (DirLinkId d : seg) links_.add(d, t, n, k);
  if (k > 0) lossy_.add(t, n, k, seg, src, dst, forward, m0, {}, false, flow);
}

void FabricEvidence::addRoundTrip(double t, uint32_t n, uint32_t k,
                                  const std::vector<DirLinkId>& seg, NodeId src, NodeId dst,
                                  uint32_t flow, Middle m0, Middle m1) {
  if (n == 0) return;
  if (!links_rt_) {
    links_rt_ = std::make_unique<BucketedTallies>(topo_.dirLinkCount(), buckets_, cfg_.bucket_s);
  }
  for (DirLinkId d : seg) {
    links_.add(d, t, n, k);
    links_rt_->add(d, t, n, k);
  }
  if (k > 0) lossy_.add(t, n, k, seg, src, dst, true, m0, m1, true, flow);
}

void FabricEvidence::addProbe(const ProbeRecord& r) {
  if (r.sent == 0) return;
  const NodeId dst_node = topo_.port(r.dst).node;
  Middle fwd_mid = flows_.forwardLinks(r, fwd_);
  Middle rev_mid = flows_.reverseLinks(r, rev_);
  const NodeId src_node = topo_.port(r.src).node;
  to_node_.add(dst_node, r.t, r.sent, r.lost);
  flow_loss_.add(r);
  // Segment by segment, as the lossy store has them, so that explaining a
  // segment away takes from this tally exactly what it added.
  for (NodeId end : {src_node, dst_node}) {
    if (!topo_.node(end).isHost()) continue;
    if (r.hasOneWay()) {
      host_side_.add(end, r.t, r.sent, *r.lost_fwd);
      host_side_.add(end, r.t, r.sent - *r.lost_fwd, *r.lost_rev);
    } else {
      host_side_.add(end, r.t, r.sent, r.lost);
    }
  }
  if (r.hasRtt() && fwd_mid.known() &&
      (rev_mid.from == topology::kNone || rev_mid.from != rev_mid.to)) {
    // Round trip over a known forward path; the return, known or not, is
    // taken to have as many hops, as in the symmetric Clos fabrics this
    // tool targets. (A return known in full has no unseen stretch: kNone.)
    both_ = fwd_;
    both_.insert(both_.end(), rev_.begin(), rev_.end());
    latency_.add(r.t, r.rtt_us_p50, fwd_.size(), both_, rev_mid);
  }
  if (const size_t i = host_slot_[r.src]; i != kNone) {
    from_port_.add(3 * i, r.t, r.sent, r.lost);
    if (r.hasOneWay()) {
      from_port_.add(3 * i + 1, r.t, r.sent, *r.lost_fwd);
      from_port_.add(3 * i + 2, r.t, r.sent - *r.lost_fwd, *r.lost_rev);
    }
  }
  const uint32_t flow = flowHash(r);
  if (r.hasOneWay()) {
    addSegment(r.t, r.sent, *r.lost_fwd, fwd_, src_node, dst_node, true, flow, fwd_mid);
    addSegment(r.t, r.sent - *r.lost_fwd, *r.lost_rev, rev_, src_node, dst_node, false, flow,
               rev_mid);
  } else {
    both_ = fwd_;
    for (DirLinkId d : rev_) {
      if (std::find(both_.begin(), both_.end(), d) == both_.end()) both_.push_back(d);
    }
    addRoundTrip(r.t, r.sent, r.lost, both_, src_node, dst_node, flow, fwd_mid, rev_mid);
  }
}

void FabricEvidence::addPort(const PortRecord& r) { counters_.add(r); }

std::string capEvidenceText(std::string_view s) {
  if (s.size() <= kMaxEvidenceText) return std::string(s);
  size_t n = kMaxEvidenceText;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n)) + "...[" + std::to_string(s.size()) + " bytes]";
}

void FabricEvidence::addLldp(const LldpRecord& r) {
  lldp_neighbor_[r.port] = capEvidenceText(r.neighbor);
  const Port& p = topo_.port(r.port);
  std::string expected =
      p.link == kNone ? "" : topo_.portRef(topo_.dirDstPort(topo_.egressOf(r.port)));
  // A neighbour may be named by port ("leaf1:swp1") or by node only.
  bool ok =
      r.neighbor == expected || (r.neighbor.find(':') == std::string::npos && p.link != kNone &&
                                 r.neighbor == topo_.node(topo_.peerNode(r.port)).name);
  lldp_mismatch_[r.port] = !ok;
}

void FabricEvidence::advanceTo(double now) {
  now_ = now;
  links_.advanceTo(now);
  to_node_.advanceTo(now);
  host_side_.advanceTo(now);
  from_port_.advanceTo(now);
  counters_.advanceTo(now);
  lossy_.expire(now - cfg_.horizon_s);
  flow_loss_.expire(now, cfg_.horizon_s);
  if (links_rt_) links_rt_->advanceTo(now);
  background_ = estimateBackground();
}

void FabricEvidence::claim(uint32_t segment, uint64_t owner) {
  auto& s = lossy_.segments()[segment];
  if (s.claimed_by == 0) s.claimed_by = owner;
}

// Background loss per probe, pooled over the probes of most ports, at an
// upper confidence bound so that a short history with few losses cannot
// make ordinary noise look significant. A sick link or host touches a
// minority of sources, or of destinations (a dead host is probed by every
// source), so the round trip's rate is the lower of two pools: without
// the 5 % (at least one) of source ports, and without the 5 % of
// destination hosts, with the most loss. One-way rates come from the
// source ports the round trip keeps (records to a host that does not
// answer carry no one-way split), and a direction never loses more than
// the round trip it is part of.
Background FabricEvidence::estimateBackground() const {
  auto kept = [](size_t n) { return n - std::min(n - 1, (n + 19) / 20); };  // 5 %, at least one
  struct PortLoss {
    Tally rt, fwd, rev;
  };
  std::vector<PortLoss> ports;
  for (size_t i = 0; i < from_port_.size() / 3; ++i) {
    Tally t = from_port_.total(3 * i);
    if (t.n > 0) ports.push_back({t, from_port_.total(3 * i + 1), from_port_.total(3 * i + 2)});
  }
  auto by_rate = [](const Tally& a, const Tally& b) { return a.k * b.n < b.k * a.n; };
  std::sort(ports.begin(), ports.end(),
            [&](const PortLoss& a, const PortLoss& b) { return by_rate(a.rt, b.rt); });
  Tally rt, out, back;
  for (size_t i = 0; i < (ports.empty() ? 0 : kept(ports.size())); ++i) {
    rt.add(ports[i].rt.n, ports[i].rt.k);
    out.add(ports[i].fwd.n, ports[i].fwd.k);
    back.add(ports[i].rev.n, ports[i].rev.k);
  }
  std::vector<Tally> hosts;
  for (NodeId n = 0; n < topo_.nodeCount(); ++n) {
    Tally t = to_node_.total(n);
    if (t.n > 0) hosts.push_back(t);
  }
  std::sort(hosts.begin(), hosts.end(), by_rate);
  Tally to_hosts;
  for (size_t i = 0; i < (hosts.empty() ? 0 : kept(hosts.size())); ++i) {
    to_hosts.add(hosts[i].n, hosts[i].k);
  }

  auto upper = [](Tally t) { return std::max(1e-7, (t.k + 2 * std::sqrt(t.k) + 2) / t.n); };
  Background b;
  if (rt.n <= 0) return b;
  b.round_trip = to_hosts.n > 0 ? std::min(upper(rt), upper(to_hosts)) : upper(rt);
  b.one_way = out.n > 0 && back.n > 0 ? std::min(b.round_trip, std::max(upper(out), upper(back)))
                                      : b.round_trip;
  return b;
}

Tally FabricEvidence::sentFrom(PortId host_port) const {
  const uint32_t slot = host_slot_[host_port];
  return slot == kNone ? Tally{} : from_port_.total(3 * size_t{slot});
}

FabricEvidence::OwnFlows FabricEvidence::ownFlows(PortId host_port) const {
  const uint32_t slot = host_slot_[host_port];
  if (slot == kNone) return {};
  const size_t i = 3 * size_t{slot};
  return {from_port_.total(i), from_port_.total(i + 1), from_port_.total(i + 2)};
}

FabricEvidence::OwnFlows FabricEvidence::allFlows() const {
  OwnFlows sum;
  for (size_t i = 0; i + 2 < from_port_.size(); i += 3) {
    for (auto [into, slot] : {std::pair{&sum.all, i}, {&sum.out, i + 1}, {&sum.back, i + 2}}) {
      const Tally t = from_port_.total(slot);
      into->add(t.n, t.k);
    }
  }
  return sum;
}

bool FabricEvidence::rxErrorsImplicate(DirLinkId d) const {
  const Tally err = counters_.rxErrors(topo_.dirDstPort(d));
  return err.k >= 10 && err.n > 0 && err.k / err.n >= 1e-6;
}

bool FabricEvidence::countersImplicate(DirLinkId d) const {
  return rxErrorsImplicate(d) || carrierChanges(Topology::linkOf(d)) >= 1;
}

double FabricEvidence::nullRate(double n, double n_rt) const {
  if (n <= 0) return background_.one_way;
  const double rt = std::clamp(n_rt / n, 0.0, 1.0);
  return background_.one_way + rt * (background_.round_trip - background_.one_way);
}

double FabricEvidence::carrierChanges(LinkId l) const {
  return std::max(counters_.carrierChanges(topo_.link(l).a),
                  counters_.carrierChanges(topo_.link(l).b));
}

bool FabricEvidence::carrierTransientAt(LinkId l, double t, double window_s) const {
  for (PortId p : {topo_.link(l).a, topo_.link(l).b}) {
    for (const PortCounters::Window& w : counters_.carrierWindows(p)) {
      // A reporter can show a change a window late (an SNMP agent answers
      // from an interface table it caches for seconds), so the change may
      // precede even the sample before the one that showed it.
      if (w.from - window_s < t && t - window_s <= w.to + kCarrierTransientS) return true;
    }
  }
  return false;
}

bool FabricEvidence::changedRecently(LinkId l) const {
  if (carrierChanges(l) >= 1) return true;
  const auto it = routing_changes_.find(l);
  if (it == routing_changes_.end()) return false;
  for (const DrainState::Change& c : it->second) {
    if (c.to >= now_ - cfg_.horizon_s) return true;
  }
  return false;
}

bool FabricEvidence::transientAt(LinkId l, double t, double window_s) const {
  if (carrierTransientAt(l, t, window_s)) return true;
  const auto it = routing_changes_.find(l);
  if (it == routing_changes_.end()) return false;
  for (const DrainState::Change& c : it->second) {
    if (c.from - window_s < t && t - window_s <= c.to + kCarrierTransientS) return true;
  }
  return false;
}

bool FabricEvidence::reportedDown(LinkId l) const {
  auto a = counters_.operUp(topo_.link(l).a), b = counters_.operUp(topo_.link(l).b);
  return (a && !*a) || (b && !*b);
}

bool FabricEvidence::allLinksDown(NodeId host) const {
  for (PortId p : topo_.portsOf(host)) {
    if (topo_.port(p).link == kNone) continue;
    PortId peer = topo_.dirDstPort(topo_.egressOf(p));
    auto up = counters_.operUp(peer);
    if (!up || *up) return false;
  }
  return true;
}

}  // namespace netdiag::analyzer
