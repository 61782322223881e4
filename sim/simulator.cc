#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <queue>
#include <unordered_map>

#include "sim/resolve.h"
#include "sim/rng.h"
#include "topology/ecmp.h"

namespace netdiag::sim {

using namespace topology;
using telemetry::LldpRecord;
using telemetry::PortRecord;
using telemetry::ProbeRecord;

namespace {

// Purposes of random draws, so that two uses never share a stream.
enum Purpose : uint64_t {
  kProbe = 1,
  kPhase,
  kPps,
  kReset,
  kPathFlow,
  kPartialFlow,
  kReplyFlow,
  kRedraw,
  kBusy
};

// The probes' UDP destination port (the responder's); a reply goes back
// from it to the flow's source port.
constexpr uint16_t kProbePort = 33434;

// CRC-32C (Castagnoli), reflected, table-driven: the kind of hash switch
// ASICs apply to header fields for ECMP.
struct Crc32c {
  uint32_t table[256];
  constexpr Crc32c() : table() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      table[i] = c;
    }
  }
  uint32_t update(uint32_t crc, uint64_t value, int bytes) const {
    for (int i = 0; i < bytes; ++i) {
      crc = table[(crc ^ static_cast<uint32_t>(value >> (8 * i))) & 0xffu] ^ (crc >> 8);
    }
    return crc;
  }
};
constexpr Crc32c kCrc32c;

// Uniform in [0, 1) from a hash.
double unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

struct SimFlow {
  PortId src, dst;
  uint16_t sport;
  uint32_t phase;  // which step of the window cycle its source reports on
  double probes_per_window;
  uint32_t fwd_off = 0, fwd_len = 0, rev_off = 0, rev_len = 0;
  bool routable = false;
};

struct LateRecord {
  double release;
  uint64_t order;  // ties keep arrival order
  ProbeRecord record;
  bool operator>(const LateRecord& o) const {
    return release != o.release ? release > o.release : order > o.order;
  }
};

double overlap(double a, double b, double lo, double hi) {
  return std::max(0.0, std::min(b, hi) - std::max(a, lo));
}

}  // namespace

struct Simulator::Impl {
  const Topology& topo;
  const Scenario& scenario;
  const planner::Plan& plan;
  SimOptions options;
  bool crc_hash = false;
  bool flow_paths = false;  // path knowledge per flow, not per record
  bool has_busy = false;
  std::optional<planner::Plan> redrawn;  // the plan of the current epoch, when peers are re-drawn
  uint64_t epoch = 0;
  // The plan whose flows are in `flows` (with its version and epoch).
  const planner::Plan* playing = nullptr;
  uint64_t playing_version = 0, playing_epoch = 0;
  std::vector<ResolvedFault> faults;
  Truth truth;
  SimStats stats;
  Router router;

  double window = 5, step = 1;
  uint32_t phases = 5;
  std::vector<SimFlow> flows;
  std::vector<DirLinkId> paths;
  std::vector<bool> routed_down;  // per link, as the current routing sees it

  // Per-window effective state of each directed link.
  std::vector<double> loss, latency_us, queue_us;
  std::vector<DirLinkId> touched;
  std::unordered_map<DirLinkId, std::vector<const ResolvedFault*>> blackholes;

  // Counters.
  std::vector<double> pps;  // per port
  PortId reset_port = kNone;
  double reset_time = 0;

  std::priority_queue<LateRecord, std::vector<LateRecord>, std::greater<>> late;
  uint64_t late_order = 0;
  ProbeRecord rec;  // reused to avoid allocations

  Impl(const Topology& t, const Scenario& s, const planner::Plan& p, const SimOptions& o)
      : topo(t), scenario(s), plan(p), options(o), router(t) {}

  double end() const { return scenario.start + scenario.duration_s; }

  // ---- flows and routing -------------------------------------------------

