#include "analyzer/explain.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "analyzer/stats.h"

namespace netdiag::analyzer {

using namespace topology;

namespace {

constexpr int kMaxExplanations = 64;
// The backward check costs one explaining-away per pair of accepted
// hypotheses; beyond this many (a fabric-wide event) it is skipped.
constexpr size_t kMaxBackwardChecks = 16;
// The links of unseen stretches weighed as rivals of one hypothesis: the
// strongest 8, and any tied with the 8th (a flow's unseen stretch gives
// every link on it the same weight, and the hash's order among equals says
// nothing of which one is faulty), up to 32.
constexpr size_t kMaxUpstream = 8, kMaxUpstreamTied = 32;

using SegmentLists = std::unordered_map<uint32_t, std::vector<uint32_t>>;

// The hosts at a segment's ends (a host-side fault hits every segment of
// its flows, probing or probed, both directions).
struct Ends {
  NodeId ids[2] = {kNone, kNone};
  int count = 0;
  const NodeId* begin() const { return ids; }
  const NodeId* end() const { return ids + count; }
};
Ends endsOf(const LossySegment& s) {
  Ends e;
  if (s.dst_node != kNone) e.ids[e.count++] = s.dst_node;
  if (s.src_node != kNone && s.src_node != s.dst_node) e.ids[e.count++] = s.src_node;
  return e;
}

// The log-likelihood ratio of a window's n probes and k losses at
// background q plus added loss x, against q alone.
double windowLogRatio(double n, double k, double q, double x) {
  const double q1 = std::min(q + x, 1 - 1e-12);
  return (k > 0 ? k * std::log(q1 / q) : 0) + (n - k) * (std::log1p(-q1) - std::log1p(-q));
}

// log(s * r + 1 - s) for r = e^log_r, without overflow: a window that
// crossed a link of that loss with probability s.
double mixtureLog(double s, double log_r) {
  return log_r > 0 ? log_r + std::log(s + (1 - s) * std::exp(-log_r))
                   : std::log1p(s * std::expm1(log_r));
}

// The maximum of llr(x) over added losses from 1e-4 up, 25 % apart (the
// mixture likelihoods below are not concave in x).
template <typename F>
double maxOverAddedLoss(const F& llr) {
  double best = 0;
  for (double x = 1e-4; x < 1; x *= 1.25) best = std::max(best, llr(x));
  return best;
}

struct RoundTrips {
  double n, k, ns, ks;
};

class Explainer {
 public:
  Explainer(const FabricEvidence& ev, const ExplainConfig& cfg)
      : ev_(ev),
        topo_(ev.topology()),
        cfg_(cfg),
        segs_(ev.lossy().segments()),
        open_llr_(openLlr(topo_)),
        log_m_(logHypotheses(topo_)),
        short_buckets_(std::clamp<size_t>(cfg.short_buckets, 1, ev.buckets())),
        log_short_windows_(std::log(static_cast<double>(ev.buckets()) / short_buckets_)),
        short_from_((static_cast<double>(ev.links().newestBucket()) -
                     static_cast<double>(short_buckets_) + 1) *
                    ev.bucketWidth()),
        unexplained_(segs_.size(), 1.0) {}

  std::vector<Hypothesis> run();

 private:
  double llrOf(double n, double k, double n_rt, double k_rt, double* added,
               const Background& b) const;
  std::vector<Candidate> attributed(const std::vector<Hypothesis>& accepted,
                                    const Background& b) const;
  Candidate testedShared(size_t j, const std::vector<Hypothesis>& accepted) const;
  double rateAbove(const Candidate& c, const Background& b) const;
  Background residualBackground(const std::vector<Hypothesis>& accepted) const;
  void estimateLoss(Hypothesis& h, const Candidate& c, const Background& b) const;
  void score(Candidate& c) const;
  const Candidate& fresh(Candidate& c) const {
    if (c.stale) {
      score(c);
      c.stale = false;
    }
    return c;
  }
  void collectCandidates();
  void discount(uint32_t i, double w);
  double segmentBackground(const LossySegment& s) const {
    return s.round_trip ? ev_.background().round_trip : ev_.background().one_way;
  }
  double crossedPosterior(const LossySegment& seg, double s, std::optional<double> x) const;
  double unseenShare(const LossySegment& seg, DirLinkId d, bool doubt_cache) const;
  double explainedShare(const Key& key, const Candidate& c, const LossySegment& seg) const;
  double crossing(const Key& key, const LossySegment& seg) const;
  // `when`: only the segments of windows ending at times it accepts;
  // `certain_too` false leaves the segments certainly through `d` alone.
  void explainBy(DirLinkId d, std::optional<double> x, bool doubt_cache = false,
                 const std::function<bool(double)>* when = nullptr, bool certain_too = true);
  // A carrier change on link `l`, or a drain or restore of it by netdiag,
  // makes the switches at its ends reconverge (routes withdrawn, ECMP
  // groups rebuilt): flows through them lose packets for a few seconds on
  // links that never changed. Those links'
  // losses in the windows the change touched are explained, like `l`'s.
  void explainConvergence(LinkId l);
  void explainTxDrops();
  void explain(const Key& key, const Candidate& c);
  void backwardCheck(std::vector<Hypothesis>& accepted) const;
  void posteriors(std::vector<Hypothesis>& accepted);
  void accessAmbiguity(Hypothesis& h);
  double leftBy(uint32_t i, const std::vector<Hypothesis>& accepted,
                const std::function<bool(size_t)>& counts) const;
  Candidate restOf(const Key& key, const std::vector<Hypothesis>& accepted,
                   const std::function<bool(size_t)>& counts) const;
  Candidate linkRestSince(DirLinkId d, double onset, const std::vector<Hypothesis>& accepted,
                          const std::function<bool(size_t)>& counts) const;
  double firstLoss(DirLinkId d) const;
  void sharedPathAlternatives(Hypothesis& h, const std::vector<Hypothesis>& accepted,
                              const std::vector<std::vector<Key>>& tied);
  std::vector<DirLinkId> ecmpSiblings(DirLinkId d) const;
  void siblingAlternative(Hypothesis& h, const std::vector<Hypothesis>& accepted);
  void somePathsDead(Hypothesis& h);
  void everyFlowDead(Hypothesis& h, const std::vector<uint32_t>& dead_segs, double onset);
  void deadOnUnseenStretch(Hypothesis& h);
  std::vector<DirLinkId> carriersOf(const std::vector<uint32_t>& dead, bool certain,
                                    bool doubt_cache,
                                    const std::function<bool(DirLinkId)>& keep) const;
  static bool joinGroup(Hypothesis& h, const std::vector<DirLinkId>& links);
  const std::unordered_set<DirLinkId>& slowLinks();
  std::vector<Hypothesis> greedy(const std::set<Key>& excluded);
  // An upstream link shared by two or more accepted access links: which of
  // them (indices into accepted), its mixture LLR over all their
  // flow-windows, and theirs together less the prior of the extra faults.
  struct SharedUpstream {
    DirLinkId link;
    std::vector<size_t> access;
    double llr, own;
  };
  std::vector<SharedUpstream> sharedUpstream(const std::vector<Hypothesis>& accepted) const;
  // The keys to search again without, and the upstream links to find.
  std::pair<std::set<Key>, std::set<Key>> upstreamInstead(
      const std::vector<Hypothesis>& accepted) const;
  void jointUpstream(std::vector<Hypothesis>& accepted);
  double windowLlr(const std::vector<uint32_t>& segs, double n_all, std::optional<DirLinkId> via,
                   bool per_flow = false) const;
  void unseenRivalsOfHost(Hypothesis& h);
  double shareOn(const LossySegment& seg, DirLinkId via) const;
  double smallestShare(const std::vector<uint32_t>& segs, DirLinkId via) const;
  double flowLlr(const std::vector<FlowLoss::Flow>& flows, double s) const;
  double jointLlr(DirLinkId d, DirLinkId other) const;
  // The newest buckets of `t` from the one holding `onset` on (1 to the horizon).
  size_t bucketsSince(double onset, const BucketedTallies& t) const {
    return static_cast<size_t>(
        std::clamp<int64_t>(t.newestBucket() - bucketOf(onset, ev_.bucketWidth()) + 1, 1,
                            static_cast<int64_t>(ev_.buckets())));
  }
  double llrWithout(DirLinkId u, DirLinkId d) const;
  using Ranked = std::vector<std::pair<double, DirLinkId>>;  // -weight, link
  Ranked unseenUpstream(const std::vector<uint32_t>& segs, DirLinkId self, bool with_own) const;
  static bool pastUpstreamCap(const Ranked& ranked, size_t i, size_t tried);
  void unseenStretchAlternatives(Hypothesis& h, const std::vector<Hypothesis>& accepted);

