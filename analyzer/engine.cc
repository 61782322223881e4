#include "analyzer/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <unordered_map>

#include "analyzer/counters.h"
#include "analyzer/ecmp_shares.h"
#include "analyzer/evidence.h"
#include "analyzer/flow_paths.h"
#include "analyzer/latency.h"
#include "analyzer/stats.h"

namespace netdiag::analyzer {

using namespace topology;
using telemetry::LldpRecord;
using telemetry::PortRecord;
using telemetry::ProbeRecord;

namespace {

// Evidence thresholds (nats of log-likelihood ratio). A hypothesis is a
// suspect at kOpenLlr, or at ln M on a fabric of M > e^8 hypotheses (from
// there on it is at least as likely as not, with the prior of one fault
// among M; below, on a large fabric, every pass would open suspects on
// noise); it pages once its posterior reaches the configured confidence,
// with enough distinct lossy flows behind it, twice in a row.
constexpr double kOpenLlr = 8;
constexpr size_t kShortBuckets = 6;  // the fast horizon, in buckets
constexpr int kMinLossySegments = 3;
constexpr int kMaxExplanations = 64;
// The backward check costs one explaining-away per pair of accepted
// hypotheses; beyond this many (a fabric-wide event) it is skipped.
constexpr size_t kMaxBackwardChecks = 16;
// A host is "unreachable" only when most probes to it die; a few extra
// losses on its flows are a link's business.
constexpr double kMinHostLoss = 0.2;
// Latency: flows across a link at least this much slower than their peers,
// by at least this many standard scores, make it a latency suspect.
constexpr double kMinAddedLatencyUs = 50;
constexpr double kMinLatencyZ = 8;

// A hypothesis: one directed link is lossy, or one host drops what is sent
// to it (a dead responder, a rebooting host).
struct Key {
  enum Kind : uint8_t { kLink, kNode, kPorts } kind;
  uint32_t id;  // link; node (a host, or the node whose cables disagree)
  bool operator<(const Key& o) const { return kind != o.kind ? kind < o.kind : id < o.id; }
};

struct Tracked {
  Incident incident;
  int strong_passes = 0;  // consecutive passes at paging strength
  double last_bad = 0;
  bool open = true;
  // Restored from an earlier run: its evidence died with that process, so
  // its resolve clock starts at the first pass after the restart, not at
  // its last bad pass before it (a restart is not a repair).
  bool restored = false;
};

}  // namespace

struct Engine::Impl {
  const Topology& topo;
  EngineConfig cfg;
  IngestStats stats;
  size_t buckets;

  FlowPaths flows;
  EcmpShares shares;
  BucketedTallies links;    // per directed link: certain-path probes / losses
  BucketedTallies to_node;  // per node: probes sent to it / lost
  // Per host port (background), three keys from its slot i: 3i all probes it
  // sent and their losses, 3i+1 one-way records' probes and forward losses,
  // 3i+2 their probes that arrived and reverse losses. Adjacent keys share a
  // cache line. Probes sent from a switch port count for nothing here.
  std::vector<uint32_t> host_slot;  // per port: its slot, or kNone
  BucketedTallies from_port;
  // Per directed link: the probes and losses of round-trip segments among
  // `links` (records without one-way counts), whose background is a whole
  // round trip's. Made on the first such record.
  std::unique_ptr<BucketedTallies> links_rt;
  PortCounters counters;
  LossyStore lossy;
  LatencyEvidence latency;
  std::vector<std::string> lldp_neighbor;  // last LLDP neighbour per port
  std::vector<bool> lldp_mismatch;

  double newest = -INFINITY;
  double next_pass = -INFINITY;
  uint64_t next_id = 1;
  std::map<Key, Tracked> tracked;
  std::vector<std::function<void(const Incident&)>> listeners;

  // Scratch buffers reused per record.
  std::vector<DirLinkId> fwd, rev, both;

  Impl(const Topology& t, EngineConfig c)
      : topo(t),
        cfg(c),
        buckets(static_cast<size_t>(std::ceil(c.horizon_s / c.bucket_s))),
        flows(t),
        shares(t),
        links(t.dirLinkCount(), buckets, c.bucket_s),
        to_node(t.nodeCount(), buckets, c.bucket_s),
        host_slot(hostSlots(t)),
        from_port(3 * static_cast<size_t>(
                          std::ranges::count_if(host_slot, [](uint32_t s) { return s != kNone; })),
                  buckets, c.bucket_s),
        counters(t.portCount(), buckets, c.bucket_s),
        latency(t.dirLinkCount(), buckets, c.bucket_s),
        lldp_neighbor(t.portCount()),
        lldp_mismatch(t.portCount(), false) {
    if (c.expected_flows > 0) flows.reserve(c.expected_flows);
  }

  static std::vector<uint32_t> hostSlots(const Topology& t) {
    std::vector<uint32_t> slot(t.portCount(), kNone);
    uint32_t next = 0;
    for (PortId p = 0; p < t.portCount(); ++p) {
      if (t.node(t.port(p).node).isHost()) slot[p] = next++;
    }
    return slot;
  }

  // ---- ingest --------------------------------------------------------------

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