  void buildFlows() {
    window = scenario.window_s;
    phases = static_cast<uint32_t>(std::clamp(std::lround(window), 1l, 10l));
    step = window / phases;
    crc_hash = scenario.ecmp_hash == "crc";
    flow_paths = scenario.noise.path_knowledge == "flow";
    for (const ResolvedFault& f : faults) has_busy = has_busy || f.kind == "busy_host";
    flowsOf(plan);
    playing = &plan;
    playing_version = plan.version;
    routed_down.assign(topo.linkCount(), false);
    loss.assign(topo.dirLinkCount(), scenario.noise.background_loss);
    latency_us.assign(topo.dirLinkCount(), 0);
    queue_us.assign(topo.dirLinkCount(), 0);
    for (const ResolvedFault& f : faults) {
      if (f.kind == "link_blackhole") blackholes[f.link].push_back(&f);
    }
    reroute();
  }

  // The flows of `p`; each host keeps its reporting phase.
  void flowsOf(const planner::Plan& p) {
    flows.clear();
    for (const planner::PortPlan& pp : p.ports) {
      uint32_t phase =
          static_cast<uint32_t>(hashKeys(options.seed, kPhase, topo.port(pp.src).node) % phases);
      for (const planner::Flow& f : pp.flows) {
        flows.push_back(
            SimFlow{pp.src, f.dst, f.source_port, phase, pp.probes_per_second_per_flow * window});
      }
    }
    stats.flows = std::max<uint64_t>(stats.flows, flows.size());
  }

  // Peers re-drawn every `redraw_s`: epoch k > 0 plays the plan drawn with
  // a seed derived from (plan seed, k); epoch 0 is the given plan. The epoch
  // of a window is that of its start. options.plan_at may replace either.
  void updatePlan(double a) {
    if (scenario.redraw_s > 0) {
      // A tiny redraw_s makes the quotient beyond uint64 (a cast would be
      // undefined); epochs that far apart are all "new" anyway.
      const double k = std::floor((a - scenario.start) / scenario.redraw_s);
      const auto e = k < 1.8e19 ? static_cast<uint64_t>(std::max(0.0, k)) : UINT64_MAX;
      if (e != epoch) {
        epoch = e;
        if (e > 0)
          redrawn = planner::makePlan(topo, plan.budget, {}, hashKeys(plan.seed, kRedraw, e));
      }
    }
    const planner::Plan& base = epoch > 0 ? *redrawn : plan;
    const planner::Plan* want = options.plan_at ? options.plan_at(base, a) : nullptr;
    if (!want) want = &base;
    if (want == playing && want->version == playing_version && epoch == playing_epoch) return;
    playing = want;
    playing_version = want->version;
    playing_epoch = epoch;
    flowsOf(*want);
    reroute();
  }

  // The next hop index among `n` at switch `u` for a flow: the scenario's
  // hash family over the 5-tuple (addresses stand in as port ids).
  size_t pick(NodeId u, size_t n, uint64_t mix_key, PortId src, PortId dst, uint16_t sport,
              uint16_t dport) const {
    if (!crc_hash) return hashKeys(options.ecmp_seed, mix_key, u) % n;
    const uint64_t sw = mix64(options.ecmp_seed ^ (uint64_t{u} * 0x9e3779b97f4a7c15ull));
    uint32_t h = static_cast<uint32_t>(sw);
    h = kCrc32c.update(h, src, 4);
    h = kCrc32c.update(h, dst, 4);
    h = kCrc32c.update(h, sport, 2);
    h = kCrc32c.update(h, dport, 2);
    h = kCrc32c.update(h, 17, 1);  // UDP
    const unsigned rot = static_cast<unsigned>(sw >> 32) % 32;
    h = rot ? (h >> rot) | (h << (32 - rot)) : h;
    return ((h ^ (h >> 16)) & 0xffffu) % n;
  }

  // One direction of a flow through the switches' ECMP hash. False when the
  // routed topology has no path.
  bool route(PortId src, PortId dst, uint16_t sport, uint16_t dport, uint64_t key,
             std::vector<DirLinkId>& hops) {
    DirLinkId first = topo.egressOf(src);
    DirLinkId last = topo.ingressOf(dst);
    if (first == kNone || last == kNone || routed_down[Topology::linkOf(first)] ||
        routed_down[Topology::linkOf(last)]) {
      return false;
    }
    paths.push_back(first);
    NodeId u = topo.dirDstNode(first);
    if (topo.node(u).isHost()) return topo.dirDstPort(first) == dst;
    const NodeId target = topo.dirSrcNode(last);
    for (size_t guard = 0; u != target; ++guard) {
      hops.clear();
      router.nextHops(u, target, hops);
      if (hops.empty() || guard > 64) return false;
      DirLinkId d = hops[pick(u, hops.size(), key, src, dst, sport, dport)];
      paths.push_back(d);
      u = topo.dirDstNode(d);
    }
    paths.push_back(last);
    return true;
  }