  const FabricEvidence& ev_;
  const Topology& topo_;
  ExplainConfig cfg_;
  const std::deque<LossySegment>& segs_;
  const double open_llr_, log_m_;
  const size_t short_buckets_;
  const double log_short_windows_, short_from_;
  // Per hypothesis kind (Key::Kind; kPorts has none): candidates and the
  // lossy segments each counts.
  std::unordered_map<uint32_t, Candidate> link_c_, node_c_, side_c_;
  SegmentLists link_segs_, node_segs_, side_segs_;
  std::unordered_map<uint32_t, Candidate>& pool(Key::Kind k) {
    return k == Key::kLink ? link_c_ : k == Key::kNode ? node_c_ : side_c_;
  }
  const std::unordered_map<uint32_t, Candidate>& pool0(Key::Kind k) const {
    return k == Key::kLink ? link_c0_ : k == Key::kNode ? node_c0_ : side_c0_;
  }
  const SegmentLists& lists(Key::Kind k) const {
    return k == Key::kLink ? link_segs_ : k == Key::kNode ? node_segs_ : side_segs_;
  }
  // Each lossy segment keeps the share of its losses not yet explained.
  std::vector<double> unexplained_;
  // The state before the greedy search (after counters and claims).
  std::unordered_map<uint32_t, Candidate> link_c0_, node_c0_, side_c0_;
  std::vector<double> unexplained0_;
  std::vector<double> unclaimed_;                            // before the claims (after counters)
  std::optional<std::unordered_set<DirLinkId>> slow_links_;  // slowLinks(), once asked
  std::unordered_set<NodeId> slow_hosts_;                    // and the hosts it found slow
};

// One-way counts are tested against one direction's background, round
// trips against the round trip's, with one added loss for both.
double Explainer::llrOf(double n, double k, double n_rt, double k_rt, double* added,
                        const Background& b) const {
  // (Explaining away subtracts fractions: keep rounding from going negative.)
  const double n1 = std::max(0.0, n - n_rt), k1 = std::clamp(k - k_rt, 0.0, n1);
  n_rt = std::max(0.0, n_rt), k_rt = std::clamp(k_rt, 0.0, n_rt);
  return twoClassLlr(n1, k1, b.one_way, n_rt, k_rt, b.round_trip, added);
}

// Probes to a host are whole round trips, whatever the records carried.
RoundTrips roundTrips(const Candidate& c) {
  auto rt = [&c](double all, double round_trips) { return c.host ? all : round_trips; };
  return {rt(c.n, c.n_rt), rt(c.k, c.k_rt), rt(c.ns, c.ns_rt), rt(c.ks, c.ks_rt)};
}

void Explainer::score(Candidate& c) const {
  const auto [n_rt, k_rt, ns_rt, ks_rt] = roundTrips(c);
  // Two horizons tested, with half the prior each; the short one is tested
  // on every one of the windows that fit in the long one (a scan
  // statistic), so each short window gets that share of its half.
  double x_long = 0, x_short = 0;
  const double l_long = llrOf(c.n, c.k, n_rt, k_rt, &x_long, ev_.background());
  const double l_short =
      llrOf(c.ns, c.ks, ns_rt, ks_rt, &x_short, ev_.background()) - log_short_windows_;
  c.llr = std::max(l_long, l_short) - std::log(2.0);
  const bool short_wins = l_short > l_long;
  c.q0 = short_wins ? ev_.nullRate(c.ns, ns_rt) : ev_.nullRate(c.n, n_rt);
  c.loss = short_wins ? x_short : x_long;
}

// The long horizon's added loss of a candidate above background b.
double Explainer::rateAbove(const Candidate& c, const Background& b) const {
  const RoundTrips rt = roundTrips(c);
  double x = 0;
  llrOf(c.n, c.k, rt.n, rt.k, &x, b);
  return x;
}

// The losses each accepted hypothesis caused, for the rate it states. The
// greedy search gives a lossy segment that several accepted hypotheses
// cross to whichever came first: right for deciding what needs a fault of
// its own, but it leaves the first one's rate too high and the others' too
// low (their clean windows on those flows stay, their lossy ones go). Here
// each such segment's losses are shared in proportion to the rates, the
// expected share each caused (an EM over the rates: a share, then the
// rates from the shares, a few rounds). What the others lost before the
// hypothesis on the path leaves its probes too (they never reached it).
std::vector<Candidate> Explainer::attributed(const std::vector<Hypothesis>& accepted,
                                             const Background& b) const {
  std::vector<Candidate> out;
  for (const Hypothesis& h : accepted) out.push_back(h.evidence);
  if (accepted.size() <= 1 || accepted.size() > kMaxBackwardChecks) return out;
  struct Other {
    size_t h;
    double share;  // of the segment, explained by h
    bool before;   // h lies before this one on the path: its losses never got here
  };
  struct Shared {
    uint32_t seg;
    double avail;     // of the segment, what neither counters nor claims took
    bool given_back;  // claimed by another: back in this one's evidence first
    std::vector<Other> others;
  };
  // Where a hypothesis sits on a segment's path (a host past its links).
  auto position = [this](const Key& k, const LossySegment& seg) -> size_t {
    if (k.kind != Key::kLink) return SIZE_MAX;
    const auto links = ev_.lossy().linksOf(seg);
    return static_cast<size_t>(std::find(links.begin(), links.end(), k.id) - links.begin());
  };
  std::vector<std::vector<Shared>> shared(accepted.size());
  std::vector<Candidate> base;
  std::vector<double> x(accepted.size());
  for (size_t j = 0; j < accepted.size(); ++j) {
    const Key& key = accepted[j].key;
    const uint64_t me = encodeKey(key);
    for (uint32_t i : lists(key.kind).at(key.id)) {
      // A paged incident's claim keeps a segment out of everyone else's
      // evidence, for deciding; its losses are still shared here.
      const bool claimed = segs_[i].claimed_by != 0;
      Shared sh{
          i, claimed ? unclaimed_[i] : unexplained0_[i], claimed && segs_[i].claimed_by != me, {}};
      const size_t here = position(key, segs_[i]);
      for (size_t h = 0; h < accepted.size(); ++h) {
        if (h == j) continue;
        const double e = crossing(accepted[h].key, segs_[i]);
        // (One on an unseen stretch is taken to lie past this one.)
        if (e > 0) sh.others.push_back({h, e, position(accepted[h].key, segs_[i]) < here});
      }
      if (!sh.others.empty() || sh.given_back) shared[j].push_back(std::move(sh));
    }
    Candidate c0 = pool0(key.kind).at(key.id);
    for (const Shared& sh : shared[j]) {
      if (sh.given_back) c0.remove(-sh.avail, segs_[sh.seg], segs_[sh.seg].t >= short_from_);
    }
    x[j] = rateAbove(c0, b);
    base.push_back(c0);
  }
  constexpr int kRounds = 8;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<double> next(accepted.size());
    for (size_t j = 0; j < accepted.size(); ++j) {
      Candidate c = base[j];
      for (const Shared& sh : shared[j]) {
        const LossySegment& seg = segs_[sh.seg];
        const double q = seg.round_trip ? b.round_trip : b.one_way;
        double before = 0, after = 0;
        for (const Other& o : sh.others) (o.before ? before : after) += o.share * x[o.h];
        const double all = q + x[j] + before + after;
        const bool in_short = seg.t >= short_from_;
        // Losses before it never reached it; those past it had crossed it.
        if (before > 0) c.removeLosses(sh.avail * before / all, seg, in_short, true);
        if (after > 0) c.removeLosses(sh.avail * after / all, seg, in_short, false);
      }
      next[j] = rateAbove(c, b);
      out[j] = c;
    }
    x = std::move(next);
  }
  return out;
}

// The evidence a link hypothesis is tested on, for paging, when other
// accepted hypotheses lie for certain on its flows too. The greedy search
// gives such a segment whole to whichever came first, so the later one of
// two faults in series keeps its clean windows on their shared flows and
// loses the lossy ones: tested on that, a real second fault waits, or
// never pages, on the flows both carry. Here the segment's losses are
// shared by rate, as for the estimate (attributed), but only with
// hypotheses certainly on it; what may have crossed another on an unseen
// stretch goes to it as the greedy search took it, by the posterior that
// it did. Everything else is the greedy's evidence before it began.
Candidate Explainer::testedShared(size_t j, const std::vector<Hypothesis>& accepted) const {
  if (accepted.size() <= 1 || accepted.size() > kMaxBackwardChecks) return accepted[j].evidence;
  const Key& key = accepted[j].key;
  Candidate c = pool0(key.kind).at(key.id);
  const Background& b = ev_.background();
  struct Shared {
    uint32_t seg;
    double avail;
    std::vector<size_t> others;  // certainly on it
  };
  std::vector<Shared> shared;
  for (uint32_t i : lists(key.kind).at(key.id)) {
    const LossySegment& seg = segs_[i];
    if (seg.claimed_by != 0) continue;  // another's claim: already out of pool0
    Shared sh{i, unexplained0_[i], {}};
    double keep = 1;
    for (size_t h = 0; h < accepted.size(); ++h) {
      if (h == j) continue;
      const double e = crossing(accepted[h].key, seg);
      if (e >= 1) {
        sh.others.push_back(h);
      } else if (e > 0) {
        keep *= 1 - crossedPosterior(seg, e, std::max(accepted[h].evidence.loss, 1e-9));
      }
    }
    if (keep < 1) c.remove(sh.avail * (1 - keep), seg, seg.t >= short_from_);
    sh.avail *= keep;
    if (!sh.others.empty()) shared.push_back(std::move(sh));
  }
  if (shared.empty()) return accepted[j].evidence;
  std::vector<double> x(accepted.size());
  for (size_t h = 0; h < accepted.size(); ++h) x[h] = accepted[h].evidence.loss;
  constexpr int kRounds = 8;
  Candidate base = c;
  for (int round = 0; round < kRounds; ++round) {
    c = base;
    for (const Shared& sh : shared) {
      const LossySegment& seg = segs_[sh.seg];
      const double q = seg.round_trip ? b.round_trip : b.one_way;
      double others = 0;
      for (size_t h : sh.others) others += x[h];
      c.removeLosses(sh.avail * others / (q + x[j] + others), seg, seg.t >= short_from_, false);
    }
    x[j] = rateAbove(c, b);
  }
  score(c);
  return c;
}

// The background a stated rate is measured against: the losses no
// accepted hypothesis explains, over every probe of the horizon. The tests
// keep the evidence's background (a trimmed mean of the ports' rates): a
// fault that many ports' flows cross raises it, which errs toward not
// paging, but a rate stated above it would be short by what the faults
// themselves added to it.
Background Explainer::residualBackground(const std::vector<Hypothesis>& accepted) const {
  const Background& tested = ev_.background();
  if (accepted.empty() || accepted.size() > kMaxBackwardChecks) return tested;
  double k_one_way = 0, k_round_trip = 0;
  for (uint32_t i = 0; i < segs_.size(); ++i) {
    if (unexplained0_[i] <= 0) continue;
    const double left = unexplained0_[i] * leftBy(i, accepted, [](size_t) { return true; });
    (segs_[i].round_trip ? k_round_trip : k_one_way) += left * segs_[i].k;
  }
  const FabricEvidence::OwnFlows all = ev_.allFlows();
  const double n_one_way = all.out.n + all.back.n, n_round_trip = all.all.n - all.out.n;
  auto rate = [](double k, double n, double at_most) {
    return n > 0 ? std::clamp(k / n, 1e-9, at_most) : at_most;
  };
  return {rate(k_round_trip, n_round_trip, tested.round_trip),
          rate(k_one_way, n_one_way, tested.one_way)};
}

// The rate the incident states is the fault's since it began, not the
// horizon's average (which a fault younger than the horizon dilutes with
// the clean probes before it): the maximum-likelihood change point, i.e.
// the newest stretch of m buckets whose likelihood ratio is largest. The
// fault began somewhere inside the stretch's oldest bucket, so that
// bucket's rate is free between none and the fault's (a nuisance), and
// the 90 % interval is the profile over the change point as well as the
// rate: every x within the bar of the best on some stretch. The raw
// tallies of each stretch are scaled by the share of the horizon's probes
// and losses that `c` (the attributed evidence) leaves to this hypothesis.
void Explainer::estimateLoss(Hypothesis& h, const Candidate& c, const Background& b) const {
  const bool link = h.key.kind == Key::kLink;
  const BucketedTallies& all = link                       ? ev_.links()
                               : h.key.kind == Key::kNode ? ev_.toNode()
                                                          : ev_.hostSide();
  const BucketedTallies* rt = link ? ev_.linksRoundTrip() : &all;
  const auto [n_rt, k_rt, ns_rt, ks_rt] = roundTrips(c);
  const Tally t = all.total(h.key.id), r = rt ? rt->total(h.key.id) : Tally{};
  auto share = [](double left, double raw) {
    return raw > 0 ? std::clamp(left / raw, 0.0, 1.0) : 0;
  };
  const double n1_share = share(c.n - n_rt, t.n - r.n), k1_share = share(c.k - k_rt, t.k - r.k);
  const double n2_share = share(n_rt, r.n), k2_share = share(k_rt, r.k);
  struct Counts {
    double n1 = 0, k1 = 0, n2 = 0, k2 = 0;
  };
  auto counts = [&](size_t m) {
    Counts s;
    if (m == 0) return s;
    const Tally tm = all.recent(h.key.id, m), rm = rt ? rt->recent(h.key.id, m) : Tally{};
    s.n1 = std::max(0.0, tm.n - rm.n) * n1_share;
    s.k1 = std::clamp((tm.k - rm.k) * k1_share, 0.0, s.n1);
    s.n2 = rm.n * n2_share;
    s.k2 = std::clamp(rm.k * k2_share, 0.0, s.n2);
    return s;
  };
  auto at = [&](double x, const Counts& s) {
    return twoClassLlrAt(x, s.n1, s.k1, b.one_way, s.n2, s.k2, b.round_trip);
  };
  auto fit = [&](const Counts& s, double* x) {
    return twoClassLlr(s.n1, s.k1, b.one_way, s.n2, s.k2, b.round_trip, x);
  };
  // Stretch m: the newest m - 1 buckets at x, the m-th at its own y <= x.
  struct Stretch {
    Counts full, edge;
    double x = 0, y = 0, llr = 0;
  };
  auto value = [&](const Stretch& s, double x) {
    return at(x, s.full) + at(std::min(x, s.y), s.edge);
  };
  std::vector<Stretch> stretches;
  Counts before;
  for (size_t m = 1; m <= ev_.buckets(); ++m) {
    const Counts upto = counts(m);
    Stretch s;
    s.full = m == 1 ? upto : before;
    if (m > 1) {
      s.edge = {upto.n1 - before.n1, upto.k1 - before.k1, upto.n2 - before.n2, upto.k2 - before.k2};
    }
    before = upto;
    fit(s.edge, &s.y);
    fit(s.full, &s.x);
    if (s.y > s.x) fit(upto, &s.x);  // the edge pulls the rate up: one rate for both
    s.llr = value(s, s.x);
    stretches.push_back(s);
  }
  const auto best =
      std::max_element(stretches.begin(), stretches.end(),
                       [](const Stretch& u, const Stretch& v) { return u.llr < v.llr; });
  // (A class with no probes here does not bound the rate.)
  const bool one_way = best->full.n1 + best->edge.n1 > 0,
             round_trip = best->full.n2 + best->edge.n2 > 0;
  const double top = addedLossTop(one_way ? b.one_way : 0.0, round_trip ? b.round_trip : 0.0);
  h.loss = std::min(best->x, top);
  // Stretch i: the newest i buckets whole, the (i+1)-th its edge.
  const auto whole = static_cast<double>(best - stretches.begin());
  h.onset = (static_cast<double>(all.newestBucket()) - whole + 1) * ev_.bucketWidth();
  h.onset_llr = best->llr;
  // Over-dispersion: buckets of the stretch that vary more than binomial
  // counts at one rate would (flows of unequal exposure, losses shared
  // with other faults) widen the interval by their Pearson ratio (a
  // quasi-likelihood; never narrower than the binomial one).
  const size_t full_buckets = static_cast<size_t>(best - stretches.begin());
  double pearson = 0;
  size_t used = 0;
  for (size_t m = 0; m < std::max<size_t>(full_buckets, 1); ++m) {
    const Stretch& one = stretches[m];
    const Counts& c1 = m == 0 ? one.full : one.edge;
    double expected = 0, variance = 0;
    for (auto [n, q] : {std::pair{c1.n1, b.one_way}, {c1.n2, b.round_trip}}) {
      const double p = std::min(q + h.loss, 1.0);
      expected += n * p, variance += n * p * (1 - p);
    }
    if (variance <= 0) continue;
    const double d = c1.k1 + c1.k2 - expected;
    pearson += d * d / variance;
    ++used;
  }
  const double dispersion = used >= 3 ? std::max(1.0, pearson / static_cast<double>(used - 1)) : 1;
  const double bar = best->llr - dispersion * kInterval90Nats;
  double lo = h.loss, hi = h.loss;
  for (const Stretch& s : stretches) {
    if (s.llr < bar) continue;
    auto [l, u] = concaveLevelSet([&](double x) { return value(s, x); }, s.x, bar, top);
    lo = std::min(lo, l), hi = std::max(hi, u);
  }
  h.loss_interval = {lo, hi};
}

// Candidates: every link and host with a loss in the horizon.
void Explainer::collectCandidates() {
  const LossyStore& lossy = ev_.lossy();
  for (uint32_t i = 0; i < segs_.size(); ++i) {
    for (DirLinkId d : lossy.linksOf(segs_[i])) link_segs_[d].push_back(i);
    if (segs_[i].forward && segs_[i].dst_node != kNone) node_segs_[segs_[i].dst_node].push_back(i);
    for (NodeId n : endsOf(segs_[i])) side_segs_[n].push_back(i);
  }
  const BucketedTallies* rt = ev_.linksRoundTrip();
  for (auto& [d, list] : link_segs_) {
    Candidate c;
    Tally t = ev_.links().total(d), s = ev_.links().recent(d, short_buckets_);
    c.n = t.n, c.k = t.k, c.ns = s.n, c.ks = s.k;
    if (rt) {
      Tally r = rt->total(d), rs = rt->recent(d, short_buckets_);
      c.n_rt = r.n, c.k_rt = r.k, c.ns_rt = rs.n, c.ks_rt = rs.k;
    }
    c.segments = static_cast<int>(list.size());
    score(c);
    link_c_[d] = c;
  }
  auto hosts = [&](const SegmentLists& from, const BucketedTallies& tallies, auto& into) {
    for (auto& [n, list] : from) {
      if (!topo_.node(n).isHost()) continue;
      Candidate c;
      Tally t = tallies.total(n), s = tallies.recent(n, short_buckets_);
      c.n = t.n, c.k = t.k, c.ns = s.n, c.ks = s.k;
      c.host = true;
      c.segments = static_cast<int>(list.size());
      score(c);
      into[n] = c;
    }
  };
  hosts(node_segs_, ev_.toNode(), node_c_);
  hosts(side_segs_, ev_.hostSide(), side_c_);
}

// Takes the share w of what is left of segment i out of every candidate
// it counts for (but accepted ones).
void Explainer::discount(uint32_t i, double w) {
  const LossySegment& s = segs_[i];
  double part = unexplained_[i] * w;
  if (part <= 0) return;
  unexplained_[i] -= part;
  bool in_short = s.t >= short_from_;
  auto reduce = [&](Candidate& c) {
    if (c.accepted) return;
    c.remove(part, s, in_short);
    if (unexplained_[i] < 0.5 && unexplained_[i] + part >= 0.5) --c.segments;
  };
  for (DirLinkId d : ev_.lossy().linksOf(s)) {
    if (auto it = link_c_.find(d); it != link_c_.end()) reduce(it->second);
  }
  if (s.forward && s.dst_node != kNone) {
    if (auto it = node_c_.find(s.dst_node); it != node_c_.end()) reduce(it->second);
  }
  for (NodeId n : endsOf(s)) {
    if (auto it = side_c_.find(n); it != side_c_.end()) reduce(it->second);
  }
}

// Posterior probability that a lossy segment crossed a link of loss `x`
// that lies on its unseen stretch with ECMP share `s`: the prior s, times
// the likelihood of the segment's own n and k with and without the link's
// loss. A flow that lost every probe is almost surely through a blackhole
// even at a small share; one stray loss is weaker evidence.
// For a link the counters report down or flapping, x is left unknown (it
// was down for part of some windows): any loss on a flow that may have
// crossed it is taken as its doing.
double Explainer::crossedPosterior(const LossySegment& seg, double s,
                                   std::optional<double> x) const {
  const double q0 = segmentBackground(seg);
  if (!x) return s / (s + q0);
  const double q1 = std::min(q0 + *x, 1.0 - 1e-12);
  double log_ratio = seg.k * std::log(q1 / q0);
  if (seg.n > seg.k) log_ratio += (seg.n - seg.k) * (std::log1p(-q1) - std::log1p(-q0));
  if (log_ratio > 50) return 1.0;
  double odds = s * std::exp(log_ratio);
  return odds / (odds + (1.0 - s));
}

// The largest ECMP share of link d on the segment's unseen stretches
// (remembered paths count as unseen when `doubt_cache`).
double Explainer::unseenShare(const LossySegment& seg, DirLinkId d, bool doubt_cache) const {
  double s_max = 0;
  for (const Middle& m : seg.middle) {
    if (!m.known() || (doubt_cache && m.cached && m.from != m.to)) {
      s_max = std::max(s_max, ev_.shares().share(m.from, m.to, d));
    }
  }
  return s_max;
}

// The chance that the segment's probes met the hypothesis before their
// losses are known: 1 where it is on the known path (or is the segment's
// host), else the ECMP share of an unseen stretch that may carry it. The
// split of shared losses weighs this by the rate (attributed): weighing
// explainedShare's posterior instead, which already counts the losses as
// evidence of crossing, would count them twice and hand another fault the
// losses of every flow that merely might have crossed it.
double Explainer::crossing(const Key& key, const LossySegment& seg) const {
  if (key.kind == Key::kNode) return seg.forward && seg.dst_node == key.id ? 1.0 : 0.0;
  if (key.kind == Key::kHostSide) {
    return seg.src_node == key.id || seg.dst_node == key.id ? 1.0 : 0.0;
  }
  auto ls = ev_.lossy().linksOf(seg);
  if (std::find(ls.begin(), ls.end(), key.id) != ls.end()) return 1.0;
  return unseenShare(seg, key.id, false);
}

// The share of a lossy segment that an accepted hypothesis explains, as
// explain() takes it: all of a segment certainly through the link (or to
// the host), the posterior that it crossed the link on its unseen stretch.
double Explainer::explainedShare(const Key& key, const Candidate& c,
                                 const LossySegment& seg) const {
  const double s = crossing(key, seg);
  if (s <= 0 || s >= 1) return s;
  return crossedPosterior(seg, s, std::max(c.loss, 1e-9));
}

// Removes from the evidence what link `d` with loss `x` explains: every
// segment certainly through it, and segments that may have crossed it on
// a stretch discovery did not see, by the posterior that they did.
void Explainer::explainBy(DirLinkId d, std::optional<double> x, bool doubt_cache,
                          const std::function<bool(double)>* when, bool certain_too) {
  std::vector<bool> certain(segs_.size(), false);
  if (auto it = link_segs_.find(d); it != link_segs_.end()) {
    for (uint32_t i : it->second) {
      if (when && !(*when)(segs_[i].t)) continue;
      certain[i] = true;
      if (certain_too) discount(i, 1.0);
    }
  }
  for (uint32_t i = 0; i < segs_.size(); ++i) {
    if (certain[i] || (when && !(*when)(segs_[i].t))) continue;
    const double s_max = unseenShare(segs_[i], d, doubt_cache);
    if (s_max > 0) discount(i, crossedPosterior(segs_[i], s_max, x));
  }
}

// A carrier change resets the sessions and routes of the switches at both
// ends, so flows through either switch may lose probes meanwhile. Not
// netdiag's drain or restore: it moves one session, and only the flows
// hashed onto that link lose probes while their routes move (the explainBy
// of run()); explaining every loss through its switches hid a fault beside
// the drained link, and took away the flows that told it apart.
void Explainer::explainConvergence(LinkId l) {
  if (ev_.carrierChanges(l) < 1) return;
  // Only the few segments near the change: a spine has many links.
  std::vector<char> touched(segs_.size(), 0);
  std::vector<uint32_t> near_change;
  for (uint32_t i = 0; i < segs_.size(); ++i) {
    if (!ev_.carrierTransientAt(l, segs_[i].t, ev_.bucketWidth())) continue;
    touched[i] = 1;
    near_change.push_back(i);
  }
  if (near_change.empty()) return;
  for (PortId end : {topo_.link(l).a, topo_.link(l).b}) {
    const NodeId sw = topo_.port(end).node;
    if (topo_.node(sw).isHost()) continue;
    for (PortId p : topo_.portsOf(sw)) {
      const LinkId m = topo_.port(p).link;
      if (m == kNone || m == l) continue;
      for (DirLinkId d : {2 * m, 2 * m + 1}) {
        if (auto it = link_segs_.find(d); it != link_segs_.end()) {
          for (uint32_t i : it->second) {
            if (!touched[i]) continue;
            touched[i] = 2;  // crossed d for certain
            discount(i, 1.0);
          }
        }
        for (uint32_t i : near_change) {
          if (touched[i] == 2) {
            touched[i] = 1;
            continue;
          }
          const double s_max = unseenShare(segs_[i], d, true);
          if (s_max > 0) discount(i, crossedPosterior(segs_[i], s_max, std::nullopt));
        }
      }
    }
  }
}

// A link whose sending port counts drops (tx_drops: a congested queue, a
// shaper) loses packets for certain: the switch says so. Flows that may
// have crossed it on a stretch discovery did not see (the replies of flows
// whose way out is known) take their losses from it by the posterior that
// they did, at the larger of the counted rate and the rate its own probes
// show. Without this, the other direction of a congested cable, which
// those flows crossed for certain on the way out, took their reply losses
// and paged (full sweep draw 1748). Segments certainly through the link
// stay its own: it is still found, and named congestion.
void Explainer::explainTxDrops() {
  const PortCounters& counters = ev_.counters();
  for (DirLinkId d = 0; d < 2 * topo_.linkCount(); ++d) {
    const Tally drops = counters.txDrops(topo_.dirSrcPort(d));
    if (!(drops.n > 0) || drops.k / drops.n < kMinTxDropRate) continue;
    double x = drops.k / drops.n;
    if (auto it = link_c_.find(d); it != link_c_.end()) x = std::max(x, it->second.loss);
    explainBy(d, x, false, nullptr, /*certain_too=*/false);
  }
}

void Explainer::explain(const Key& key, const Candidate& c) {
  if (key.kind == Key::kLink) {
    explainBy(key.id, std::max(c.loss, 1e-9));
  } else {
    for (uint32_t i : lists(key.kind).at(key.id)) discount(i, 1.0);
  }
}

std::vector<Hypothesis> Explainer::run() {
  collectCandidates();
  // Links the counters report down explain, first, every loss on flows
  // that crossed (or may have crossed) them, in both directions: a link is
  // down both ways, and without one-way counts the replies it dropped would
  // otherwise be blamed on the uplinks their flows went out on. A link whose
  // carrier changed within the horizon (a flap's cycle, a link back up after
  // an outage, a re-cabling), or whose routing netdiag changed (a drain, a
  // restore: e2e saw its own restore page the link), explains the same, but
  // only for the probe windows its changes could have touched: a loss that began after the
  // link came back is new evidence, on it or on anything else. A link whose
  // LLDP neighbour at either end disagrees with the topology is not what
  // the topology says (a cable swapped or moved): the paths mapped over it
  // are wrong, and its miscabling incident is the page, so while LLDP says
  // so it explains what a down link would.
  for (LinkId l = 0; l < topo_.linkCount(); ++l) {
    const bool down = ev_.reportedDown(l) || ev_.lldpMismatch(topo_.link(l).a) ||
                      ev_.lldpMismatch(topo_.link(l).b);
    if (!down && !ev_.changedRecently(l)) continue;
    std::optional<std::function<bool(double)>> when;
    if (!down) {
      const double window = ev_.bucketWidth();
      when = [this, l, window](double t) { return ev_.transientAt(l, t, window); };
    }
    for (DirLinkId d : {2 * l, 2 * l + 1}) {
      if (auto it = link_c_.find(d); it != link_c_.end() && down) it->second.accepted = true;
      // Flows reroute around such a link, so remembered paths are suspect.
      explainBy(d, std::nullopt, true, when ? &*when : nullptr);
    }
    explainConvergence(l);
  }
  explainTxDrops();
  unclaimed_ = unexplained_;
  // Segments claimed by a paged incident count for nobody else.
  for (uint32_t i = 0; i < segs_.size(); ++i) {
    if (segs_[i].claimed_by == 0) continue;
    Candidate* owner = nullptr;
    Key k = decodeKey(segs_[i].claimed_by);
    auto& owners = pool(k.kind);
    if (auto it = owners.find(k.id); it != owners.end()) {
      owner = &it->second;
      owner->accepted = true;  // shield the owner from the discount
    }
    discount(i, 1.0);
    if (owner) owner->accepted = false;
  }
  link_c0_ = link_c_;
  node_c0_ = node_c_;
  side_c0_ = side_c_;
  unexplained0_ = unexplained_;

  std::vector<Hypothesis> accepted = greedy({});
  backwardCheck(accepted);
  // Access links that one upstream link explains better search again
  // without them (once: the second search starts from the same evidence).
  // It must then accept an upstream link (one seen on some flow's path:
  // with none seen, it has no evidence of its own and the group is the
  // answer); otherwise the first search stands.
  const auto [instead, upstream] = upstreamInstead(accepted);
  if (!instead.empty()) {
    auto search = [&](const std::set<Key>& excluded) {
      link_c_ = link_c0_, node_c_ = node_c0_, side_c_ = side_c0_;
      unexplained_ = unexplained0_;
      accepted = greedy(excluded);
      backwardCheck(accepted);
    };
    search(instead);
    const std::set<Key>& wanted = upstream;  // (clang 14 captures no structured binding)
    const bool found = std::any_of(accepted.begin(), accepted.end(),
                                   [&](const Hypothesis& h) { return wanted.contains(h.key); });
    if (!found) search({});
  }
  posteriors(accepted);
  return accepted;
}

// Greedy explaining-away: accept the strongest hypothesis (none of
// `excluded`), remove the lossy segments it explains from every other
// candidate, rescore.
std::vector<Hypothesis> Explainer::greedy(const std::set<Key>& excluded) {
  std::vector<Hypothesis> accepted;
  for (int round = 0; round < kMaxExplanations; ++round) {
    Key best{Key::kLink, kNone};
    Candidate* bc = nullptr;
    for (auto& [d, c] : link_c_) {
      fresh(c);
      if (!c.accepted && c.loss >= cfg_.min_loss && (!bc || c.llr > bc->llr) &&
          !excluded.contains({Key::kLink, d})) {
        bc = &c;
        best = {Key::kLink, d};
      }
    }
    for (auto& [n, c] : node_c_) {
      fresh(c);
      if (!c.accepted && c.loss >= kMinHostLoss && (!bc || c.llr > bc->llr) &&
          !excluded.contains({Key::kNode, n})) {
        bc = &c;
        best = {Key::kNode, n};
      }
    }
    for (auto& [n, c] : side_c_) {
      fresh(c);
      if (!c.accepted && c.loss >= cfg_.min_loss && (!bc || c.llr > bc->llr) &&
          !excluded.contains({Key::kHostSide, n})) {
        bc = &c;
        best = {Key::kHostSide, n};
      }
    }
    if (!bc || bc->llr < open_llr_) break;
    bc->accepted = true;
    Hypothesis h;
    h.key = best;
    h.evidence = *bc;
    accepted.push_back(std::move(h));
    explain(best, *bc);
  }
  return accepted;
}

// Greedy order can accept first a hypothesis whose evidence a later one
// explains better: an access link sees every flow of its host for
// certain, so a fabric link's partial blackhole first looks like the
// access link of the host with the most blackholed flows. Each accepted
// hypothesis must therefore still be significant given all the others
// (a backward check, as in stepwise regression); those that are not are
// dropped, earliest first.
void Explainer::backwardCheck(std::vector<Hypothesis>& accepted) const {
  if (accepted.size() <= 1 || accepted.size() > kMaxBackwardChecks) return;
  // Each is re-scored from its candidate before the greedy, less what the
  // others not yet dropped explain of its segments.
  std::vector<bool> dropped(accepted.size(), false);
  for (size_t j = 0; j < accepted.size(); ++j) {
    const Key& key = accepted[j].key;
    const Candidate rest = restOf(key, accepted, [&](size_t h) { return !dropped[h]; });
    const double min_loss = key.kind == Key::kNode ? kMinHostLoss : cfg_.min_loss;
    dropped[j] = rest.llr < open_llr_ || rest.loss < min_loss;
  }
  size_t kept = 0;
  for (size_t j = 0; j < accepted.size(); ++j) {
    if (!dropped[j]) accepted[kept++] = accepted[j];
  }
  accepted.resize(kept);
}

// Posterior: one fault among M hypotheses a priori, against the strongest
// competing explanation of the same evidence.
void Explainer::posteriors(std::vector<Hypothesis>& accepted) {
  for (Hypothesis& h : accepted) {
    h.alt_llr = h.alts_llr = -INFINITY;
    if (h.key.kind == Key::kLink) {
      auto it = link_c_.find(Topology::reverse(h.key.id));
      if (it != link_c_.end()) {
        if (fresh(it->second).llr > h.alt_llr) {
          h.alt_name = "reverse direction " + topo_.dirLinkName(Topology::reverse(h.key.id));
        }
        h.weigh(it->second.llr);
      }
      for (NodeId n : {topo_.dirSrcNode(h.key.id), topo_.dirDstNode(h.key.id)}) {
        for (auto* hosts : {&node_c_, &side_c_}) {
          auto nt = hosts->find(n);
          if (nt == hosts->end()) continue;
          if (fresh(nt->second).llr > h.alt_llr)
            h.alt_name = "host " + topo_.node(n).name + " itself";
          h.weigh(nt->second.llr);
        }
      }
    }
    if (h.key.kind == Key::kLink) {
      accessAmbiguity(h);
      siblingAlternative(h, accepted);
      unseenStretchAlternatives(h, accepted);
      deadOnUnseenStretch(h);
    }
    if (h.key.kind == Key::kNode) {
      somePathsDead(h);
      unseenRivalsOfHost(h);
    }
  }
  // Rivals on shared paths last, once every hypothesis has its rivals of
  // the other kinds: one tied with a rival does not explain the rival's
  // evidence away (sharedPathAlternatives), whichever of the two came first.
  std::vector<std::vector<Key>> tied;
  for (const Hypothesis& h : accepted) tied.push_back(h.candidates);
  for (Hypothesis& h : accepted) {
    if (h.key.kind == Key::kLink) sharedPathAlternatives(h, accepted, tied);
    const SegmentLists& own = lists(h.key.kind);
    if (auto it = own.find(h.key.id); it != own.end()) h.certain = it->second;
  }
  jointUpstream(accepted);
  const Background residual = residualBackground(accepted);
  const std::vector<Candidate> own = attributed(accepted, residual);
  std::vector<Candidate> tested;
  for (size_t j = 0; j < accepted.size(); ++j) {
    const bool alone = accepted[j].key.kind == Key::kLink && accepted[j].candidates.empty();
    tested.push_back(alone ? testedShared(j, accepted) : accepted[j].evidence);
  }
  for (size_t j = 0; j < accepted.size(); ++j) {
    Hypothesis& h = accepted[j];
    if (tested[j].llr > h.evidence.llr) {
      // The alternatives were weighed against the greedy's evidence.
      h.alt_llr += tested[j].llr - h.evidence.llr;
      h.alts_llr += tested[j].llr - h.evidence.llr;
      h.evidence = tested[j];
    }
    h.confidence = posterior(h.evidence.llr, log_m_, h.alts_llr);
    estimateLoss(h, own[j], residual);
    h.background = residual;
  }
}

// The links an ECMP hash could have sent the flows of fabric link d over
// instead: going up (away from the hosts), the other links out of its
// switch to a switch as far up; going down, the other links into its far
// switch from one as far up (none for an access link).
std::vector<DirLinkId> Explainer::ecmpSiblings(DirLinkId d) const {
  std::vector<DirLinkId> out;
  const NodeId a = topo_.dirSrcNode(d), b = topo_.dirDstNode(d);
  const uint32_t ha = ev_.hopsFromHosts(a), hb = ev_.hopsFromHosts(b);
  if (ha == 0 || hb == 0 || ha == kNone || hb == kNone || ha == hb) return out;
  if (hb > ha) {
    for (DirLinkId s : topo_.outLinks(a)) {
      if (s != d && ev_.hopsFromHosts(topo_.dirDstNode(s)) == hb) out.push_back(s);
    }
  } else {
    for (DirLinkId s : topo_.outLinks(b)) {
      const DirLinkId in = Topology::reverse(s);
      if (in != d && ev_.hopsFromHosts(topo_.dirSrcNode(in)) == ha) out.push_back(in);
    }
  }
  return out;
}

// The hash that splits a switch's flows among equal links is blind to
// loss: the flows of a fabric link's ECMP siblings are a control group for
// its own. A cause that its flows share with theirs (a sick switch at
// either end, losses on a stretch no path shows, a background the
// estimate put too low) raises both rates alike; a fault of the link
// raises its own alone. So "a cause they share" is a rival, weighed at the
// link's LLR less the two-sample test of its rate above its siblings'
// (after explaining away, as its own). A sibling accepted as a fault of
// its own is no control when its rate is another (apart by ln 99 either
// way: a 5 % downlink beside a 0.5 % one into the same leaf, CI sweep
// draw 0); one that loses alike stays in it: uplinks of one leaf that all
// lose alike are one cause, the leaf, before they are as many faults.
void Explainer::siblingAlternative(Hypothesis& h, const std::vector<Hypothesis>& accepted) {
  const Candidate& own = h.evidence;
  double n = 0, k = 0;
  for (DirLinkId s : ecmpSiblings(h.key.id)) {
    if (auto it = link_c_.find(s); it != link_c_.end()) {
      const Candidate& c = it->second;
      const bool fault = std::any_of(accepted.begin(), accepted.end(), [&](const Hypothesis& o) {
        return o.key == Key{Key::kLink, s};
      });
      const double apart =
          twoSampleLlr(own.n, own.k, c.n, c.k) + twoSampleLlr(c.n, c.k, own.n, own.k);
      if (fault && apart >= std::log(99.0)) continue;
      n += c.n, k += c.k;
    } else {
      const Tally t = ev_.links().total(s);
      n += t.n, k += t.k;
    }
  }
  if (n <= 0) return;
  const double shared = own.llr - twoSampleLlr(own.n, own.k, n, k);
  if (shared > h.alt_llr) h.alt_name = "a cause its ECMP siblings' flows share";
  h.weigh(shared);
}

// Parsimony across access links: a fabric link that flows of several hosts
// may have crossed unseen makes all their access links lossy at once, and
// one fault explains what would otherwise take k (each further fault costs
// ln M of prior). The upstream links that could explain the most of the
// accepted access links' losses, each weighed on their flow-windows.
std::vector<Explainer::SharedUpstream> Explainer::sharedUpstream(
    const std::vector<Hypothesis>& accepted) const {
  auto isAccess = [&](DirLinkId d) {
    return topo_.node(topo_.dirDstNode(d)).isHost() || topo_.node(topo_.dirSrcNode(d)).isHost();
  };
  std::vector<size_t> access;
  for (size_t j = 0; j < accepted.size(); ++j) {
    const Key& k = accepted[j].key;
    if (k.kind == Key::kLink && isAccess(k.id) && !ev_.countersImplicate(k.id) &&
        link_segs_.contains(k.id)) {
      access.push_back(j);
    }
  }
  if (access.size() < 2) return {};
  // Upstream links by the losses they could explain across these access
  // links, and which access links each could explain.
  std::unordered_map<DirLinkId, std::pair<double, std::vector<size_t>>> by_upstream;
  for (size_t j : access) {
    for (uint32_t i : link_segs_.at(accepted[j].key.id)) {
      for (const Middle& m : segs_[i].middle) {
        if (m.known()) continue;
        for (auto [link, share] : ev_.shares().linksOn(m.from, m.to)) {
          auto& [w, js] = by_upstream[link];
          w += share * unexplained0_[i] * segs_[i].k;
          if (js.empty() || js.back() != j) js.push_back(j);
        }
      }
    }
  }
  // The few that could explain the most, of those shared by two or more.
  constexpr size_t kMaxShared = 8;
  std::vector<std::pair<double, DirLinkId>> ranked;
  for (const auto& [u, entry] : by_upstream) {
    if (entry.second.size() >= 2) ranked.emplace_back(-entry.first, u);
  }
  std::sort(ranked.begin(), ranked.end());
  if (ranked.size() > kMaxShared) ranked.resize(kMaxShared);
  std::vector<SharedUpstream> out;
  for (const auto& [neg_weight, u] : ranked) {
    SharedUpstream sh{u, by_upstream.at(u).second, 0, 0};
    std::vector<uint32_t> all;
    double n_all = 0;
    for (size_t j : sh.access) {
      const auto& segs = link_segs_.at(accepted[j].key.id);
      all.insert(all.end(), segs.begin(), segs.end());
      n_all += accepted[j].evidence.n;
      sh.own += windowLlr(segs, accepted[j].evidence.n, std::nullopt);
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    sh.own -= static_cast<double>(sh.access.size() - 1) * log_m_;
    sh.llr = windowLlr(all, n_all, u);
    out.push_back(std::move(sh));
  }
  return out;
}

// When one upstream link explains the flow-windows of several accepted
// access links better than they do together by ln 99 nats, prior paid,
// they are not the faults: the hosts' flows lost on the ECMP branch that
// crossed it, and uniform loss on each host's flows (its cable, or the
// host itself) is what the mixture rejected. The greedy search, which
// scores each candidate on its certain crossings alone, took them first
// (an access link is certain on every flow of its host; the upstream link
// only on the flows whose path was seen), so it searches again without
// them and their hosts. Returns those keys (none when nothing is better),
// and the upstream links.
std::pair<std::set<Key>, std::set<Key>> Explainer::upstreamInstead(
    const std::vector<Hypothesis>& accepted) const {
  std::set<Key> out, upstream;
  for (const SharedUpstream& sh : sharedUpstream(accepted)) {
    if (sh.llr < sh.own + std::log(99.0)) continue;
    upstream.insert({Key::kLink, sh.link});
    for (size_t j : sh.access) {
      const DirLinkId d = accepted[j].key.id;
      out.insert({Key::kLink, d});
      out.insert({Key::kLink, Topology::reverse(d)});
      for (NodeId n : {topo_.dirSrcNode(d), topo_.dirDstNode(d)}) {
        if (!topo_.node(n).isHost()) continue;
        out.insert({Key::kNode, n});
        out.insert({Key::kHostSide, n});
      }
    }
  }
  return {out, upstream};
}

// An upstream link about as good as the access links it could explain
// (within ln 99 nats, prior paid) joins each of their groups.
void Explainer::jointUpstream(std::vector<Hypothesis>& accepted) {
  for (const SharedUpstream& sh : sharedUpstream(accepted)) {
    if (sh.llr < sh.own - std::log(99.0)) continue;
    for (size_t j : sh.access) {
      Hypothesis& h = accepted[j];
      if (std::find(h.candidates.begin(), h.candidates.end(), Key{Key::kLink, sh.link}) !=
          h.candidates.end()) {
        continue;
      }
      h.candidates.push_back({Key::kLink, sh.link});
      h.weigh(h.evidence.llr);
      if (h.alt_name.empty() || h.candidates.size() == 1) {
        h.alt_name =
            "one link upstream of several hosts' access links, on stretches of their "
            "paths that discovery did not see";
      }
    }
  }
}

// The log-likelihood ratio, maximized over the added loss x, of the
// flow-windows `segs` (the lossy ones; `n_all` probes in all, the clean
// ones being the rest) under "link `via` loses x": a lossy window crossed
// it with the ECMP share of its unseen stretch (or for certain when `via`
// is unset: the link they all crossed). Clean windows, of the lossy ones'
// mean size, are a mixture too, at the smallest share seen, which favours
// `via` (so ties go to ambiguity).
double Explainer::windowLlr(const std::vector<uint32_t>& segs, double n_all,
                            std::optional<DirLinkId> via, bool per_flow) const {
  struct W {
    double n, k, q, s;
    size_t flow;  // with per_flow: the windows of one flow (and share) mix as one
  };
  std::vector<W> ws;
  std::map<std::tuple<uint32_t, bool, double>, size_t> flows;
  double n_lossy = 0, s_min = 1;
  for (uint32_t i : segs) {
    const LossySegment& seg = segs_[i];
    const double part = unexplained0_[i];
    if (part <= 0) continue;
    const double sh = via ? shareOn(seg, *via) : 1;
    if (sh > 0) s_min = std::min(s_min, sh);
    const size_t flow =
        per_flow ? flows.try_emplace({seg.flow, seg.forward, sh}, ws.size()).first->second
                 : ws.size();
    ws.push_back({part * seg.n, part * seg.k, segmentBackground(seg), sh, flow});
    n_lossy += part * seg.n;
  }
  const double n_clean = std::max(0.0, n_all - n_lossy);
  const double n_window = ws.empty() ? 1 : std::max(1.0, n_lossy / static_cast<double>(ws.size()));
  const double clean_windows = n_clean / n_window;
  const double q_clean = ev_.background().one_way;
  std::vector<double> lr(ws.size());
  return maxOverAddedLoss([&](double x) {
    double l = 0;
    std::fill(lr.begin(), lr.end(), 0.0);
    for (const W& w : ws) lr[w.flow] += windowLogRatio(w.n, w.k, w.q, x);
    for (size_t j = 0; j < ws.size(); ++j) {
      if (ws[j].flow == j) l += mixtureLog(ws[j].s, lr[j]);
    }
    // Clean windows of the typical size: each crossed `via` with its share
    // and then lost nothing, or did not cross it.
    l += clean_windows * mixtureLog(s_min, windowLogRatio(n_window, 0, q_clean, x));
    return l;
  });
}

// The ECMP share with which link `via` lies on a segment: 1 on its known
// path, else its share of an unseen stretch (0 when on none).
double Explainer::shareOn(const LossySegment& seg, DirLinkId via) const {
  const auto ls = ev_.lossy().linksOf(seg);
  return std::find(ls.begin(), ls.end(), via) != ls.end() ? 1.0 : unseenShare(seg, via, false);
}

// The smallest share with which link `via` lies on the segments (0 when on
// none), as windowLlr weighs their clean windows.
double Explainer::smallestShare(const std::vector<uint32_t>& segs, DirLinkId via) const {
  double s_min = 0;
  for (uint32_t i : segs) {
    const double sh = shareOn(segs_[i], via);
    if (sh > 0) s_min = s_min > 0 ? std::min(s_min, sh) : sh;
  }
  return s_min;
}

// The log-likelihood ratio, maximized over the added loss, of "each flow
// crossed a link of that loss with probability s, and kept its path" (s =
// 1: every flow, as a cable) on the flows' whole tallies.
double Explainer::flowLlr(const std::vector<FlowLoss::Flow>& flows, double s) const {
  const Background& b = ev_.background();
  return maxOverAddedLoss([&](double x) {
    double l = 0;
    for (const FlowLoss::Flow& f : flows) {
      l += mixtureLog(s, windowLogRatio(f.n1, f.k1, b.one_way, x) +
                             windowLogRatio(f.n2, f.k2, b.round_trip, x));
    }
    return l;
  });
}

// Links whose flows are slower than their peers' at z^2 / 2 >= ln 99, after
// explaining away (any added delay: a host's stack, not a fabric fault);
// the hosts whose own flows are, in slow_hosts_.
const std::unordered_set<DirLinkId>& Explainer::slowLinks() {
  if (!slow_links_) {
    slow_links_.emplace();
    EcmpShares& shares = ev_.shares();
    auto share = [&shares](NodeId from, NodeId to, DirLinkId d) {
      return shares.share(from, to, d);
    };
    const double z = std::sqrt(2 * std::log(99.0));
    for (const SlowLink& s : ev_.latency().slowLinks(0, z, share, topo_)) {
      if (s.link != kNone) slow_links_->insert(s.link);
      if (s.host != kNone) slow_hosts_.insert(s.host);
    }
  }
  return *slow_links_;
}

// An access link sees every flow of its host for certain, so two other
// explanations fit its evidence as well as it does, and probes alone can
// rule them out only in some cases:
// - the host itself (a busy responder, its NIC or kernel dropping): it hits
//   every flow to and from the host alike, which is what a lossy access
//   link does too. Ruled out when the host's other ports are clean at the
//   rate this link loses, or when the link's own counters implicate it.
// - an upstream link on a stretch of these flows' paths that discovery did
//   not see (no traceroute): it would make lossy only the windows that
//   crossed it, so it is weighed on them (windowLlr).
// What is not ruled out joins the hypothesis's ambiguity group, with an
// equal likelihood: the posterior is then at most 1/2, as it should be.
// Explaining away takes from segment i the share w of what is left of it,
// so what the accepted hypotheses that `counts` admits leave of it is the
// product of (1 - w) over them, in any order.
double Explainer::leftBy(uint32_t i, const std::vector<Hypothesis>& accepted,
                         const std::function<bool(size_t)>& counts) const {
  double left = 1;
  for (size_t j = 0; j < accepted.size() && left > 0; ++j) {
    if (counts(j)) left *= 1 - explainedShare(accepted[j].key, accepted[j].evidence, segs_[i]);
  }
  return left;
}

// The evidence of `key` as it stands with the accepted hypotheses that
// `counts` admits (never `key` itself) explaining what they explain: its
// candidate before the greedy search, less their shares of its segments.
Candidate Explainer::restOf(const Key& key, const std::vector<Hypothesis>& accepted,
                            const std::function<bool(size_t)>& counts) const {
  Candidate rest = pool0(key.kind).at(key.id);
  auto others = [&](size_t j) { return accepted[j].key != key && counts(j); };
  for (uint32_t i : lists(key.kind).at(key.id)) {
    const double part = unexplained0_[i] * (1 - leftBy(i, accepted, others));
    if (part > 0) rest.remove(part, segs_[i], segs_[i].t >= short_from_);
  }
  score(rest);
  return rest;
}

// The same for link d, from the bucket of `onset` on: its probes there,
// less the shares of its lossy segments there that restOf takes out (what
// counters and others' claims took before the search, unless the link was
// shielded then, and what the others explain).
Candidate Explainer::linkRestSince(DirLinkId d, double onset,
                                   const std::vector<Hypothesis>& accepted,
                                   const std::function<bool(size_t)>& counts) const {
  const size_t stretch = bucketsSince(onset, ev_.links());
  const size_t short_stretch = std::min(stretch, short_buckets_);
  Candidate rest;
  const Tally t = ev_.links().recent(d, stretch), ts = ev_.links().recent(d, short_stretch);
  rest.n = t.n, rest.k = t.k, rest.ns = ts.n, rest.ks = ts.k;
  if (const BucketedTallies* rt = ev_.linksRoundTrip()) {
    const Tally r = rt->recent(d, stretch), rs = rt->recent(d, short_stretch);
    rest.n_rt = r.n, rest.k_rt = r.k, rest.ns_rt = rs.n, rest.ks_rt = rs.k;
  }
  const Key key{Key::kLink, d};
  const uint64_t mine = encodeKey(key);
  const bool shielded = link_c0_.at(d).accepted;
  const int64_t from = bucketOf(onset, ev_.bucketWidth());
  const double short_from =
      (static_cast<double>(ev_.links().newestBucket()) - static_cast<double>(short_stretch) + 1) *
      ev_.bucketWidth();
  auto others = [&](size_t j) { return accepted[j].key != key && counts(j); };
  for (uint32_t i : link_segs_.at(d)) {
    if (bucketOf(segs_[i].t, ev_.bucketWidth()) < from) continue;
    const double before = shielded                      ? 0
                          : segs_[i].claimed_by == mine ? 1 - unclaimed_[i]
                                                        : 1 - unexplained0_[i];
    const double part = before + unexplained0_[i] * (1 - leftBy(i, accepted, others));
    if (part > 0) rest.remove(part, segs_[i], segs_[i].t >= short_from);
  }
  score(rest);
  return rest;
}

// When link d's first lossy window that counts for it began (INFINITY:
// none): one not explained before the search, or one of its own claims.
double Explainer::firstLoss(DirLinkId d) const {
  double first = INFINITY;
  const uint64_t mine = encodeKey({Key::kLink, d});
  if (auto list = link_segs_.find(d); list != link_segs_.end()) {
    for (uint32_t i : list->second) {
      if (unexplained0_[i] > 0 || segs_[i].claimed_by == mine) first = std::min(first, segs_[i].t);
    }
  }
  return first;
}

// Links in series: every lossy flow-window of a link also crossed, for
// certain, whatever else lies on its path, and when the losses come from
// one or a few flows, another link of those paths explains them as well.
// Loss alone cannot tell links that the same lossy flows cross apart; only
// the clean traffic each carries besides does. So each link that certainly
// carried at least a quarter of this one's unexplained losses is weighed on
// the evidence as it would stand without this hypothesis: within ln 99
// nats, it joins the group (and alone keeps the posterior below 0.99).
// The reverse direction is the same cable (weighed as `alt` above); a
// link accepted on its own evidence is no alternative. `tied` holds each
// accepted hypothesis's other rivals (a link can be the rival of two).
void Explainer::sharedPathAlternatives(Hypothesis& h, const std::vector<Hypothesis>& accepted,
                                       const std::vector<std::vector<Key>>& tied) {
  if (accepted.size() > kMaxBackwardChecks) return;
  const DirLinkId d = h.key.id;
  const auto mine = link_segs_.find(d);
  if (mine == link_segs_.end() || ev_.countersImplicate(d)) return;
  std::unordered_map<DirLinkId, double> weight;
  double total = 0;
  for (uint32_t i : mine->second) {
    const double w = unexplained0_[i] * segs_[i].k;
    total += w;
    for (DirLinkId u : ev_.lossy().linksOf(segs_[i])) {
      if (u != d && u != Topology::reverse(d)) weight[u] += w;
    }
  }
  if (total <= 0) return;  // all its losses were claimed or explained before the search
  std::vector<std::pair<double, DirLinkId>> ranked;
  for (auto [u, w] : weight) {
    if (w >= 0.25 * total && !ev_.countersImplicate(u)) ranked.emplace_back(-w, u);
  }
  if (ranked.empty()) return;
  std::sort(ranked.begin(), ranked.end());
  constexpr size_t kMaxSeries = 8;
  if (ranked.size() > kMaxSeries) ranked.resize(kMaxSeries);
  size_t self = 0;
  while (self < accepted.size() && accepted[self].key != h.key) ++self;
  auto others = [self](size_t j) { return j != self; };
  const double first_own = firstLoss(d);
  double own = 0, own_onset = NAN;  // its evidence since own_onset (most rivals share one)
  for (const auto& [neg_weight, u] : ranked) {
    const Key uk{Key::kLink, u};
    const bool taken = std::any_of(accepted.begin(), accepted.end(),
                                   [&](const Hypothesis& a) { return a.key == uk; });
    if (taken || std::find(h.candidates.begin(), h.candidates.end(), uk) != h.candidates.end()) {
      continue;
    }
    // An accepted hypothesis tied with u (u among its rivals) does not
    // explain u's evidence away: where u is the fault, that one is not.
    // Both are weighed since the first lossy window of either (as in
    // jointLlr): the clean probes before it say nothing of a fault younger
    // than the horizon, and would hold the link with more of them to a
    // lower rate.
    const double onset = std::min(first_own, firstLoss(u));
    if (!std::isfinite(onset)) continue;
    if (onset != own_onset) own = linkRestSince(d, own_onset = onset, accepted, others).llr;
    const double l =
        linkRestSince(u, onset, accepted, [&](size_t j) {
          return j != self && std::find(tied[j].begin(), tied[j].end(), uk) == tied[j].end();
        }).llr;
    if (l >= own - std::log(99.0)) {
      h.candidates.push_back(uk);
      if (h.alt_name.empty() || h.candidates.size() == 1) {
        h.alt_name = "link " + topo_.dirLinkName(u) + ", crossed by the same lossy flows";
      }
    }
    h.weigh(h.evidence.llr - (own - l));
  }
}

// The log-likelihood ratio, maximized over the added loss x, of "link d
// loses x" on the flow-windows of d and of `other`: d's own (certain, all
// its probes) and those of `other` that may have crossed d on a stretch
// discovery did not see (a mixture at d's ECMP share there, as in
// windowLlr; their clean windows at the smallest share seen). Weighing two
// links on the same two sets of windows, each with its own certain and its
// unseen share of the other's, is what makes the comparison fair: either
// can cause the other's losses on its unseen stretches.
double Explainer::jointLlr(DirLinkId d, DirLinkId other) const {
  struct W {
    double n, k, q;
  };
  // A flow keeps its path: its windows crossed d on an unseen stretch all
  // together, at d's share there, or none did. One mixture per flow, not
  // per window (a flow's replies through one of sixteen downlinks are one
  // draw of 1/16, not one per window; per window, an uplink whose one flow's
  // replies came back through a 20 % downlink beat the downlink by 5.6
  // nats and paged, full sweep draw 1719).
  struct Flow {
    double s;
    std::vector<W> ws;
  };
  struct Set {
    std::vector<Flow> flows;
    std::map<std::tuple<uint32_t, bool, double>, size_t> index;
    double n_lossy = 0, s_min = 1, n_all = 0, windows = 0;
  };
  Set sets[2];
  // Both links are weighed since the first lossy window of either: the
  // clean probes before it say nothing of a fault younger than the horizon,
  // and would hold a link with many probes to a lower rate than one with few.
  double onset = INFINITY;
  for (DirLinkId l : {d, other}) {
    if (auto list = link_segs_.find(l); list != link_segs_.end()) {
      for (uint32_t i : list->second) {
        if (unexplained0_[i] > 0) onset = std::min(onset, segs_[i].t);
      }
    }
  }
  if (onset == INFINITY) return 0;
  const size_t stretch = bucketsSince(onset, ev_.links());
  auto fill = [&](Set& set, DirLinkId from, bool certain) {
    set.n_all = ev_.links().recent(from, stretch).n;
    const auto list = link_segs_.find(from);
    if (list == link_segs_.end()) return;
    for (uint32_t i : list->second) {
      const LossySegment& seg = segs_[i];
      const double part = unexplained0_[i];
      if (part <= 0) continue;
      double sh = 1;
      if (!certain) {
        auto ls = ev_.lossy().linksOf(seg);
        if (std::find(ls.begin(), ls.end(), d) != ls.end()) continue;  // in d's own
        sh = unseenShare(seg, d, false);
      }
      set.n_lossy += part * seg.n;
      if (sh <= 0) continue;
      set.s_min = std::min(set.s_min, sh);
      set.windows += 1;
      const auto [at, added] = set.index.try_emplace({seg.flow, seg.forward, sh}, set.flows.size());
      if (added) set.flows.push_back({sh, {}});
      set.flows[at->second].ws.push_back({part * seg.n, part * seg.k, segmentBackground(seg)});
    }
  };
  fill(sets[0], d, true);
  fill(sets[1], other, false);
  const double q_clean = ev_.background().one_way;
  return maxOverAddedLoss([&](double x) {
    double l = 0;
    for (const Set& set : sets) {
      for (const Flow& f : set.flows) {
        double lr = 0;
        for (const W& w : f.ws) lr += windowLogRatio(w.n, w.k, w.q, x);
        l += mixtureLog(f.s, lr);
      }
      const double lossy_windows = std::max(1.0, set.windows);
      const double n_window = std::max(1.0, set.n_lossy / lossy_windows);
      const double clean_windows = std::max(0.0, set.n_all - set.n_lossy) / n_window;
      const double s_clean = &set == &sets[0] ? 1.0 : set.s_min;
      l += clean_windows * mixtureLog(s_clean, windowLogRatio(n_window, 0, q_clean, x));
    }
    return l;
  });
}

// Link u's log-likelihood ratio, maximized over its added loss, on what it
// carried for certain that link d cannot have touched: its lossy windows
// with d neither on their known path nor on an unseen stretch, and its
// clean probes, since its first lossy window.
double Explainer::llrWithout(DirLinkId u, DirLinkId d) const {
  const auto list = link_segs_.find(u);
  if (list == link_segs_.end()) return 0;
  struct W {
    double n, k, q;
  };
  std::vector<W> ws;
  double n_lossy = 0, onset = INFINITY;
  for (uint32_t i : list->second) {
    const LossySegment& seg = segs_[i];
    const double part = unexplained0_[i];
    if (part <= 0) continue;
    n_lossy += part * seg.n;
    onset = std::min(onset, seg.t);
    auto ls = ev_.lossy().linksOf(seg);
    if (std::find(ls.begin(), ls.end(), d) != ls.end() || unseenShare(seg, d, false) > 0) continue;
    ws.push_back({part * seg.n, part * seg.k, segmentBackground(seg)});
  }
  if (ws.empty()) return 0;
  const double n_clean =
      std::max(0.0, ev_.links().recent(u, bucketsSince(onset, ev_.links())).n - n_lossy);
  const double q_clean = ev_.background().one_way;
  return maxOverAddedLoss([&](double x) {
    double l = windowLogRatio(n_clean, 0, q_clean, x);
    for (const W& w : ws) l += windowLogRatio(w.n, w.k, w.q, x);
    return l;
  });
}

// Whether the rival at i of `ranked` is past the cap, `tried` weighed so
// far: beyond kMaxUpstream only those tied with the last one weighed.
bool Explainer::pastUpstreamCap(const Ranked& ranked, size_t i, size_t tried) {
  if (tried >= kMaxUpstreamTied) return true;
  return tried >= kMaxUpstream && i > 0 && ranked[i].first > ranked[i - 1].first;
}

// The links on the unseen stretches of `segs`, by the losses they could
// explain there (share times what is left of each segment) and, `with_own`,
// on the flows they carried for certain, the most first: links of equal
// share on those stretches (the downlinks into one leaf) are told apart by
// their own.
Explainer::Ranked Explainer::unseenUpstream(const std::vector<uint32_t>& segs, DirLinkId self,
                                            bool with_own) const {
  std::unordered_map<DirLinkId, double> weight;
  for (uint32_t i : segs) {
    for (const Middle& m : segs_[i].middle) {
      if (m.known()) continue;
      for (auto [link, share] : ev_.shares().linksOn(m.from, m.to)) {
        if (link != self && link != Topology::reverse(self)) {
          weight[link] += share * unexplained0_[i] * segs_[i].k;
        }
      }
    }
  }
  std::vector<std::pair<double, DirLinkId>> ranked;
  for (auto [link, w] : weight) {
    if (with_own) {
      if (w <= 0) continue;  // explains none of these losses: no rival
      if (auto own = link_segs_.find(link); own != link_segs_.end()) {
        for (uint32_t i : own->second) w += unexplained0_[i] * segs_[i].k;
      }
    }
    ranked.emplace_back(-w, link);
  }
  std::sort(ranked.begin(), ranked.end());
  return ranked;
}

// A fabric link's lossy flow-windows may have lost their probes on a
// stretch discovery did not see (the replies, with no reply path known):
// a fault there, at its ECMP share of those windows, makes the link's
// certain flows lossy too. Such a link u and this one are each weighed on
// both links' windows (jointLlr): a healthy u whose own flows are clean is
// rejected, a faulty one is not. Within ln 99 nats of this link, it joins
// the group. (A leaf's uplink, crossed for
// certain by its hosts' flows whose replies came back through a lossy
// downlink into that leaf, had paged before the downlink was found; full
// sweep draw 1172.)
void Explainer::unseenStretchAlternatives(Hypothesis& h, const std::vector<Hypothesis>& accepted) {
  const DirLinkId d = h.key.id;
  if (topo_.node(topo_.dirDstNode(d)).isHost() || topo_.node(topo_.dirSrcNode(d)).isHost()) {
    return;  // accessAmbiguity weighs these
  }
  const auto mine = link_segs_.find(d);
  if (mine == link_segs_.end() || ev_.countersImplicate(d)) return;
  const Ranked ranked = unseenUpstream(mine->second, d, true);
  if (ranked.empty()) return;
  const Candidate& c = h.evidence;
  size_t tried = 0;
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (pastUpstreamCap(ranked, i, tried)) break;
    const DirLinkId u = ranked[i].second;
    const Key uk{Key::kLink, u};
    if (ev_.countersImplicate(u) ||
        std::any_of(accepted.begin(), accepted.end(),
                    [&](const Hypothesis& a) { return a.key == uk; }) ||
        std::find(h.candidates.begin(), h.candidates.end(), uk) != h.candidates.end()) {
      continue;
    }
    ++tried;
    // A link that needs a fault of its own whatever d does is a second
    // fault beside d, not an explanation instead of it.
    if (llrWithout(u, d) >= open_llr_) continue;
    const double own = jointLlr(d, u), l = jointLlr(u, d);
    if (l >= own - std::log(99.0)) {
      h.candidates.push_back(uk);
      if (h.alt_name.empty() || h.candidates.size() == 1) {
        h.alt_name = "link " + topo_.dirLinkName(u) +
                     ", on a stretch of these flows' paths that discovery did not see";
      }
    }
    h.weigh(c.llr - (own - l));
  }
}

// A host that cannot be reached loses what is sent to it on every path
// alike: its flow-windows lose at one rate. A dead link on some of the
// paths to it kills the flows hashed through it whole and leaves the rest
// clean, and at a small ECMP share, with no path known, no link hypothesis
// can take those windows first. The two are told apart by the windows
// themselves: "a share pi of windows dies whole, the rest see background"
// (a mixture) against "every probe to the host is lost at q + x" (the host
// hypothesis at its rate). When the mixture fits better by ln 99 nats, the
// host is not the explanation alone: the links that could have carried the
// dead flows join its group, and it does not page.
// The links that could have carried (nearly, 90 %) every one of the dead
// segments `dead`: certainly (when `certain`) or on an unseen stretch
// (remembered paths count as unseen when `doubt_cache`), among those `keep`
// accepts, strongest first by the share they carried.
std::vector<DirLinkId> Explainer::carriersOf(const std::vector<uint32_t>& dead, bool certain,
                                             bool doubt_cache,
                                             const std::function<bool(DirLinkId)>& keep) const {
  std::unordered_map<DirLinkId, std::pair<double, double>> carried;  // windows, weight
  for (uint32_t i : dead) {
    std::unordered_map<DirLinkId, double> here;
    if (certain) {
      for (DirLinkId d : ev_.lossy().linksOf(segs_[i])) here[d] = 1;
    }
    for (const Middle& mid : segs_[i].middle) {
      if (mid.known() && !(doubt_cache && mid.cached && mid.from != mid.to)) continue;
      for (auto [link, share] : ev_.shares().linksOn(mid.from, mid.to)) {
        here[link] = std::max(here[link], share);
      }
    }
    for (auto [d, w] : here) {
      carried[d].first += 1;
      carried[d].second += w;
    }
  }
  std::vector<std::pair<double, DirLinkId>> ranked;
  for (auto [d, cw] : carried) {
    if (cw.first >= 0.9 * static_cast<double>(dead.size()) && keep(d))
      ranked.emplace_back(-cw.second, d);
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<DirLinkId> out;
  for (const auto& [w, d] : ranked) out.push_back(d);
  return out;
}

// Adds the strongest of `links` (at most 8) to the hypothesis's group;
// false when there is none.
bool Explainer::joinGroup(Hypothesis& h, const std::vector<DirLinkId>& links) {
  constexpr size_t kMaxDeadLinks = 8;
  for (size_t j = 0; j < links.size() && j < kMaxDeadLinks; ++j) {
    const Key k{Key::kLink, links[j]};
    if (std::find(h.candidates.begin(), h.candidates.end(), k) == h.candidates.end())
      h.candidates.push_back(k);
  }
  return !links.empty();
}

void Explainer::somePathsDead(Hypothesis& h) {
  const NodeId host = h.key.id;
  const auto list = node_segs_.find(host);
  if (list == node_segs_.end()) return;
  const double q = std::clamp(ev_.background().round_trip, 1e-9, 0.5);
  double lossy_n = 0, lossy_k = 0, windows = 0, dead = 0, onset = INFINITY;
  std::vector<uint32_t> used;
  for (uint32_t i : list->second) {
    if (unexplained0_[i] < 0.5 || segs_[i].n == 0) continue;
    used.push_back(i);
    lossy_n += segs_[i].n;
    lossy_k += segs_[i].k;
    windows += 1;
    dead += segs_[i].k >= segs_[i].n;
    onset = std::min(onset, segs_[i].t);
  }
  if (dead == 0 || windows == 0) return;
  // Both fitted since the first lossy window: a host that died within the
  // horizon was reachable before, which says nothing of its paths.
  const Tally since = ev_.toNode().recent(host, bucketsSince(onset, ev_.toNode()));
  const double n_all = std::max(since.n, lossy_n);
  const double p = std::clamp(std::max(since.k, lossy_k) / n_all, q, 1 - 1e-9);
  const double clean_n = n_all - lossy_n;
  if (dead == windows && since.n - since.k < lossy_n / windows) {
    everyFlowDead(h, used, onset);
    return;
  }
  const double clean_windows = clean_n / (lossy_n / windows);
  const double pi = std::clamp(dead / (windows + clean_windows), 1e-9, 1 - 1e-9);
  double host_ll = clean_n * std::log1p(-p),
         mix_ll = clean_windows * std::log1p(-pi) + clean_n * std::log1p(-q);
  for (uint32_t i : used) {
    const double n = segs_[i].n, k = segs_[i].k;
    host_ll += k * std::log(p) + (n - k) * std::log1p(-p);
    const double background = std::log1p(-pi) + k * std::log(q) + (n - k) * std::log1p(-q);
    mix_ll = mix_ll + (k >= n ? std::log(std::exp(background) + pi) : background);
  }
  if (mix_ll - host_ll < std::log(99.0)) return;
  // The links that could have carried (nearly) every dead window, certainly
  // or on an unseen stretch, ranked by the expected share they carried: one
  // link explains them all, where a link that carried one source's flows
  // only would need a fault for each source. Not the host's own access
  // links: they carry its clean windows too.
  std::vector<uint32_t> dead_segs;
  for (uint32_t i : used) {
    if (segs_[i].k >= segs_[i].n) dead_segs.push_back(i);
  }
  const auto carriers = carriersOf(dead_segs, true, false, [&](DirLinkId d) {
    return topo_.dirDstNode(d) != host && topo_.dirSrcNode(d) != host;
  });
  // No one link: several faults, or the host after all.
  if (!joinGroup(h, carriers)) return;
  h.weigh(h.evidence.llr);
  h.alt_name = "a dead link on some of the paths to " + topo_.node(host).name +
               " (flows died whole, the others were clean)";
}

// Every flow to the host since its onset died whole, and none passed. A
// dead host and one link dead for those flows (down, or blackholing their
// hash) explain that alike; what tells them apart is the hash, which put
// every flow on that link with the product of their shares of it. A flow
// keeps its path, so it is one draw however many windows it lost. A link
// that passed other flows since would have to blackhole these and not
// those: the share b of its flows it drops is fitted, and each flow pays
// ln 1/b dead or ln 1/(1-b) clean (its clean flows counted as its passed
// probes in windows, over the windows a dead flow lost). A link within
// ln 99 of the host joins its group: one flow is never enough to call a
// host dead.
void Explainer::everyFlowDead(Hypothesis& h, const std::vector<uint32_t>& dead_segs, double onset) {
  // How likely a path the evidence shows missing a link is stale (so the
  // flow crossed it after all): rare, and one such flow is enough against it.
  constexpr double kStalePath = 0.01;
  const NodeId host = h.key.id;
  std::set<std::pair<uint32_t, bool>> seen;                     // flows (and their direction)
  std::unordered_map<DirLinkId, std::pair<double, double>> on;  // flows, -ln share
  double flows = 0, probes = 0;
  for (uint32_t i : dead_segs) {
    const LossySegment& s = segs_[i];
    probes += s.n;
    if (!seen.emplace(s.flow, s.forward).second) continue;
    const auto certain = ev_.lossy().linksOf(s);
    flows += 1;
    std::unordered_map<DirLinkId, double> share;
    for (DirLinkId d : certain) share[d] = 1;
    for (const Middle& mid : s.middle) {
      if (mid.known()) continue;
      for (auto [link, p] : ev_.shares().linksOn(mid.from, mid.to)) {
        share[link] = std::max(share[link], p);
      }
    }
    for (auto [d, p] : share) {
      on[d].first += 1;
      on[d].second -= std::log(std::max(p, kStalePath));
    }
  }
  const size_t stretch = bucketsSince(onset, ev_.links());
  // A flow's probes over the stretch: what one clean flow passes.
  const double flow_probes = probes / flows;
  std::vector<std::pair<double, DirLinkId>> rivals;
  for (auto [d, fp] : on) {
    if (topo_.dirDstNode(d) == host || topo_.dirSrcNode(d) == host) continue;
    // A flow whose path is known to miss the link: only a stale path puts it there.
    double penalty = fp.second - (flows - fp.first) * std::log(kStalePath);
    const Tally since = ev_.links().recent(d, stretch);
    if (const double clean = (since.n - since.k) / flow_probes; clean > 0) {
      const double b = flows / (flows + clean);
      penalty -= flows * std::log(b) + clean * std::log1p(-b);
    }
    if (penalty < std::log(99.0)) rivals.emplace_back(penalty, d);
  }
  std::sort(rivals.begin(), rivals.end());
  std::vector<DirLinkId> links;
  for (auto [penalty, d] : rivals) {
    if (links.size() == 8) break;
    links.push_back(d);
    h.weigh(h.evidence.llr - penalty);
  }
  if (!joinGroup(h, links)) return;
  const int n = static_cast<int>(flows);
  h.alt_name = "a link dead on the path of the " + std::to_string(n) +
               (n == 1 ? " flow" : " flows") + " to " + topo_.node(host).name +
               " (every probe lost, and the hash could have put them all on it)";
}

// A host losing at one rate on every flow to it (host_unreachable) against
// a link on the unseen stretch of those flows, lossy for the flows the hash
// put on it: each weighed on the host's windows, one mixture per flow (a
// flow keeps its path). With few flows to a host, all through one lossy
// downlink, the host is not told apart from it. Not the host's own links:
// they are the host's, known on every flow. Windows mostly dead whole are
// somePathsDead's and everyFlowDead's to weigh (a dead host or dead links).
void Explainer::unseenRivalsOfHost(Hypothesis& h) {
  const NodeId host = h.key.id;
  const auto list = node_segs_.find(host);
  if (list == node_segs_.end()) return;
  double windows = 0, dead = 0;
  for (uint32_t i : list->second) {
    if (unexplained0_[i] <= 0) continue;
    windows += 1;
    dead += segs_[i].k >= segs_[i].n;
  }
  if (dead >= 0.5 * windows) return;
  const Ranked ranked = unseenUpstream(list->second, kNone, false);
  const Candidate& c = h.evidence;
  const double own = windowLlr(list->second, c.n, std::nullopt);
  size_t tried = 0;
  for (size_t i = 0; i < ranked.size() && !pastUpstreamCap(ranked, i, tried); ++i) {
    const DirLinkId u = ranked[i].second;
    if (topo_.dirSrcNode(u) == host || topo_.dirDstNode(u) == host) continue;
    ++tried;
    const double behind = own - windowLlr(list->second, c.n, u, true);
    const Key uk{Key::kLink, u};
    if (behind <= std::log(99.0) &&
        std::find(h.candidates.begin(), h.candidates.end(), uk) == h.candidates.end()) {
      h.candidates.push_back(uk);
      if (h.alt_name.empty()) {
        h.alt_name = "link " + topo_.dirLinkName(u) +
                     ", on a stretch of these flows' paths that discovery did not see";
      }
    }
    h.weigh(c.llr - behind);
  }
}

// A link's partial blackhole, seen on paths known only in part: flows that
// died whole while the link's other flows stayed clean are also what one
// dead link on the dead flows' unseen stretches does (their reply path is
// known, their forward path not). Such a link could have carried (nearly)
// every dead window and, since the first of them, passed no window's worth
// of probes it is known to have carried (a dead link passes none). Those
// links join the hypothesis's group, ranked by the share they carried.
void Explainer::deadOnUnseenStretch(Hypothesis& h) {
  const DirLinkId x = h.key.id;
  const auto list = link_segs_.find(x);
  if (list == link_segs_.end()) return;
  double lost = 0, dead = 0, dead_lost = 0, dead_n = 0, onset = INFINITY;
  std::vector<uint32_t> used;
  for (uint32_t i : list->second) {
    if (unexplained0_[i] < 0.5 || segs_[i].n == 0) continue;
    lost += segs_[i].k;
    if (segs_[i].k < segs_[i].n) continue;
    used.push_back(i);
    dead += 1;
    dead_lost += segs_[i].k;
    dead_n += segs_[i].n;
    onset = std::min(onset, segs_[i].t);
  }
  // The blackhole signature (engine.cc classifies by the same share).
  if (dead < 2 || dead_lost < 0.7 * lost) return;
  const size_t stretch = bucketsSince(onset, ev_.links());
  const double window_probes = dead_n / dead;
  // A remembered path may be stale for a flow that died: unseen too.
  const auto carriers = carriersOf(used, false, true, [&](DirLinkId d) {
    if (d == x) return false;
    const Tally since = ev_.links().recent(d, stretch);
    return since.n - since.k < window_probes;  // it passed probes: not dead
  });
  if (!joinGroup(h, carriers)) return;
  if (h.evidence.llr >= h.alt_llr) {
    h.alt_name = "a dead link on the unseen stretch of the flows that died whole";
  }
  h.weigh(h.evidence.llr);
}

void Explainer::accessAmbiguity(Hypothesis& h) {
  const DirLinkId d = h.key.id;
  const bool into_host = topo_.node(topo_.dirDstNode(d)).isHost();
  if (!into_host && !topo_.node(topo_.dirSrcNode(d)).isHost()) return;
  if (ev_.countersImplicate(d) || !link_segs_.contains(d)) return;
  const Candidate& c = h.evidence;
  const PortId host_port = into_host ? topo_.dirDstPort(d) : topo_.dirSrcPort(d);
  const NodeId host = topo_.port(host_port).node;
  const double q = std::clamp(c.q0, 1e-9, 0.5);
  // The rate over the long horizon, as the host's other ports' tallies are:
  // a host that turned busy 30 s ago has its short-horizon rate on every
  // port, diluted alike over the long one.
  const double x = std::clamp(c.n > 0 ? c.k / c.n - q : 0.0, 1e-9, 1 - q - 1e-9);

  // The host's other ports under the host-side hypothesis lose at q + x:
  // the log-likelihood ratio of what they saw, negative when they are clean.
  Tally others;
  for (PortId p : topo_.portsOf(host)) {
    if (p == host_port) continue;
    Tally t = ev_.sentFrom(p);
    others.add(t.n, t.k);
  }
  double others_llr = 0;
  if (others.n > 0) {
    others_llr = others.k * std::log1p(x / q) +
                 (others.n - others.k) * (std::log1p(-(q + x)) - std::log1p(-q));
  }
  // And host-side loss, alike on both directions of every flow of the
  // host, must explain these losses about as well as the link does: with
  // one-way counts a directed access link loses on one direction only (its
  // probes out and the replies it sends, or the reverse), which host-side
  // loss spreads over twice the probes. Round trips cross both directions
  // of the access link, so without one-way counts the two stay tied.
  const auto side = side_c0_.find(host);
  const auto link0 = link_c0_.find(d);
  bool side_close = true;
  if (side != side_c0_.end() && link0 != link_c0_.end()) {
    Candidate s = side->second, l = link0->second;
    score(s);
    score(l);
    side_close = s.llr >= l.llr - std::log(99.0);
  }
  // A wire loses alike on every flow that crosses it, whichever end
  // probed: the host's own flows over this link and the flows of others
  // must each show the loss. Loss on one side only is the host's own stack
  // (its prober or its responder), not the cable.
  const FabricEvidence::OwnFlows mine_all = ev_.ownFlows(host_port);
  // Only the host's records with a one-way split say which way its own
  // probes died: a window that lost every probe has none (nothing came
  // back), and its loss, which could be the stack's on the way back as
  // well as the cable's on the way out, counts in neither class. (A busy
  // host's focus flows at one probe a window lost whole and so "showed"
  // the cable on its own flows.)
  const Tally half = into_host ? mine_all.back : mine_all.out;
  const double unsplit_n = std::max(0.0, mine_all.all.n - mine_all.out.n);
  const double unsplit_k = std::max(0.0, mine_all.all.k - mine_all.out.k - mine_all.back.k);
  const double own_n = half.n, own_k = half.k;
  const Tally whole = ev_.links().total(d);
  const double rest_n = std::max(0.0, whole.n - own_n - unsplit_n);
  const double rest_k = std::clamp(whole.k - own_k - unsplit_k, 0.0, rest_n);
  auto supports = [&](double n, double k) {
    k = std::clamp(k, 0.0, n);
    return k * std::log1p(x / q) + (n - k) * (std::log1p(-(q + x)) - std::log1p(-q)) >=
           std::log(99.0);
  };
  const bool both_ends = supports(own_n, own_k) && supports(rest_n, rest_k);
  // A stack too busy to answer on time also answers late the probes it
  // does answer; a lossy cable delays nothing. Replies slower than their
  // peers' on either direction of the access link (z^2 / 2 over ln 99) keep
  // the host in the group: a host dropping what it receives looks exactly
  // like the cable into it, and only its delay tells.
  // Explained away first: a slow link elsewhere on some of the host's flows
  // lifts the access link's mean too.
  const std::unordered_set<DirLinkId>& slow = slowLinks();
  const bool host_slow =
      slow.contains(d) || slow.contains(Topology::reverse(d)) || slow_hosts_.contains(host);
  // A busy host passes; a cable stays bad. Loss affirmed on the host's
  // flows at two passes further apart than a busy host lasts, with no
  // evidence of a stop between, rules the host out, unless its replies
  // are slow: that is the host's own trouble, however long it lasts.
  double outlasted = 0;
  if (const auto e = cfg_.host_loss ? cfg_.host_loss->episode(host) : std::nullopt;
      e && !host_slow) {
    const double bucket = ev_.bucketWidth();
    if (e->last - e->since >
        cfg_.busy_host_max_s + static_cast<double>(short_buckets_) * bucket + bucket) {
      outlasted = e->last - e->since;
    }
  }
  const bool by_loss = others_llr <= -open_llr_ || (!side_close && both_ends && !host_slow);
  if (!by_loss && outlasted > 0) h.host_outlasted_s = outlasted;
  if (!by_loss && outlasted == 0) h.candidates.push_back({Key::kNode, host});

  // The upstream links these losses may have crossed unseen, by the losses
  // they could explain. Each is weighed against the access link on the same flow-windows (a
  // mixture: a window crossed the upstream link with its ECMP share); one
  // within ln 99 nats would alone keep the posterior below 0.99.
  // Then flow by flow, where the port's flows are tracked (FlowLoss): a
  // cable or its host loses alike on every flow of the port, a fabric link
  // only on the flows ECMP hashed through it, whole flows, not windows.
  // Window by window, a few flows losing one or two probes a window looked
  // like the cable: an access link paged at 0.992 with a rail's uplink at
  // 5 % behind it and 47 of its 4,861 probes lost (full sweep draw 4176).
  const std::vector<uint32_t>& mine = link_segs_.at(d);
  const Ranked ranked = unseenUpstream(mine, d, false);
  const double own = windowLlr(mine, c.n, std::nullopt);
  const std::vector<FlowLoss::Flow> flows = ev_.flowLoss().flows(host_port, !into_host);
  const double own_flows = flows.empty() ? 0 : flowLlr(flows, 1);
  for (size_t i = 0; i < ranked.size() && !pastUpstreamCap(ranked, i, i); ++i) {
    const DirLinkId u = ranked[i].second;
    double behind = own - windowLlr(mine, c.n, u);
    // Flows overrule the windows only when they favour the upstream link
    // by ln 99: a port tracked for a pass or two has too few losses a flow
    // to tell a cable from anything, and its page would wait for nothing.
    if (const double s = flows.empty() ? 0 : smallestShare(mine, u); s > 0) {
      const double by_flows = own_flows - flowLlr(flows, s);
      if (by_flows <= -std::log(99.0)) behind = std::min(behind, by_flows);
    }
    if (behind <= std::log(99.0)) h.candidates.push_back({Key::kLink, u});
    h.weigh(c.llr - behind);
  }
  if (!h.candidates.empty()) {
    if (h.candidates.front().kind == Key::kNode) h.weigh(c.llr);
    h.alt_name = h.candidates.front().kind == Key::kNode
                     ? "host " + topo_.node(host).name + " itself (host-side loss)"
                     : "a link on a stretch of these flows' paths that discovery did not see";
  }
}

}  // namespace

void Candidate::remove(double part, const LossySegment& s, bool in_short) {
  n -= part * s.n, k -= part * s.k;
  if (in_short) ns -= part * s.n, ks -= part * s.k;
  if (s.round_trip) {
    n_rt -= part * s.n, k_rt -= part * s.k;
    if (in_short) ns_rt -= part * s.n, ks_rt -= part * s.k;
  }
  stale = true;  // rescored when next read: one explanation reduces it many times
}

void Candidate::removeLosses(double part, const LossySegment& s, bool in_short, bool with_probes) {
  const double lost = part * s.k, probes = with_probes ? lost : 0;
  n -= probes, k -= lost;
  if (in_short) ns -= probes, ks -= lost;
  if (s.round_trip) {
    n_rt -= probes, k_rt -= lost;
    if (in_short) ns_rt -= probes, ks_rt -= lost;
  }
  stale = true;
}

uint64_t encodeKey(const Key& k) { return (uint64_t{k.kind} + 1) << 32 | k.id; }
Key decodeKey(uint64_t v) {
  return {static_cast<Key::Kind>((v >> 32) - 1), static_cast<uint32_t>(v)};
}

double logHypotheses(const Topology& topo) {
  return std::log(static_cast<double>(topo.dirLinkCount() + topo.nodeCount()));
}

double openLlr(const Topology& topo) { return std::max(kOpenLlr, logHypotheses(topo)); }

std::vector<Hypothesis> explainLosses(const FabricEvidence& ev, const ExplainConfig& cfg) {
  return Explainer(ev, cfg).run();
}

bool lossNow(const Candidate& c) {
  return binomialLlr(c.ns, std::clamp(c.ks, 0.0, c.ns), std::clamp(c.q0, 1e-9, 0.5)) >=
         std::log(99.0);
}

bool recentlyBelow(const FabricEvidence& ev, const Key& key, double x, double since,
                   const Background& b) {
  if (key.kind == Key::kPorts || x <= 0) return false;
  const bool link = key.kind == Key::kLink;
  const BucketedTallies& all = link                     ? ev.links()
                               : key.kind == Key::kNode ? ev.toNode()
                                                        : ev.hostSide();
  const BucketedTallies* rt = link ? ev.linksRoundTrip() : &all;
  // Bucket b holds (b - 1) * width < t <= b * width: stretch m starts at
  // bucket newest - m + 1.
  const double first = std::ceil(since / ev.bucketWidth());
  const double span = static_cast<double>(all.newestBucket()) - first + 1;
  const size_t stretches = static_cast<size_t>(std::clamp(span, 0.0, double(ev.buckets())));
  if (stretches == 0) return false;
  const double bar = std::log(99.0) + std::log(static_cast<double>(stretches));
  for (size_t m = 1; m <= stretches; ++m) {
    const Tally t = all.recent(key.id, m);
    const Tally r = rt ? rt->recent(key.id, m) : Tally{};
    const double n1 = std::max(0.0, t.n - r.n), k1 = std::clamp(t.k - r.k, 0.0, n1);
    double x_hat = 0;
    const double best = twoClassLlr(n1, k1, b.one_way, r.n, r.k, b.round_trip, &x_hat);
    if (x_hat >= x) continue;
    if (best - twoClassLlrAt(x, n1, k1, b.one_way, r.n, r.k, b.round_trip) >= bar) return true;
  }
  return false;
}

double blackholeShare(const FabricEvidence& ev, DirLinkId d) {
  int total = 0, all_lost = 0;
  for (const LossySegment& s : ev.lossy().segments()) {
    auto ls = ev.lossy().linksOf(s);
    if (std::find(ls.begin(), ls.end(), d) == ls.end()) continue;
    ++total;
    all_lost += s.k == s.n;
  }
  return total >= kMinLossySegments ? static_cast<double>(all_lost) / total : 0;
}

}  // namespace netdiag::analyzer