  void addSegment(double t, uint32_t n, uint32_t k, const std::vector<DirLinkId>& seg, NodeId dst,
                  bool forward, Middle m0, Middle m1 = {}) {
    if (n == 0) return;
    for (DirLinkId d : seg) links.add(d, t, n, k);
    if (k > 0) lossy.add(t, n, k, seg, dst, forward, m0, m1, false);
  }

  void addRoundTrip(double t, uint32_t n, uint32_t k, const std::vector<DirLinkId>& seg, NodeId dst,
                    Middle m0, Middle m1) {
    if (n == 0) return;
    if (!links_rt)
      links_rt = std::make_unique<BucketedTallies>(topo.dirLinkCount(), buckets, cfg.bucket_s);
    for (DirLinkId d : seg) {
      links.add(d, t, n, k);
      links_rt->add(d, t, n, k);
    }
    if (k > 0) lossy.add(t, n, k, seg, dst, true, m0, m1, true);
  }

  void probe(const ProbeRecord& r) {
    clock(r.t);
    ++stats.probes;
    if (r.sent == 0) return;
    const NodeId dst_node = topo.port(r.dst).node;
    Middle fwd_mid = flows.forwardLinks(r, fwd);
    Middle rev_mid = flows.reverseLinks(r, rev);
    to_node.add(dst_node, r.t, r.sent, r.lost);
    if (r.hasRtt() && fwd_mid.known() && rev_mid.from != rev_mid.to) {
      // Round trip over a known forward path; the return is taken to have as
      // many hops, as in the symmetric Clos fabrics this tool targets.
      both = fwd;
      both.insert(both.end(), rev.begin(), rev.end());
      latency.add(r.t, r.rtt_us_p50, fwd.size(), both, rev_mid);
    }
    if (const size_t i = host_slot[r.src]; i != kNone) {
      from_port.add(3 * i, r.t, r.sent, r.lost);
      if (r.hasOneWay()) {
        from_port.add(3 * i + 1, r.t, r.sent, *r.lost_fwd);
        from_port.add(3 * i + 2, r.t, r.sent - *r.lost_fwd, *r.lost_rev);
      }
    }
    if (r.hasOneWay()) {
      addSegment(r.t, r.sent, *r.lost_fwd, fwd, dst_node, true, fwd_mid);
      addSegment(r.t, r.sent - *r.lost_fwd, *r.lost_rev, rev, kNone, false, rev_mid);
    } else {
      both = fwd;
      for (DirLinkId d : rev) {
        if (std::find(both.begin(), both.end(), d) == both.end()) both.push_back(d);
      }
      addRoundTrip(r.t, r.sent, r.lost, both, dst_node, fwd_mid, rev_mid);
    }
  }

  void port(const PortRecord& r) {
    clock(r.t);
    ++stats.ports;
    counters.add(r);
  }

  void lldp(const LldpRecord& r) {
    clock(r.t);
    ++stats.lldp;
    lldp_neighbor[r.port] = r.neighbor;
    const Port& p = topo.port(r.port);
    std::string expected =
        p.link == kNone ? "" : topo.portRef(topo.dirDstPort(topo.egressOf(r.port)));
    // A neighbour may be named by port ("leaf1:swp1") or by node only.
    bool ok =
        r.neighbor == expected || (r.neighbor.find(':') == std::string::npos && p.link != kNone &&
                                   r.neighbor == topo.node(topo.peerNode(r.port)).name);
    lldp_mismatch[r.port] = !ok;
  }

  // ---- the localization pass ---------------------------------------------

  struct Candidate {
    double n = 0, k = 0;    // long horizon, after explaining away
    double ns = 0, ks = 0;  // short horizon
    // Of those, probes and losses of round-trip segments (for a link; a
    // host's are all round trips).
    double n_rt = 0, k_rt = 0, ns_rt = 0, ks_rt = 0;
    bool host = false;
    double q0 = 0;  // background of these probes (pooled)
    double llr = 0;
    double loss = 0;
    int segments = 0;  // lossy segments still unexplained
    bool accepted = false;
    bool stale = false;  // evidence changed since it was scored

    // Takes `part` of a lossy segment out of the evidence.
    void remove(double part, const LossySegment& s, bool in_short) {
      n -= part * s.n, k -= part * s.k;
      if (in_short) ns -= part * s.n, ks -= part * s.k;
      if (s.round_trip) {
        n_rt -= part * s.n, k_rt -= part * s.k;
        if (in_short) ns_rt -= part * s.n, ks_rt -= part * s.k;
      }
      stale = true;  // rescored when next read: one explanation reduces it many times
    }
  };

  // Background loss per probe, over a round trip and over one direction
  // (the larger of forward and reverse): a one-way count is tested against
  // one direction's background, about half the round trip's.
  struct Background {
    double round_trip = 1e-3;
    double one_way = 1e-3;
  };
  Background background;

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
  static size_t kept(size_t n) { return n - std::min(n - 1, (n + 19) / 20); }  // 5 %, at least one