  void reroute() {
    paths.clear();
    std::vector<DirLinkId> hops;
    for (SimFlow& f : flows) {
      size_t mark = paths.size();
      f.fwd_off = static_cast<uint32_t>(paths.size());
      bool ok = route(f.src, f.dst, f.sport, kProbePort, hashKeys(f.src, f.dst, f.sport, 0), hops);
      f.fwd_len = static_cast<uint32_t>(paths.size() - f.fwd_off);
      f.rev_off = static_cast<uint32_t>(paths.size());
      ok = ok && route(f.dst, f.src, kProbePort, f.sport, hashKeys(f.dst, f.src, f.sport, 1), hops);
      f.rev_len = static_cast<uint32_t>(paths.size() - f.rev_off);
      f.routable = ok;
      if (!ok) {
        paths.resize(mark);
        f.fwd_len = f.rev_len = 0;
        f.rev_off = f.fwd_off;
      }
    }
  }

  // Routing lags by at most one window: a link down when the window starts
  // is out of the routed graph for all of it (flows use the other paths,
  // even if it comes back mid-window); a link up at the start keeps its
  // flows, which lose the probes sent while it is down.
  void updateRouting(double a) {
    std::vector<bool> down(topo.linkCount(), false);
    for (const ResolvedFault& f : faults) {
      if (f.linkDownAt(a)) down[Topology::linkOf(f.link)] = true;
    }
    if (down == routed_down) return;
    for (LinkId l = 0; l < topo.linkCount(); ++l) {
      if (down[l] != routed_down[l]) router.setLinkDown(l, down[l]);
    }
    routed_down = std::move(down);
    reroute();
    ++stats.reroutes;
  }

  // ---- per-window link state --------------------------------------------

  void touch(DirLinkId d) { touched.push_back(d); }

  void updateLinkState(double a, double b) {
    for (DirLinkId d : touched) {
      loss[d] = scenario.noise.background_loss;
      latency_us[d] = 0;
      queue_us[d] = 0;
    }
    touched.clear();
    for (const ResolvedFault& f : faults) {
      if (f.link == kNone) continue;
      double frac = f.activeFraction(a, b);
      if (frac <= 0) continue;
      const DirLinkId d = f.link;
      if (f.kind == "link_loss" || f.kind == "link_corruption" || f.kind == "congestion") {
        loss[d] = std::min(1.0, loss[d] + f.loss * frac);
        if (f.kind == "congestion") queue_us[d] += 150 * frac;
        touch(d);
      } else if (f.kind == "link_latency") {
        latency_us[d] += f.latency_us * frac;
        touch(d);
      } else if (f.kind == "link_down" || f.kind == "link_flap") {
        double down = f.kind == "link_down" ? frac : f.flapDownFraction(a, b);
        for (DirLinkId x : {d, Topology::reverse(d)}) {
          loss[x] = std::min(1.0, loss[x] + down);
          touch(x);
        }
      }
    }
  }

  // Fraction of (a, b] during which host `n` is rebooting, or its responder dead.
  double hostDownFraction(NodeId n, double a, double b, bool responder_too) const {
    double frac = 0;
    for (const ResolvedFault& f : faults) {
      if (f.host != n) continue;
      if (f.kind == "host_reboot" || (responder_too && f.kind == "dead_responder")) {
        frac = std::max(frac, f.activeFraction(a, b));
      }
    }
    return frac;
  }

