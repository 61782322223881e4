#include "analyzer/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "analyzer/explain.h"
#include "analyzer/fabric_evidence.h"
#include "analyzer/incident_tracker.h"
#include "analyzer/stats.h"

namespace netdiag::analyzer {

using namespace topology;
using telemetry::LldpRecord;
using telemetry::PortRecord;
using telemetry::ProbeRecord;

namespace {

// Latency: flows across a link at least this much slower than their peers,
// by at least this many standard scores, make it a latency suspect.
constexpr double kMinAddedLatencyUs = 50;
constexpr double kMinLatencyZ = 8;

// Whole counts and microseconds for summaries; a value from a hostile record
// may be beyond int64, where a cast is undefined.
std::string count(double v) {
  if (std::fabs(v) < 9e18) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

// The engine owns the clock and runs the passes; the evidence, the
// explanation and the incidents are each their own piece (see their headers).
struct Engine::Impl {
  const Topology& topo;
  EngineConfig cfg;
  IngestStats stats;
  FabricEvidence evidence;
  IncidentTracker incidents;
  HostLossClock host_loss;
  double newest = -INFINITY;
  double next_pass = -INFINITY;
  const double page_bar;  // pagingBarNats(cfg)

  Impl(const Topology& t, EngineConfig c)
      : topo(t),
        cfg(c),
        evidence(t, {c.bucket_s, c.horizon_s, c.expected_flows}),
        incidents(c.resolve_after_s, c.horizon_s, c.short_horizon_s,
                  // The most a hypothesis the explanation did not accept
                  // (below the bar to open) could state.
                  withNoFault(1.0, openLlr(t), pagingBarNats(c), c.page_confidence)),
        // What the horizon forgot cannot be an episode's.
        host_loss(c.horizon_s),
        page_bar(pagingBarNats(c)) {}

  // Passes run at boundaries B = k * pass_interval_s of telemetry time, each
  // labeled B and run before the first record later than B is ingested, so
  // it sees exactly the records with t <= B (no look-ahead). A log cut at T
  // thus reproduces every decision labeled <= T: the pass at B = T itself
  // runs in finish() when the log's last record is at T.
  void clock(double t) {
    if (t > newest) {
      const double step = cfg.pass_interval_s;
      if (newest == -INFINITY) {
        next_pass = std::ceil(t / step) * step;
      } else if (t > next_pass) {
        double b = std::ceil(t / step) * step - step;  // the last boundary before t
        pass(b);
        next_pass = b + step;
      }
      newest = t;
    } else if (t < newest) {
      if (newest - t <= cfg.late_tolerance_s) {
        ++stats.late;
      } else {
        ++stats.too_late;
      }
    }
  }

  void pass(double now) {
    const auto started = std::chrono::system_clock::now();
    const auto t0 = std::chrono::steady_clock::now();
    decide(now);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stats.pass_seconds += took;
    stats.last_pass_seconds = took;
    stats.last_pass_started = std::chrono::duration<double>(started.time_since_epoch()).count();
    const auto& bounds = IngestStats::kPassBounds;  // the first bound >= took
    ++stats.pass_buckets[std::lower_bound(bounds.begin(), bounds.end(), took) - bounds.begin()];
  }

  void decide(double now) {
    ++stats.passes;
    evidence.advanceTo(now);
    incidents.beginPass();
    const ExplainConfig explain{
        cfg.min_loss, static_cast<size_t>(std::llround(cfg.short_horizon_s / cfg.bucket_s)),
        cfg.busy_host_max_s, &host_loss};
    for (const Hypothesis& h : explainLosses(evidence, explain)) {
      timeHostLoss(h, now);
      // Host-side loss explains its flows' losses away from the links they
      // crossed (explain.h); it is not an incident.
      if (h.key.kind == Key::kHostSide) continue;
      trackAccessFlows(h.key, now);
      const auto paged = incidents.pagedLoss(h.key, now);
      Finding f = lossFinding(h);
      if (paged) {
        f.recovering = recentlyBelow(evidence, h.key, paged->loss, paged->since, h.background);
      } else if (const auto opened = incidents.pendingSince(h.key, now); opened && f.mayPage()) {
        // The buckets after the one it opened in: loss that stopped there
        // (a start-up burst) is over, however strong the horizon holds it.
        // But a fault that began later on the same link (its rate's stretch
        // pages on its own) is judged from its onset: the clean time
        // between would reject its rate and hold it forever.
        double since = *opened + cfg.bucket_s;
        if (h.onset_llr >= page_bar) since = std::max(since, h.onset);
        f.ended =
            recentlyBelow(evidence, h.key, recoveryFloor(f.loss_ratio.value_or(0), f.loss_interval),
                          since, h.background);
      }
      if (incidents.observe(h.key, f, now)) {
        for (uint32_t i : h.certain) evidence.claim(i, encodeKey(h.key));
      }
    }
    latencyFindings(now);
    counterFindings(now);
    miscablingFindings(now);
    incidents.endPass(now);
    host_loss.endPass(now, [this](NodeId host, double last, double rate) {
      return recentlyBelow(evidence, {Key::kHostSide, host}, rate, last + cfg.bucket_s,
                           evidence.background());
    });
  }

  // A host's flows lose now (its access link's hypothesis, or its own
  // host-side one, affirmed by the short horizon): the busy-host clock runs.
  void timeHostLoss(const Hypothesis& h, double now) {
    if (!lossNow(h.evidence)) return;
    if (h.key.kind == Key::kHostSide) {
      host_loss.lossy(h.key.id, now, h.loss);
    } else if (h.key.kind == Key::kLink) {
      for (NodeId n : {topo.dirSrcNode(h.key.id), topo.dirDstNode(h.key.id)}) {
        if (topo.node(n).isHost()) host_loss.lossy(n, now, h.loss);
      }
    }
  }

  // An access link hypothesis is weighed, from the next pass on, on its
  // host port's flows one by one too (FlowLoss).
  void trackAccessFlows(const Key& key, double now) {
    if (key.kind != Key::kLink) return;
    const topology::Topology& t = evidence.topology();
    if (t.node(t.dirSrcNode(key.id)).isHost()) evidence.trackFlows(t.dirSrcPort(key.id), now);
    if (t.node(t.dirDstNode(key.id)).isHost()) evidence.trackFlows(t.dirDstPort(key.id), now);
  }

  Finding lossFinding(const Hypothesis& h) const {
    const Candidate& c = h.evidence;
    Finding f;
    Evidence& ev = f.evidence;
    ev.method = "binomial likelihood ratio with greedy explaining-away";
    ev.probes = c.n;
    ev.lost = c.k;
    ev.lossy_flow_windows = c.segments;
    ev.background_loss = c.q0;
    ev.llr_nats = c.llr;
    if (h.key.kind == Key::kLink) {
      f.kind = classifyLink(h.key.id, c, ev);
      f.both_directions = f.kind == IncidentKind::kLinkDown || f.kind == IncidentKind::kLinkFlap;
      ev.summary = topo.dirLinkName(h.key.id) + ": " + count(c.k) + " of " + count(c.n) +
                   " probes lost on flows known to cross it, after explaining away others";
    } else {
      f.kind = IncidentKind::kHostUnreachable;
      ev.summary = "probes to " + topo.node(h.key.id).name + " lost on every path to it";
    }
    for (const Key& k : h.candidates) {
      f.candidates.push_back(k.kind == Key::kLink ? Suspect{k.id, kNone} : Suspect{kNone, k.id});
    }
    if (!f.candidates.empty()) {
      ev.summary = "one of " + std::to_string(f.candidates.size() + 1) + ": " + ev.summary +
                   "; not told apart from " + h.alt_name;
    } else if (h.host_outlasted_s > 0) {
      // The one thing that told the cable from its host: say so first.
      const NodeId host = topo.node(topo.dirSrcNode(h.key.id)).isHost() ? topo.dirSrcNode(h.key.id)
                                                                        : topo.dirDstNode(h.key.id);
      ev.ruled_out = Evidence::RuledOut{
          "host " + topo.node(host).name + " itself (busy)", c.llr,
          "its flows have lost for " + count(h.host_outlasted_s) +
              " s without a break, longer than a busy host lasts (--busy-host-max " +
              count(cfg.busy_host_max_s) + " s)"};
    } else if (!h.alt_name.empty()) {
      ev.ruled_out = Evidence::RuledOut{h.alt_name, h.alt_llr, "explains less of the evidence"};
    }
    f.confidence = withNoFault(h.confidence, c.llr, page_bar, cfg.page_confidence);
    f.loss_ratio = h.loss;
    f.loss_interval = h.loss_interval;
    const bool strong =
        h.confidence >= cfg.page_confidence && c.segments >= kMinLossySegments && c.llr >= page_bar;
    f.strength = strong ? Finding::Strength::kStrong : Finding::Strength::kWeak;
    return f;
  }

  IncidentKind classifyLink(DirLinkId d, const Candidate& c, Evidence& ev) const {
    const PortId src = topo.dirSrcPort(d), dst = topo.dirDstPort(d);
    const PortCounters& counters = evidence.counters();
    const double carrier = evidence.carrierChanges(Topology::linkOf(d));
    Tally err = counters.rxErrors(dst);
    Tally drops = counters.txDrops(src);
    ev.counters = {{"rx_errors_at_" + topo.portRef(dst), err.k},
                   {"tx_drops_at_" + topo.portRef(src), drops.k},
                   {"carrier_changes", carrier}};
    if (carrier >= FabricEvidence::kFlapChanges) return IncidentKind::kLinkFlap;
    if (evidence.reportedDown(Topology::linkOf(d))) return IncidentKind::kLinkDown;
    if (evidence.rxErrorsImplicate(d)) return IncidentKind::kLinkCorruption;
    if (drops.n > 0 && drops.k / drops.n >= std::max(kMinTxDropRate, 0.2 * c.loss)) {
      return IncidentKind::kCongestion;
    }
    if (blackholeShare(evidence, d) >= 0.7 && c.loss < 0.9) return IncidentKind::kLinkBlackhole;
    return IncidentKind::kLinkLoss;
  }

  // Latency-only degradation, for links no loss hypothesis already covers.
  void latencyFindings(double now) {
    LatencyEvidence& latency = evidence.latency();
    latency.advanceTo(now, cfg.horizon_s);
    EcmpShares& shares = evidence.shares();
    auto share = [&shares](NodeId from, NodeId to, DirLinkId d) {
      return shares.share(from, to, d);
    };
    const double log_m = logHypotheses(topo);
    for (const SlowLink& s : latency.slowLinks(kMinAddedLatencyUs, kMinLatencyZ, share, topo)) {
      if (s.link == kNone) continue;  // a busy host's stack: its own business
      Key key{Key::kLink, s.link};
      if (incidents.seen(key)) continue;
      Finding f;
      f.kind = IncidentKind::kLinkLatency;
      // z standard scores of a mean are a log-likelihood ratio of z^2 / 2.
      const double alt_only = posterior(s.z * s.z / 2, log_m, -INFINITY);
      f.confidence = withNoFault(alt_only, s.z * s.z / 2, page_bar, cfg.page_confidence);
      f.loss_ratio = 0;
      f.evidence.method = "excess round-trip time over same-length paths, explained away";
      f.evidence.summary = topo.dirLinkName(s.link) + ": flows crossing it are " +
                           count(s.added_us) + " us slower than flows on paths of the same length";
      f.evidence.added_latency_us = s.added_us;
      f.evidence.z = s.z;
      f.evidence.records = s.records;
      f.strength = alt_only >= cfg.page_confidence && s.z * s.z / 2 >= page_bar
                       ? Finding::Strength::kStrong
                       : Finding::Strength::kWeak;
      if (const NodeId host = slowHostAlternative(s); host != kNone) {
        f.candidates.push_back(Suspect{kNone, host});
        f.evidence.summary = "one of 2: " + f.evidence.summary + "; not told apart from host " +
                             topo.node(host).name + " itself (a stack answering late)";
      }
      incidents.observe(key, f, now);
    }
  }

  // A slow access link is also its host's own stack answering late: a busy
  // host delays every flow it sends or answers, and every round trip of
  // the host crosses both directions of its access link, so round-trip
  // times alone cannot tell the cable from the host. The host's other
  // ports can: if their flows are not slow (the host's delay would be on
  // them too), it is the cable. Returns the host while it stays in the
  // group, kNone otherwise.
  NodeId slowHostAlternative(const SlowLink& s) const {
    const bool into_host = topo.node(topo.dirDstNode(s.link)).isHost();
    if (!into_host && !topo.node(topo.dirSrcNode(s.link)).isHost()) return kNone;
    const PortId host_port = into_host ? topo.dirDstPort(s.link) : topo.dirSrcPort(s.link);
    const NodeId host = topo.port(host_port).node;
    const LatencyEvidence& latency = evidence.latency();
    Tally others;
    for (PortId p : topo.portsOf(host)) {
      if (p == host_port) continue;
      // Every round trip of that port leaves by its egress (a probe out, or
      // the reply to one): one direction counts each record once.
      if (const DirLinkId d = topo.egressOf(p); d != kNone) {
        const Tally t = latency.excessOf(d);
        others.add(t.n, t.k);
      }
    }
    if (others.n < 10) return host;
    // The host hypothesis puts s.added_us on the other ports' flows too:
    // refuted when their mean is that far below it, by ln 99 nats (z^2 / 2).
    const double sigma = std::max(latency.sigma(), 1e-9);
    const double short_z = (s.added_us - others.k / others.n) * std::sqrt(others.n) / sigma;
    return short_z * short_z / 2 >= std::log(99.0) && short_z > 0 ? kNone : host;
  }

  // Counter evidence alone: a link reported down on either end, or flapping.
  void counterFindings(double now) {
    for (LinkId l = 0; l < topo.linkCount(); ++l) {
      const Link& link = topo.link(l);
      const double carrier = evidence.carrierChanges(l);
      const bool down = evidence.reportedDown(l);
      const bool flapping = carrier >= FabricEvidence::kFlapChanges;
      if (!down && !flapping) continue;
      // The probes' loss can reach the engine a pass or two before the
      // counters do (SNMP polls late): a direction already open on that loss
      // is this fault and takes its kind, rather than staying beside it as
      // a second fault. A direction a hypothesis saw this pass was
      // classified with the counters already.
      Key key{Key::kLink, 2 * l}, rkey{Key::kLink, 2 * l + 1};
      std::vector<Key> keys;
      for (const Key& k : {key, rkey}) {
        if (incidents.isOpen(k) && !incidents.seen(k)) keys.push_back(k);
      }
      if (keys.empty() && !incidents.seen(key) && !incidents.seen(rkey)) keys.push_back(key);
      if (keys.empty()) continue;
      // Every link of a host down is usually the host going down (a reboot):
      // said in the evidence, while the incident names what is certain, the
      // link (formats.md §4 counts it for a rebooting host too).
      NodeId host = kNone;
      for (PortId p : {link.a, link.b}) {
        if (topo.node(topo.port(p).node).isHost()) host = topo.port(p).node;
      }
      Finding f;
      f.kind = flapping ? IncidentKind::kLinkFlap : IncidentKind::kLinkDown;
      f.both_directions = true;
      f.confidence = 0.999;
      if (down) f.loss_ratio = 1.0;
      f.evidence.method = "port counters";
      f.evidence.summary = topo.portRef(link.a) + " / " + topo.portRef(link.b) +
                           (down ? " reported oper down" : " carrier flapping");
      f.evidence.carrier_changes = carrier;
      if (down && host != kNone && evidence.allLinksDown(host)) {
        f.evidence.host = "every link of " + topo.node(host).name +
                          " is down: the host itself is likely down or rebooting";
      }
      f.strength = Finding::Strength::kCertain;
      for (const Key& k : keys) incidents.observe(k, f, now);
    }
  }

  // LLDP: ports whose neighbour disagrees with the topology, one incident per
  // node with such ports.
  void miscablingFindings(double now) {
    std::map<NodeId, std::vector<PortId>> bad;
    for (PortId p = 0; p < topo.portCount(); ++p) {
      if (evidence.lldpMismatch(p)) bad[topo.port(p).node].push_back(p);
    }
    for (auto& [node, ports] : bad) {
      Finding f;
      f.kind = IncidentKind::kMiscabling;
      f.ports = ports;
      f.confidence = 0.99;
      f.evidence.method = "LLDP against the topology";
      for (PortId p : ports) {
        f.evidence.ports.push_back({topo.portRef(p), evidence.lldpNeighbor(p),
                                    topo.port(p).link == kNone
                                        ? "(unconnected)"
                                        : topo.portRef(topo.dirDstPort(topo.egressOf(p)))});
      }
      f.strength = Finding::Strength::kCertain;
      incidents.observe({Key::kPorts, node}, f, now);
    }
  }

  void finish() {
    if (newest != -INFINITY && newest == next_pass) {
      pass(newest);
      next_pass += cfg.pass_interval_s;
    }
  }
};

std::vector<std::string> validate(const EngineConfig& c) {
  std::vector<std::string> out;
  auto positive = [&out](double v, const char* what) {
    if (!(std::isfinite(v) && v > 0))
      out.push_back(std::string(what) + " must be a positive number");
    return std::isfinite(v) && v > 0;
  };
  if (positive(c.bucket_s, "bucket width") && positive(c.horizon_s, "horizon") &&
      positive(c.short_horizon_s, "short horizon")) {
    const double buckets = c.horizon_s / c.bucket_s, short_buckets = c.short_horizon_s / c.bucket_s;
    auto whole = [](double v) { return std::abs(v - std::round(v)) < 1e-9 * std::max(1.0, v); };
    char width[32];
    std::snprintf(width, sizeof width, "%g", c.bucket_s);
    if (!whole(buckets) || buckets < 2 || buckets > 100000) {
      out.push_back(std::string("horizon must be 2 to 100000 buckets of ") + width + " s");
    }
    if (!whole(short_buckets) || short_buckets < 1 || c.short_horizon_s > c.horizon_s) {
      out.push_back(std::string("short horizon must be a whole number of ") + width +
                    " s buckets, no longer than the horizon");
    }
  }
  positive(c.pass_interval_s, "pass interval");
  if (!(std::isfinite(c.resolve_after_s) && c.resolve_after_s >= 0)) {
    out.push_back("resolve-after must be a number of seconds >= 0");
  }
  if (!(std::isfinite(c.busy_host_max_s) && c.busy_host_max_s >= 0)) {
    out.push_back("busy-host-max must be a number of seconds >= 0");
  }
  if (!(c.page_confidence > 0.5 && c.page_confidence < 1)) {
    out.push_back("paging confidence must be between 0.5 and 1");
  }
  if (!(c.false_pages_per_link_hour > 0 && c.false_pages_per_link_hour < 1)) {
    out.push_back("false-page budget must be between 0 and 1 per directed link and hour");
  }
  return out;
}

double pagingBarNats(const EngineConfig& c) {
  const double passes_per_hour = 3600.0 / std::max(c.pass_interval_s, 1e-3);
  return std::log(passes_per_hour / c.false_pages_per_link_hour);
}

Engine::Engine(const Topology& topo, EngineConfig config)
    : impl_(std::make_unique<Impl>(topo, config)) {}
Engine::~Engine() = default;

void Engine::onProbe(const ProbeRecord& r) {
  impl_->clock(r.t);
  ++impl_->stats.probes;
  impl_->evidence.addProbe(r);
}
void Engine::prefetch(const ProbeRecord& r) const { impl_->evidence.prefetch(r); }
void Engine::onPort(const PortRecord& r) {
  impl_->clock(r.t);
  ++impl_->stats.ports;
  impl_->evidence.addPort(r);
}
void Engine::onLldp(const LldpRecord& r) {
  impl_->clock(r.t);
  ++impl_->stats.lldp;
  impl_->evidence.addLldp(r);
}

Report Engine::report() const {
  Report r;
  r.generated_at = impl_->newest == -INFINITY ? 0 : impl_->newest;
  r.incidents = impl_->incidents.all();
  return r;
}
const IngestStats& Engine::stats() const { return impl_->stats; }
void Engine::finish() { impl_->finish(); }
void Engine::advanceTo(double t) {
  if (t > impl_->newest) impl_->clock(t);
}

LinkEvidence Engine::linkEvidence(topology::DirLinkId d) const {
  const FabricEvidence& ev = impl_->evidence;
  Tally t = ev.links().total(d);
  const double rt = ev.linksRoundTrip() ? ev.linksRoundTrip()->total(d).n : 0;
  return {t.n, t.k, ev.nullRate(t.n, rt)};
}

LinkCounters Engine::linkCounters(topology::LinkId link, double seconds) const {
  const EngineConfig& c = impl_->cfg;
  const auto ring = static_cast<size_t>(std::llround(c.horizon_s / c.bucket_s));
  const size_t buckets = std::clamp<size_t>(
      static_cast<size_t>(std::ceil(std::max(0.0, seconds) / c.bucket_s)), 1, ring);
  const PortCounters& counters = impl_->evidence.counters();
  LinkCounters out;
  out.window_s = static_cast<double>(buckets) * c.bucket_s;
  const topology::Link& l = impl_->topo.link(link);
  for (topology::PortId p : {l.a, l.b}) {
    out.rx_errors += counters.recentRxErrors(p, buckets);
    out.carrier_changes += counters.recentCarrierChanges(p, buckets);
    const double last = counters.lastReport(p);
    out.reported = out.reported || (last >= 0 && last > impl_->newest - out.window_s);
  }
  return out;
}

double Engine::backgroundLoss() const { return impl_->evidence.background().round_trip; }

void Engine::setDrained(const DrainState& drains) {
  impl_->evidence.shares().setDown(drains.out);
  impl_->evidence.setRoutingChanges(drains.changes);
  impl_->incidents.holdLinks(drains.out);
  for (const auto& [id, at] : drains.mitigated) impl_->incidents.mitigate(id, at);
}

void Engine::restore(const std::vector<Incident>& incidents, bool evidence_replayed) {
  impl_->incidents.restore(
      impl_->topo, incidents,
      evidence_replayed ? IncidentTracker::Evidence::kReplayed : IncidentTracker::Evidence::kLost);
}

void Engine::onIncidentChange(std::function<void(const Incident&)> callback) {
  impl_->incidents.onChange(std::move(callback));
}

}  // namespace netdiag::analyzer