  Background estimateBackground() const {
    struct PortLoss {
      Tally rt, fwd, rev;
    };
    std::vector<PortLoss> ports;
    for (size_t i = 0; i < from_port.size() / 3; ++i) {
      Tally t = from_port.total(3 * i);
      if (t.n > 0) ports.push_back({t, from_port.total(3 * i + 1), from_port.total(3 * i + 2)});
    }
    auto by_rate = [](const Tally& a, const Tally& b) { return a.k * b.n < b.k * a.n; };
    std::sort(ports.begin(), ports.end(),
              [&](const PortLoss& a, const PortLoss& b) { return by_rate(a.rt, b.rt); });
    Tally rt, out, back;
    for (size_t i = 0; i < kept(ports.size()); ++i) {
      rt.add(ports[i].rt.n, ports[i].rt.k);
      out.add(ports[i].fwd.n, ports[i].fwd.k);
      back.add(ports[i].rev.n, ports[i].rev.k);
    }
    std::vector<Tally> hosts;
    for (NodeId n = 0; n < topo.nodeCount(); ++n) {
      Tally t = to_node.total(n);
      if (t.n > 0) hosts.push_back(t);
    }
    std::sort(hosts.begin(), hosts.end(), by_rate);
    Tally to_hosts;
    for (size_t i = 0; i < kept(hosts.size()); ++i) to_hosts.add(hosts[i].n, hosts[i].k);

    auto upper = [](Tally t) { return std::max(1e-7, (t.k + 2 * std::sqrt(t.k) + 2) / t.n); };
    Background b;
    if (rt.n <= 0) return b;
    b.round_trip = to_hosts.n > 0 ? std::min(upper(rt), upper(to_hosts)) : upper(rt);
    b.one_way = out.n > 0 && back.n > 0 ? std::min(b.round_trip, std::max(upper(out), upper(back)))
                                        : b.round_trip;
    return b;
  }

  // The background of n probes of which n_rt are round trips, pooled.
  double nullRate(double n, double n_rt) const {
    if (n <= 0) return background.one_way;
    const double rt = std::clamp(n_rt / n, 0.0, 1.0);
    return background.one_way + rt * (background.round_trip - background.one_way);
  }

  // One-way counts are tested against one direction's background, round
  // trips against the round trip's, with one added loss for both.
  double llrOf(double n, double k, double n_rt, double k_rt, double* added) const {
    // (Explaining away subtracts fractions: keep rounding from going negative.)
    const double n1 = std::max(0.0, n - n_rt), k1 = std::clamp(k - k_rt, 0.0, n1);
    n_rt = std::max(0.0, n_rt), k_rt = std::clamp(k_rt, 0.0, n_rt);
    return twoClassLlr(n1, k1, background.one_way, n_rt, k_rt, background.round_trip, added);
  }

  void score(Candidate& c) const {
    // Probes to a host are whole round trips, whatever the records carried.
    auto rt = [&c](double all, double round_trips) { return c.host ? all : round_trips; };
    const double n_rt = rt(c.n, c.n_rt), k_rt = rt(c.k, c.k_rt);
    const double ns_rt = rt(c.ns, c.ns_rt), ks_rt = rt(c.ks, c.ks_rt);
    // Two horizons tested, with half the prior each; the short one is tested
    // on every one of the windows that fit in the long one (a scan
    // statistic), so each short window gets that share of its half.
    double x_long = 0, x_short = 0;
    const double l_long = llrOf(c.n, c.k, n_rt, k_rt, &x_long);
    const double l_short = llrOf(c.ns, c.ks, ns_rt, ks_rt, &x_short) - log_short_windows;
    c.llr = std::max(l_long, l_short) - std::log(2.0);
    const bool short_wins = l_short > l_long;
    c.q0 = short_wins ? nullRate(c.ns, ns_rt) : nullRate(c.n, n_rt);
    c.loss = short_wins ? x_short : x_long;
  }

  const Candidate& fresh(Candidate& c) const {
    if (c.stale) {
      score(c);
      c.stale = false;
    }
    return c;
  }

  const double open_llr =
      std::max(kOpenLlr, std::log(static_cast<double>(topo.dirLinkCount() + topo.nodeCount())));

  const double log_short_windows = std::log(static_cast<double>(buckets) / kShortBuckets);

  double segmentBackground(const LossySegment& s) const {
    return s.round_trip ? background.round_trip : background.one_way;
  }