  // A busy host over (a, b]: the share of probes its responder (or its
  // prober, for its own flows) loses — dropped, or answered past the probe
  // timeout — and the extra p99 latency of the rest.
  void hostBusy(NodeId n, double a, double b, double& lost, double& latency) const {
    for (const ResolvedFault& f : faults) {
      if (f.kind != "busy_host" || f.host != n) continue;
      const double frac = f.activeFraction(a, b);
      lost = std::min(1.0, lost + (f.loss + f.delay) * frac);
      latency += f.latency_us * frac;
    }
  }

  bool hostRebootingAt(NodeId n, double t) const {
    for (const ResolvedFault& f : faults) {
      if (f.host == n && f.kind == "host_reboot" && f.activeAt(t)) return true;
    }
    return false;
  }

  // ---- probe records -----------------------------------------------------

  // Survival probability over a path, and the first blackholed hop (or -1).
  double survival(size_t flow_index, uint32_t off, uint32_t len, double a, double b,
                  int& blackholed_at) const {
    double s = 1;
    blackholed_at = -1;
    for (uint32_t i = 0; i < len; ++i) {
      DirLinkId d = paths[off + i];
      s *= 1.0 - loss[d];
      if (blackholes.empty()) continue;
      auto it = blackholes.find(d);
      if (it == blackholes.end()) continue;
      for (const ResolvedFault* bh : it->second) {
        double u = static_cast<double>(hashKeys(bh->salt, flow_index) >> 11) * 0x1.0p-53;
        double frac = bh->activeFraction(a, b);
        if (u < bh->share && frac > 0) {
          s *= 1.0 - frac;
          if (blackholed_at < 0) blackholed_at = static_cast<int>(i);
        }
      }
    }
    return s;
  }