  void pass(double now) {
    ++stats.passes;
    links.advanceTo(now);
    to_node.advanceTo(now);
    from_port.advanceTo(now);
    counters.advanceTo(now);
    lossy.expire(now - cfg.horizon_s);
    if (links_rt) links_rt->advanceTo(now);
    background = estimateBackground();
    const double short_from =
        (static_cast<double>(links.newestBucket()) - static_cast<double>(kShortBuckets) + 1) *
        cfg.bucket_s;

    // Candidates: every link and host with a loss in the horizon.
    std::unordered_map<uint32_t, Candidate> link_c, node_c;
    std::unordered_map<uint32_t, std::vector<uint32_t>> link_segs, node_segs;
    const auto& segs = lossy.segments();
    for (uint32_t i = 0; i < segs.size(); ++i) {
      for (DirLinkId d : lossy.linksOf(segs[i])) link_segs[d].push_back(i);
      if (segs[i].forward && segs[i].dst_node != kNone) node_segs[segs[i].dst_node].push_back(i);
    }
    for (auto& [d, list] : link_segs) {
      Candidate c;
      Tally t = links.total(d), s = links.recent(d, kShortBuckets);
      c.n = t.n, c.k = t.k, c.ns = s.n, c.ks = s.k;
      if (links_rt) {
        Tally rt = links_rt->total(d), rts = links_rt->recent(d, kShortBuckets);
        c.n_rt = rt.n, c.k_rt = rt.k, c.ns_rt = rts.n, c.ks_rt = rts.k;
      }
      c.segments = static_cast<int>(list.size());
      score(c);
      link_c[d] = c;
    }
    for (auto& [n, list] : node_segs) {
      if (!topo.node(n).isHost()) continue;
      Candidate c;
      Tally t = to_node.total(n), s = to_node.recent(n, kShortBuckets);
      c.n = t.n, c.k = t.k, c.ns = s.n, c.ks = s.k;
      c.host = true;
      c.segments = static_cast<int>(list.size());
      score(c);
      node_c[n] = c;
    }

    // Greedy explaining-away: accept the strongest hypothesis, remove the
    // lossy segments it explains from every other candidate, rescore.
    // Each lossy segment keeps the share of its losses not yet explained.
    // A segment certainly through the accepted link (or to the accepted
    // host) is explained whole; one that only may have crossed it, on a
    // stretch discovery did not see, by the posterior that it did
    // (crossedPosterior).
    std::vector<double> unexplained(segs.size(), 1.0);
    std::vector<std::pair<Key, Candidate>> accepted;
    const double log_m = std::log(static_cast<double>(topo.dirLinkCount() + topo.nodeCount()));
    auto discount = [&](uint32_t i, double w) {
      const LossySegment& s = segs[i];
      double part = unexplained[i] * w;
      if (part <= 0) return;
      unexplained[i] -= part;
      bool in_short = s.t >= short_from;
      auto reduce = [&](Candidate& c) {
        if (c.accepted) return;
        c.remove(part, s, in_short);
        if (unexplained[i] < 0.5 && unexplained[i] + part >= 0.5) --c.segments;
      };
      for (DirLinkId d : lossy.linksOf(s)) {
        if (auto it = link_c.find(d); it != link_c.end()) reduce(it->second);
      }
      if (s.forward && s.dst_node != kNone) {
        if (auto it = node_c.find(s.dst_node); it != node_c.end()) reduce(it->second);
      }
    };
    // Links the counters report down, or that went down within the horizon
    // (any carrier change: a flap's first cycle, a link back up after an
    // outage), explain, first, every loss on flows that crossed (or may have
    // crossed) them, in both directions: a link is down both ways, and
    // without one-way counts the replies it dropped would otherwise be
    // blamed on the uplinks their flows went out on.
    for (LinkId l = 0; l < topo.linkCount(); ++l) {
      if (!reportedDown(l) && carrierChanges(l) < 1) continue;
      for (DirLinkId d : {2 * l, 2 * l + 1}) {
        if (auto it = link_c.find(d); it != link_c.end()) it->second.accepted = true;
        // Flows reroute around such a link, so remembered paths are suspect.
        explainBy(d, std::nullopt, link_segs, discount, true);
      }
    }
    // Segments claimed by a paged incident count for nobody else.
    for (uint32_t i = 0; i < segs.size(); ++i) {
      if (segs[i].claimed_by == 0) continue;
      Candidate* owner = nullptr;
      Key k = decode(segs[i].claimed_by);
      auto& pool = k.kind == Key::kLink ? link_c : node_c;
      if (auto it = pool.find(k.id); it != pool.end()) {
        owner = &it->second;
        owner->accepted = true;  // shield the owner from the discount
      }
      discount(i, 1.0);
      if (owner) owner->accepted = false;
    }
    const auto link_c0 = link_c;
    const auto node_c0 = node_c;
    const auto unexplained0 = unexplained;
    auto explain = [&](const Key& key, const Candidate& c) {
      if (key.kind == Key::kLink) {
        explainBy(key.id, std::max(c.loss, 1e-9), link_segs, discount);
      } else {
        for (uint32_t i : node_segs[key.id]) discount(i, 1.0);
      }
    };
    for (int round = 0; round < kMaxExplanations; ++round) {
      Key best{Key::kLink, kNone};
      Candidate* bc = nullptr;
      for (auto& [d, c] : link_c) {
        fresh(c);
        if (!c.accepted && c.loss >= cfg.min_loss && (!bc || c.llr > bc->llr)) {
          bc = &c;
          best = {Key::kLink, d};
        }
      }
      for (auto& [n, c] : node_c) {
        fresh(c);
        if (!c.accepted && c.loss >= kMinHostLoss && (!bc || c.llr > bc->llr)) {
          bc = &c;
          best = {Key::kNode, n};
        }
      }
      if (!bc || bc->llr < open_llr) break;
      bc->accepted = true;
      accepted.emplace_back(best, *bc);
      explain(best, *bc);
    }

    // Greedy order can accept first a hypothesis whose evidence a later one
    // explains better: an access link sees every flow of its host for
    // certain, so a fabric link's partial blackhole first looks like the
    // access link of the host with the most blackholed flows. Each accepted
    // hypothesis must therefore still be significant given all the others
    // (a backward check, as in stepwise regression); those that are not are
    // dropped, earliest first.
    if (accepted.size() > 1 && accepted.size() <= kMaxBackwardChecks) {
      // Explaining away takes from segment i the share w of what is left of
      // it, so what all the others leave of it is the product of (1 - w)
      // over them, in any order: each hypothesis is re-scored from its
      // candidate before the greedy, less that from its own segments.
      std::vector<bool> dropped(accepted.size(), false);
      for (size_t j = 0; j < accepted.size(); ++j) {
        const Key& key = accepted[j].first;
        Candidate rest = key.kind == Key::kLink ? link_c0.at(key.id) : node_c0.at(key.id);
        for (uint32_t i : key.kind == Key::kLink ? link_segs[key.id] : node_segs[key.id]) {
          double left = 1;
          for (size_t h = 0; h < accepted.size() && left > 0; ++h) {
            if (h != j && !dropped[h])
              left *= 1 - explainedShare(accepted[h].first, accepted[h].second, segs[i]);
          }
          const double part = unexplained0[i] * (1 - left);
          if (part > 0) rest.remove(part, segs[i], segs[i].t >= short_from);
        }
        score(rest);
        const double min_loss = key.kind == Key::kLink ? cfg.min_loss : kMinHostLoss;
        dropped[j] = rest.llr < open_llr || rest.loss < min_loss;
      }
      size_t kept = 0;
      for (size_t j = 0; j < accepted.size(); ++j) {
        if (!dropped[j]) accepted[kept++] = accepted[j];
      }
      accepted.resize(kept);
    }

    // Posterior: one fault among M hypotheses a priori, against the
    // strongest competing explanation of the same evidence.
    std::set<Key> seen;
    for (auto& [key, c] : accepted) {
      double alt = -INFINITY;
      std::string alt_name;
      if (key.kind == Key::kLink) {
        auto it = link_c.find(Topology::reverse(key.id));
        if (it != link_c.end() && fresh(it->second).llr > alt) {
          alt = it->second.llr;
          alt_name = "reverse direction " + topo.dirLinkName(Topology::reverse(key.id));
        }
        for (NodeId n : {topo.dirSrcNode(key.id), topo.dirDstNode(key.id)}) {
          auto nt = node_c.find(n);
          if (nt != node_c.end() && fresh(nt->second).llr > alt) {
            alt = nt->second.llr;
            alt_name = "host " + topo.node(n).name + " itself";
          }
        }
      }
      double conf = posterior(c.llr, log_m, alt);
      seen.insert(key);
      if (update(key, c, conf, now, alt_name, alt)) claim(key, link_segs, node_segs);
    }
    latencyHypotheses(now, seen, log_m);
    counterHypotheses(now, seen);
    miscabling(now, seen);
    expire(now, seen);
  }