  void emitProbe(size_t flow_index, uint64_t step_index, double t, telemetry::RecordSink& sink) {
    const SimFlow& f = flows[flow_index];
    const Noise& z = scenario.noise;
    const double a = t - window, b = t;
    const NodeId src_node = topo.port(f.src).node;
    const NodeId dst_node = topo.port(f.dst).node;
    if (hostRebootingAt(src_node, t)) return;  // its agent is down
    Rng rng(hashKeys(options.seed, kProbe, flow_index, step_index));

    // Probes sent in the window: the rate's fractional part by chance, less
    // the part of the window the sender itself was rebooting.
    double expected = f.probes_per_window * (1.0 - hostDownFraction(src_node, a, b, false));
    auto sent = static_cast<uint32_t>(expected);
    if (rng.uniform() <= expected - sent) ++sent;
    if (sent == 0) return;

    int bh_fwd = -1, bh_rev = -1;
    double fwd = 0, rev = 0;
    if (f.routable) {
      fwd = survival(flow_index, f.fwd_off, f.fwd_len, a, b, bh_fwd);
      rev = survival(flow_index, f.rev_off, f.rev_len, a, b, bh_rev);
    }
    const double dst_down = hostDownFraction(dst_node, a, b, true);
    const uint32_t lost_fwd = rng.binomial(sent, 1.0 - fwd);
    const uint32_t arrived = sent - lost_fwd;
    const uint32_t lost_at_dst = rng.binomial(arrived, dst_down);
    const uint32_t replied = arrived - lost_at_dst;
    uint32_t lost_rev = rng.binomial(replied, 1.0 - rev);
    uint32_t back = replied - lost_rev;
    // A busy host at either end loses a share of the probes after the
    // responder counted them, so they show as lost on the way back.
    double busy_latency = 0;
    if (has_busy) {
      double busy_dst = 0, busy_src = 0;
      hostBusy(dst_node, a, b, busy_dst, busy_latency);
      hostBusy(src_node, a, b, busy_src, busy_latency);
      const double keep = (1.0 - busy_dst) * (1.0 - busy_src);
      if (keep < 1 && back > 0) {
        Rng busy_rng(hashKeys(options.seed, kBusy, flow_index, step_index));
        const uint32_t busy_lost = busy_rng.binomial(back, 1.0 - keep);
        lost_rev += busy_lost;
        back -= busy_lost;
      }
    }

    if (rng.uniform() < z.missing_records) {
      ++stats.dropped_records;
      return;
    }

    ProbeRecord& r = rec;
    r.t = t;
    r.src = f.src;
    r.dst = f.dst;
    r.flow = f.sport;
    r.window_s = window;
    r.sent = sent;
    r.lost = sent - back;
    r.lost_fwd.reset();
    r.lost_rev.reset();
    // The responder's echo tells the split, unless nothing came back or the
    // responder itself was away (its count would be wrong).
    if (back > 0 && lost_at_dst == 0 && rng.uniform() < z.one_way) {
      r.lost_fwd = lost_fwd;
      r.lost_rev = lost_rev;
    }
    r.rtt_us_p50 = r.rtt_us_p99 = NAN;
    if (back > 0) {
      double base = z.host_latency_us + z.hop_latency_us * (f.fwd_len + f.rev_len);
      double queue = 0;
      for (uint32_t i = 0; i < f.fwd_len + f.rev_len; ++i) {
        DirLinkId d = paths[f.fwd_off + i];
        base += latency_us[d];
        queue += queue_us[d];
      }
      r.rtt_us_p50 = base * (1.0 + z.rtt_jitter * std::abs(rng.normal()) * 0.5) + 0.2 * queue;
      r.rtt_us_p99 = r.rtt_us_p50 * (1.2 + 0.6 * rng.uniform()) + queue;
      if (busy_latency > 0) {
        r.rtt_us_p50 += 0.1 * busy_latency;
        r.rtt_us_p99 += busy_latency;
      }
    }

    // Path discovery: traceroute on the flow's own 5-tuple. It fails more
    // often on lossy flows and stops before a black hole.
    r.path.clear();
    r.path_partial = false;
    r.reply_path.clear();
    if (flow_paths) {
      // Per flow: the same answer every window (keyed by the flow, not the
      // window), so a flow whose traceroute fails never has a path.
      const uint64_t id = hashKeys(f.src, f.dst, f.sport);
      if (f.routable && unit(hashKeys(options.seed, kPathFlow, id)) >= z.path_unknown) {
        uint32_t len = f.fwd_len;
        const uint64_t cut = hashKeys(options.seed, kPartialFlow, id);
        if (bh_fwd >= 0) {
          len = static_cast<uint32_t>(bh_fwd);
          r.path_partial = true;
        } else if (len > 1 && unit(cut) < z.path_partial) {
          len = 1 + static_cast<uint32_t>(mix64(cut) % (len - 1));
          r.path_partial = true;
        }
        r.path.assign(paths.begin() + f.fwd_off, paths.begin() + f.fwd_off + len);
        if (r.path.empty()) r.path_partial = false;
      }
      if (back > 0 && unit(hashKeys(options.seed, kReplyFlow, id)) < z.reply_path_known) {
        r.reply_path.assign(paths.begin() + f.rev_off, paths.begin() + f.rev_off + f.rev_len);
      }
    } else {
      double p_known = 1.0 - z.path_unknown;
      if (r.lost > 0) p_known *= 1.0 - z.lossy_path_failure;
      if (f.routable && rng.uniform() < p_known) {
        uint32_t len = f.fwd_len;
        if (bh_fwd >= 0) {
          len = static_cast<uint32_t>(bh_fwd);
          r.path_partial = true;
        } else if (len > 1 && rng.uniform() < z.path_partial) {
          len = 1 + static_cast<uint32_t>(rng.below(len - 1));
          r.path_partial = true;
        }
        r.path.assign(paths.begin() + f.fwd_off, paths.begin() + f.fwd_off + len);
        if (r.path.empty()) r.path_partial = false;
      }
      if (back > 0 && rng.uniform() < z.reply_path_known) {
        r.reply_path.assign(paths.begin() + f.rev_off, paths.begin() + f.rev_off + f.rev_len);
      }
    }

    if (z.late_records > 0 && rng.uniform() < z.late_records) {
      late.push(LateRecord{t + rng.uniform() * z.late_max_s, late_order++, r});
      ++stats.late_records;
      return;
    }
    sink.onProbe(r);
    ++stats.probe_records;
  }

  void releaseLate(double t, telemetry::RecordSink& sink) {
    while (!late.empty() && late.top().release <= t) {
      sink.onProbe(late.top().record);
      ++stats.probe_records;
      late.pop();
    }
  }