  // ---- counter state of a link ---------------------------------------------

  // Carrier transitions seen by the busier end over the horizon: one
  // down/up cycle is 2; a flapping link shows at least two cycles.
  static constexpr double kFlapChanges = 4;
  double carrierChanges(LinkId l) const {
    return std::max(counters.carrierChanges(topo.link(l).a),
                    counters.carrierChanges(topo.link(l).b));
  }
  bool reportedDown(LinkId l) const {
    auto a = counters.operUp(topo.link(l).a), b = counters.operUp(topo.link(l).b);
    return (a && !*a) || (b && !*b);
  }

  // Posterior probability that a lossy segment crossed a link of loss `x`
  // that lies on its unseen stretch with ECMP share `s`: the prior s, times
  // the likelihood of the segment's own n and k with and without the link's
  // loss. A flow that lost every probe is almost surely through a blackhole
  // even at a small share; one stray loss is weaker evidence.
  // For a link the counters report down or flapping, x is left unknown (it
  // was down for part of some windows): any loss on a flow that may have
  // crossed it is taken as its doing.
  double crossedPosterior(const LossySegment& seg, double s, std::optional<double> x) const {
    const double q0 = segmentBackground(seg);
    if (!x) return s / (s + q0);
    const double q1 = std::min(q0 + *x, 1.0 - 1e-12);
    double log_ratio = seg.k * std::log(q1 / q0);
    if (seg.n > seg.k) log_ratio += (seg.n - seg.k) * (std::log1p(-q1) - std::log1p(-q0));
    if (log_ratio > 50) return 1.0;
    double odds = s * std::exp(log_ratio);
    return odds / (odds + (1.0 - s));
  }

  // The share of a lossy segment that an accepted hypothesis explains, as
  // explain() takes it: all of a segment certainly through the link (or to
  // the host), the posterior that it crossed the link on its unseen stretch.
  double explainedShare(const Key& key, const Candidate& c, const LossySegment& seg) {
    if (key.kind == Key::kNode) return seg.forward && seg.dst_node == key.id ? 1.0 : 0.0;
    auto ls = lossy.linksOf(seg);
    if (std::find(ls.begin(), ls.end(), key.id) != ls.end()) return 1.0;
    const double s = unseenShare(seg, key.id, false);
    return s > 0 ? crossedPosterior(seg, s, std::max(c.loss, 1e-9)) : 0.0;
  }

  // The largest ECMP share of link d on the segment's unseen stretches
  // (remembered paths count as unseen when `doubt_cache`).
  double unseenShare(const LossySegment& seg, DirLinkId d, bool doubt_cache) {
    double s_max = 0;
    for (const Middle& m : seg.middle) {
      if (!m.known() || (doubt_cache && m.cached && m.from != m.to)) {
        s_max = std::max(s_max, shares.share(m.from, m.to, d));
      }
    }
    return s_max;
  }

  // Removes from the evidence what link `d` with loss `x` explains: every
  // segment certainly through it, and segments that may have crossed it on
  // a stretch discovery did not see, by the posterior that they did.
  template <typename Discount>
  void explainBy(DirLinkId d, std::optional<double> x,
                 std::unordered_map<uint32_t, std::vector<uint32_t>>& link_segs, Discount& discount,
                 bool doubt_cache = false) {
    const auto& segs = lossy.segments();
    std::vector<bool> certain(segs.size(), false);
    if (auto it = link_segs.find(d); it != link_segs.end()) {
      for (uint32_t i : it->second) {
        certain[i] = true;
        discount(i, 1.0);
      }
    }
    for (uint32_t i = 0; i < segs.size(); ++i) {
      if (certain[i]) continue;
      const double s_max = unseenShare(segs[i], d, doubt_cache);
      if (s_max > 0) discount(i, crossedPosterior(segs[i], s_max, x));
    }
  }

  // ---- incidents -------------------------------------------------------------

  Tracked& track(const Key& key, double now) {
    auto it = tracked.find(key);
    if (it != tracked.end() && it->second.open) return it->second;
    Tracked t;
    t.incident.id = "inc-" + std::to_string(next_id++);
    t.incident.opened_at = now;
    t.last_bad = now;
    if (key.kind == Key::kLink) t.incident.link = key.id;
    if (key.kind == Key::kNode) t.incident.node = key.id;
    if (it != tracked.end()) {
      // A closed incident on the same key stays in the history under its id.
      history.push_back(it->second.incident);
      it->second = t;
      notify(it->second.incident);
      return it->second;
    }
    auto& ref = tracked.emplace(key, t).first->second;
    notify(ref.incident);
    return ref;
  }

  std::vector<Incident> history;  // closed incidents whose key was reused

  void notify(const Incident& i) {
    for (auto& f : listeners) f(i);
  }

  std::string classifyLink(DirLinkId d, const Candidate& c, nlohmann::json& ev) const {
    const PortId src = topo.dirSrcPort(d), dst = topo.dirDstPort(d);
    const double carrier = carrierChanges(Topology::linkOf(d));
    Tally err = counters.rxErrors(dst);
    Tally drops = counters.txDrops(src);
    ev["counters"] = {{"rx_errors_at_" + topo.portRef(dst), err.k},
                      {"tx_drops_at_" + topo.portRef(src), drops.k},
                      {"carrier_changes", carrier}};
    if (carrier >= kFlapChanges) return kLinkFlap;
    if (reportedDown(Topology::linkOf(d))) return kLinkDown;
    if (err.k >= 10 && err.n > 0 && err.k / err.n >= 1e-6) return kLinkCorruption;
    if (drops.n > 0 && drops.k / drops.n >= std::max(1e-4, 0.2 * c.loss)) return kCongestion;
    if (blackholeShare(d) >= 0.7 && c.loss < 0.9) return kLinkBlackhole;
    return kLinkLoss;
  }

  // Share of the link's lossy forward segments that lost every probe: near 1
  // for a partial blackhole (some flows dead, others clean), low for random loss.
  double blackholeShare(DirLinkId d) const {
    int total = 0, all_lost = 0;
    for (const LossySegment& s : lossy.segments()) {
      auto ls = lossy.linksOf(s);
      if (std::find(ls.begin(), ls.end(), d) == ls.end()) continue;
      ++total;
      all_lost += s.k == s.n;
    }
    return total >= kMinLossySegments ? static_cast<double>(all_lost) / total : 0;
  }

  static uint64_t encode(const Key& k) { return (uint64_t{k.kind} + 1) << 32 | k.id; }
  static Key decode(uint64_t v) {
    return {static_cast<Key::Kind>((v >> 32) - 1), static_cast<uint32_t>(v)};
  }

  // A paged hypothesis claims the segments certainly through it.
  void claim(const Key& key, std::unordered_map<uint32_t, std::vector<uint32_t>>& link_segs,
             std::unordered_map<uint32_t, std::vector<uint32_t>>& node_segs) {
    auto& segs = lossy.segments();
    const auto& mine = key.kind == Key::kLink ? link_segs[key.id] : node_segs[key.id];
    for (uint32_t i : mine) {
      if (segs[i].claimed_by == 0) segs[i].claimed_by = encode(key);
    }
  }