  // ---- counters and LLDP -------------------------------------------------

  // Seconds in (from, t] during which a link is down (for oper state and
  // carrier changes), and the number of carrier transitions in that span.
  void linkDownHistory(LinkId l, NodeId host_end, double t, bool& up, uint64_t& changes) const {
    up = true;
    changes = 0;
    for (const ResolvedFault& f : faults) {
      bool on_link = f.link != kNone && Topology::linkOf(f.link) == l;
      bool reboot = f.kind == "host_reboot" && f.host == host_end && host_end != kNone;
      if (f.kind == "link_down" && on_link) {
        if (t >= f.onset) ++changes;
        if (t >= f.end) ++changes;
        if (f.activeAt(t)) up = false;
      } else if (f.kind == "link_flap" && on_link && t >= f.onset) {
        double until = std::min(t, f.end);
        double cycles = std::floor((until - f.onset) / f.period_s);
        double into = (until - f.onset) - cycles * f.period_s;
        changes += static_cast<uint64_t>(2 * cycles) + (into >= f.down_s ? 2 : 1);
        if (f.activeAt(t) && into < f.down_s) up = false;
      } else if (reboot) {
        if (t >= f.onset) ++changes;
        if (t >= f.end) ++changes;
        if (f.activeAt(t)) up = false;
      }
    }
  }

  void emitCounters(double t, telemetry::RecordSink& sink) {
    PortRecord r;
    r.t = t;
    for (PortId p = 0; p < topo.portCount(); ++p) {
      const Port& port = topo.port(p);
      if (port.link == kNone) continue;
      const bool on_host = topo.node(port.node).isHost();
      if (on_host && hostRebootingAt(port.node, t)) continue;  // its agent is down
      NodeId host_end = on_host ? port.node : topo.peerNode(p);
      if (host_end != kNone && !topo.node(host_end).isHost()) host_end = kNone;
      // A rebooted host's own counters start again from zero.
      double origin = scenario.start;
      for (const ResolvedFault& f : faults) {
        if (f.kind == "host_reboot" && on_host && f.host == port.node && t >= f.end) {
          origin = std::max(origin, f.end);
        }
      }
      if (p == reset_port && t >= reset_time) origin = std::max(origin, reset_time);
      const double elapsed = t - origin;
      const DirLinkId in = topo.ingressOf(p), out = topo.egressOf(p);
      double crc = 0, tx_drops = 0;
      for (const ResolvedFault& f : faults) {
        if (f.kind == "link_corruption" && f.link == in) {
          crc += pps[p] * f.loss * overlap(origin, t, f.onset, f.end);
        } else if (f.kind == "congestion" && f.link == out) {
          tx_drops += f.tx_drops_per_s * overlap(origin, t, f.onset, f.end);
        }
      }
      bool up = true;
      uint64_t changes = 0;
      linkDownHistory(port.link, host_end, t, up, changes);
      r.port = p;
      r.oper_up = up;
      r.rx_packets = static_cast<uint64_t>(pps[p] * elapsed);
      r.tx_packets = static_cast<uint64_t>(pps[p] * 0.98 * elapsed);
      r.rx_crc_errors = static_cast<uint64_t>(crc);
      r.rx_errors = static_cast<uint64_t>(crc);
      r.fec_uncorrectable = static_cast<uint64_t>(crc * 0.1);
      r.rx_drops = 0;
      r.tx_drops = static_cast<uint64_t>(tx_drops);
      r.carrier_changes = changes;
      sink.onPort(r);
      ++stats.port_records;
    }
  }

  // The port actually cabled to `p` at time t (miscabling swaps two cables).
  PortId actualPeer(PortId p, double t) const {
    for (const ResolvedFault& f : faults) {
      if (f.kind != "miscabling" || !f.activeAt(t)) continue;
      auto peerOf = [&](PortId x) { return topo.dirDstPort(topo.egressOf(x)); };
      if (p == f.swap_a) return peerOf(f.swap_b);
      if (p == f.swap_b) return peerOf(f.swap_a);
      if (p == peerOf(f.swap_a)) return f.swap_b;
      if (p == peerOf(f.swap_b)) return f.swap_a;
    }
    return topo.port(p).link == kNone ? kNone : topo.dirDstPort(topo.egressOf(p));
  }