  // Updates the incident of an accepted hypothesis; true when it is paged.
  bool update(const Key& key, const Candidate& c, double conf, double now,
              const std::string& alt_name, double alt_llr) {
    Tracked& t = track(key, now);
    Incident& inc = t.incident;
    t.last_bad = now;
    nlohmann::json ev;
    ev["method"] = "binomial likelihood ratio with greedy explaining-away";
    ev["probes"] = c.n;
    ev["lost"] = c.k;
    ev["lossy_flow_windows"] = c.segments;
    ev["background_loss"] = c.q0;
    ev["llr_nats"] = c.llr;
    std::string kind;
    if (key.kind == Key::kLink) {
      kind = classifyLink(key.id, c, ev);
      if (kind == kLinkDown || kind == kLinkFlap) inc.both_directions = true;
      ev["summary"] = topo.dirLinkName(key.id) + ": " + std::to_string(static_cast<int64_t>(c.k)) +
                      " of " + std::to_string(static_cast<int64_t>(c.n)) +
                      " probes lost on flows known to cross it, after explaining away others";
    } else {
      kind = kHostUnreachable;
      ev["summary"] = "probes to " + topo.node(key.id).name + " lost on every path to it";
    }
    if (!alt_name.empty()) {
      ev["ruled_out"] = {{"hypothesis", alt_name},
                         {"llr_nats", alt_llr},
                         {"why", "explains less of the evidence"}};
    }
    bool changed = inc.kind != kind;
    inc.kind = kind;
    inc.confidence = std::max(inc.localized_at ? inc.confidence : 0.0, conf);
    inc.loss_ratio = c.loss;
    inc.evidence = ev;
    const bool strong = conf >= cfg.page_confidence && c.segments >= kMinLossySegments;
    t.strong_passes = strong ? t.strong_passes + 1 : 0;
    if (!inc.localized_at && t.strong_passes >= 2) {
      inc.localized_at = now;
      changed = true;
    }
    if (changed) notify(inc);
    return inc.localized_at.has_value();
  }

  // Latency-only degradation, for links no loss hypothesis already covers.
  void latencyHypotheses(double now, std::set<Key>& seen, double log_m) {
    latency.advanceTo(now, cfg.horizon_s);
    auto share = [this](NodeId from, NodeId to, DirLinkId d) { return shares.share(from, to, d); };
    for (const SlowLink& s : latency.slowLinks(kMinAddedLatencyUs, kMinLatencyZ, share)) {
      Key key{Key::kLink, s.link};
      if (!seen.insert(key).second) continue;
      Tracked& t = track(key, now);
      Incident& inc = t.incident;
      t.last_bad = now;
      // z standard scores of a mean are a log-likelihood ratio of z^2 / 2.
      double conf = posterior(s.z * s.z / 2, log_m, -INFINITY);
      bool changed = inc.kind != kLinkLatency;
      inc.kind = kLinkLatency;
      inc.confidence = conf;
      inc.loss_ratio = 0;
      inc.evidence = {{"method", "excess round-trip time over same-length paths, explained away"},
                      {"summary", topo.dirLinkName(s.link) + ": flows crossing it are " +
                                      std::to_string(static_cast<int64_t>(s.added_us)) +
                                      " us slower than flows on paths of the same length"},
                      {"added_latency_us", s.added_us},
                      {"z", s.z},
                      {"records", s.records}};
      t.strong_passes = conf >= cfg.page_confidence ? t.strong_passes + 1 : 0;
      if (!inc.localized_at && t.strong_passes >= 2) {
        inc.localized_at = now;
        changed = true;
      }
      if (changed) notify(inc);
    }
  }

  // Counter evidence alone: a link reported down on either end, or flapping.
  void counterHypotheses(double now, std::set<Key>& seen) {
    for (LinkId l = 0; l < topo.linkCount(); ++l) {
      const Link& link = topo.link(l);
      const double carrier = carrierChanges(l);
      const bool down = reportedDown(l);
      const bool flapping = carrier >= kFlapChanges;
      if (!down && !flapping) continue;
      // Every link of a host down is usually the host going down (a reboot):
      // said in the evidence, while the incident names what is certain, the
      // link (formats.md §4 counts it for a rebooting host too).
      NodeId host = kNone;
      for (PortId p : {link.a, link.b}) {
        if (topo.node(topo.port(p).node).isHost()) host = topo.port(p).node;
      }
      DirLinkId d = 2 * l;
      Key key{Key::kLink, d};
      Key rkey{Key::kLink, d + 1};
      if (seen.contains(key) || seen.contains(rkey)) continue;
      seen.insert(key);
      Tracked& t = track(key, now);
      Incident& inc = t.incident;
      t.last_bad = now;
      std::string kind = flapping ? kLinkFlap : kLinkDown;
      bool changed = inc.kind != kind;
      inc.kind = kind;
      inc.both_directions = true;
      inc.confidence = 0.999;
      inc.loss_ratio = down ? 1.0 : inc.loss_ratio;
      inc.evidence = {{"method", "port counters"},
                      {"summary", topo.portRef(link.a) + " / " + topo.portRef(link.b) +
                                      (down ? " reported oper down" : " carrier flapping")},
                      {"carrier_changes", carrier}};
      if (down && host != kNone && allLinksDown(host)) {
        inc.evidence["host"] = "every link of " + topo.node(host).name +
                               " is down: the host itself is likely down or rebooting";
      }
      if (!inc.localized_at) {
        inc.localized_at = now;
        changed = true;
      }
      if (changed) notify(inc);
    }
  }