  void emitLldp(PortId p, double t, telemetry::RecordSink& sink) {
    PortId peer = actualPeer(p, t);
    if (peer == kNone) return;
    LldpRecord r;
    r.t = t;
    r.port = p;
    r.neighbor = topo.portRef(peer);
    sink.onLldp(r);
    ++stats.lldp_records;
  }

  // LLDP for every port whose neighbour changes at a miscabling's onset or end.
  void emitLldpChanges(double a, double b, telemetry::RecordSink& sink) {
    for (const ResolvedFault& f : faults) {
      if (f.kind != "miscabling") continue;
      for (double edge : {f.onset, f.end}) {
        if (edge <= a || edge > b || edge <= scenario.start) continue;
        for (PortId p : {f.swap_a, f.swap_b}) {
          emitLldp(p, edge, sink);
          emitLldp(topo.dirDstPort(topo.egressOf(p)), edge, sink);
        }
      }
    }
  }

  // ---- the run -------------------------------------------------------------

  void run(telemetry::RecordSink& sink) {
    pps.resize(topo.portCount());
    for (PortId p = 0; p < topo.portCount(); ++p) {
      double u = static_cast<double>(hashKeys(options.seed, kPps, p) >> 11) * 0x1.0p-53;
      pps[p] = scenario.noise.packets_per_second * (0.8 + 0.4 * u);
    }
    if (scenario.noise.counter_reset && topo.portCount() > 0) {
      Rng rr(hashKeys(options.seed, kReset));
      for (int tries = 0; tries < 64 && reset_port == kNone; ++tries) {
        PortId p = static_cast<PortId>(rr.below(topo.portCount()));
        if (topo.port(p).link != kNone) reset_port = p;
      }
      reset_time = scenario.start + scenario.duration_s * (0.3 + 0.4 * rr.uniform());
    }

    for (PortId p = 0; p < topo.portCount(); ++p) emitLldp(p, scenario.start, sink);
    const double ci = scenario.noise.counter_interval_s;
    uint64_t next_counter = 0;
    const auto steps = static_cast<uint64_t>(std::floor(scenario.duration_s / step + 1e-9));
    double prev = scenario.start;
    for (uint64_t j = 1; j <= steps; ++j) {
      const double t = scenario.start + static_cast<double>(j) * step;
      while (scenario.start + static_cast<double>(next_counter) * ci <= t) {
        double tc = scenario.start + static_cast<double>(next_counter++) * ci;
        releaseLate(tc, sink);
        emitCounters(tc, sink);
      }
      emitLldpChanges(prev, t, sink);
      prev = t;
      releaseLate(t, sink);
      if (j < phases) continue;  // no agent has a full window yet
      const double a = t - window;
      updatePlan(a);
      updateRouting(a);
      updateLinkState(a, t);
      const auto phase = static_cast<uint32_t>(j % phases);
      for (size_t i = 0; i < flows.size(); ++i) {
        if (flows[i].phase == phase) emitProbe(i, j, t, sink);
      }
    }
    releaseLate(kForever, sink);
  }
};

Simulator::Simulator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Simulator::~Simulator() = default;

std::unique_ptr<Simulator> Simulator::create(const Topology& topo, const Scenario& scenario,
                                             const planner::Plan& plan, const SimOptions& options,
                                             std::vector<Diagnostic>& errors) {
  auto impl = std::make_unique<Impl>(topo, scenario, plan, options);
  size_t before = errors.size();
  impl->faults = resolveFaults(topo, scenario, options.seed, errors);
  if (errors.size() != before) return nullptr;
  impl->truth = makeTruth(topo, scenario, impl->faults, options.seed, options.ecmp_seed);
  impl->buildFlows();
  return std::unique_ptr<Simulator>(new Simulator(std::move(impl)));
}

const Truth& Simulator::truth() const { return impl_->truth; }
void Simulator::run(telemetry::RecordSink& sink) { impl_->run(sink); }
const SimStats& Simulator::stats() const { return impl_->stats; }

}  // namespace netdiag::sim