  bool allLinksDown(NodeId host) const {
    for (PortId p : topo.portsOf(host)) {
      if (topo.port(p).link == kNone) continue;
      PortId peer = topo.dirDstPort(topo.egressOf(p));
      auto up = counters.operUp(peer);
      if (!up || *up) return false;
    }
    return true;
  }

  // LLDP: ports whose neighbour disagrees with the topology, one incident per
  // node with such ports.

  void miscabling(double now, std::set<Key>& seen) {
    std::map<NodeId, std::vector<PortId>> bad;
    for (PortId p = 0; p < topo.portCount(); ++p) {
      if (lldp_mismatch[p]) bad[topo.port(p).node].push_back(p);
    }
    for (auto& [node, ports] : bad) {
      Key key{Key::kPorts, node};
      seen.insert(key);
      Tracked& t = track(key, now);
      Incident& inc = t.incident;
      t.last_bad = now;
      bool changed = inc.ports != ports || inc.kind != kMiscabling;
      inc.kind = kMiscabling;
      inc.ports = ports;
      inc.confidence = 0.99;
      nlohmann::json seen_json = nlohmann::json::array();
      for (PortId p : ports) {
        seen_json.push_back(
            {{"port", topo.portRef(p)},
             {"lldp_neighbor", lldp_neighbor[p]},
             {"topology_peer", topo.port(p).link == kNone
                                   ? "(unconnected)"
                                   : topo.portRef(topo.dirDstPort(topo.egressOf(p)))}});
      }
      inc.evidence = {{"method", "LLDP against the topology"}, {"ports", seen_json}};
      if (!inc.localized_at) {
        inc.localized_at = now;
        changed = true;
      }
      if (changed) notify(inc);
    }
  }

  // Incidents whose hypothesis was not supported for resolve_after_s resolve;
  // unlocalized suspects that faded are closed the same way.
  void expire(double now, const std::set<Key>& seen) {
    for (auto& [key, t] : tracked) {
      if (t.restored) {
        t.restored = false;
        if (!seen.contains(key)) t.last_bad = now;
      }
      if (!t.open || seen.contains(key)) continue;
      t.strong_passes = 0;
      if (now - t.last_bad >= cfg.resolve_after_s) {
        t.open = false;
        t.incident.resolved_at = now;
        notify(t.incident);
      }
    }
  }

  void restore(const std::vector<Incident>& incidents) {
    for (const Incident& i : incidents) {
      if (i.id.rfind("inc-", 0) == 0) {
        next_id = std::max<uint64_t>(next_id, std::strtoull(i.id.c_str() + 4, nullptr, 10) + 1);
      }
      Key key{Key::kLink, i.link};
      if (i.node != kNone) key = {Key::kNode, i.node};
      if (!i.ports.empty()) {
        key = {Key::kPorts, topo.port(i.ports.front()).node};
      }
      if (i.resolved_at || key.id == kNone || tracked.contains(key)) {
        history.push_back(i);
        continue;
      }
      Tracked t;
      t.incident = i;
      t.last_bad = i.localized_at.value_or(i.opened_at);
      t.restored = true;
      tracked.emplace(key, t);
    }
  }

  void finish() {
    if (newest != -INFINITY && newest == next_pass) {
      pass(newest);
      next_pass += cfg.pass_interval_s;
    }
  }

  Report report() const {
    Report r;
    r.generated_at = newest == -INFINITY ? 0 : newest;
    r.incidents = history;
    for (const auto& [key, t] : tracked) r.incidents.push_back(t.incident);
    std::sort(r.incidents.begin(), r.incidents.end(), [](const Incident& a, const Incident& b) {
      return a.opened_at != b.opened_at ? a.opened_at < b.opened_at : a.id < b.id;
    });
    return r;
  }
};

Engine::Engine(const Topology& topo, EngineConfig config)
    : impl_(std::make_unique<Impl>(topo, config)) {}
Engine::~Engine() = default;

void Engine::onProbe(const ProbeRecord& r) { impl_->probe(r); }
void Engine::onPort(const PortRecord& r) { impl_->port(r); }
void Engine::onLldp(const LldpRecord& r) { impl_->lldp(r); }
Report Engine::report() const { return impl_->report(); }
const IngestStats& Engine::stats() const { return impl_->stats; }
void Engine::finish() { impl_->finish(); }
void Engine::advanceTo(double t) {
  if (t > impl_->newest) impl_->clock(t);
}

LinkEvidence Engine::linkEvidence(topology::DirLinkId d) const {
  Tally t = impl_->links.total(d);
  const double rt = impl_->links_rt ? impl_->links_rt->total(d).n : 0;
  return {t.n, t.k, impl_->nullRate(t.n, rt)};
}

Coverage Engine::coverage(double min_probes) const {
  Coverage c;
  c.dirlinks = impl_->links.size();
  for (size_t d = 0; d < c.dirlinks; ++d) c.covered += impl_->links.total(d).n >= min_probes;
  return c;
}

double Engine::backgroundLoss() const { return impl_->background.round_trip; }

void Engine::restore(const std::vector<Incident>& incidents) { impl_->restore(incidents); }

void Engine::onIncidentChange(std::function<void(const Incident&)> callback) {
  impl_->listeners.push_back(std::move(callback));
}

}  // namespace netdiag::analyzer
