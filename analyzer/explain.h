#pragma once

// The explanation step of a pass: from the evidence over the horizon, the
// set of hypotheses (a lossy directed link, a host that drops what is sent
// to it) that together explain the lossy records, each with its posterior.
// Pure: it reads the evidence and changes nothing (the ECMP share cache
// aside), so it can be tested on hand-built evidence. docs/localization.md
// gives the method.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/fabric_evidence.h"
#include "analyzer/host_loss_clock.h"
#include "analyzer/stats.h"

namespace netdiag::analyzer {

// A hypothesis: one directed link is lossy, one host drops what is sent to
// it (kNode: a dead responder, a host down), one host loses on every flow
// it sends or answers (kHostSide: busy, its NIC or kernel dropping), or
// one node's cables disagree with the topology.
struct Key {
  enum Kind : uint8_t { kLink, kNode, kPorts, kHostSide } kind;
  uint32_t id;  // link; node (a host, or the node whose cables disagree)
  bool operator<(const Key& o) const { return kind != o.kind ? kind < o.kind : id < o.id; }
  bool operator==(const Key& o) const = default;
};

// A segment's claim: which paged hypothesis owns it (0: none).
uint64_t encodeKey(const Key& k);
Key decodeKey(uint64_t v);

// The evidence for one hypothesis, after explaining away.
struct Candidate {
  double n = 0, k = 0;    // long horizon
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
  void remove(double part, const LossySegment& s, bool in_short);
  // Takes `part` of a lossy segment's losses out (lost elsewhere), and the
  // probes they were `with_probes` (lost before they reached it).
  void removeLosses(double part, const LossySegment& s, bool in_short, bool with_probes);
};

struct Hypothesis {
  Key key;
  Candidate evidence;
  double confidence = 0;  // posterior, against the alternatives and the prior
  // The loss rate since the fault began, and a 90 % interval for it
  // (explain.cc, estimateLoss): what the incident states.
  double loss = 0;
  std::pair<double, double> loss_interval{0, 0};
  // Where that rate shows from: a time in the oldest whole bucket of the
  // stretch it was estimated on (the fault's onset, to a bucket), and the
  // log-likelihood ratio of that stretch alone.
  double onset = 0;
  double onset_llr = 0;
  // The background those are added to (explain.cc, residualBackground).
  Background background;
  std::string alt_name;  // the strongest competing explanation, if any
  double alt_llr = 0;
  // Every named competing explanation together (the log of the sum of
  // their likelihood ratios): the posterior weighs them all, not only the
  // strongest, so four equal rivals hold it as four do.
  double alts_llr = -INFINITY;
  void weigh(double llr) {
    alt_llr = std::max(alt_llr, llr);
    alts_llr = logAddExp(alts_llr, llr);
  }
  std::vector<uint32_t> certain;  // lossy segments certainly explained by it
  // Explanations the evidence cannot tell from this one (an ambiguity
  // group): while any is left, the hypothesis must not page, and its
  // confidence is at most 1/2.
  std::vector<Key> candidates;
  // Set when the host of this access link was ruled out only because its
  // flows have lost for longer than a busy host lasts: for how long.
  double host_outlasted_s = 0;
};

struct ExplainConfig {
  double min_loss = 3e-4;    // smallest loss ratio worth a link hypothesis
  size_t short_buckets = 6;  // the fast horizon, in buckets (at most the horizon)
  // How long a busy host lasts at most, and each host's current episode of
  // loss (none: never ruled out by duration). A host whose episode has
  // affirmed loss further apart than a busy host lasts, short horizon and
  // bucket added (each affirming pass sees up to that far back), is not
  // busy.
  double busy_host_max_s = 300;
  const HostLossClock* host_loss = nullptr;
};

// Counts of the explanation's thresholds (nats of log-likelihood ratio).
// A hypothesis is accepted at `openLlr`: kOpenLlr, or ln M on a fabric of
// M > e^8 hypotheses (from there on it is at least as likely as not with
// the prior of one fault among M).
constexpr double kOpenLlr = 8;
constexpr int kMinLossySegments = 3;
// A host is "unreachable" only when most probes to it die. A host-side
// hypothesis (kHostSide) is an explanation only: it takes its flows' losses
// from the links they crossed, but it is not an incident (what a host does
// to its own flows is the host's business, not the fabric's).
constexpr double kMinHostLoss = 0.2;
// Drops counted at a port's egress below this share of what it sent are
// the noise of any busy port, not a drop rate worth naming.
constexpr double kMinTxDropRate = 1e-4;

double openLlr(const topology::Topology& topo);
// ln M: M hypotheses (directed links and nodes) a priori.
double logHypotheses(const topology::Topology& topo);

// The accepted hypotheses of a pass, strongest first. Links the counters
// report down (or that changed carrier within the horizon) explain first
// what they may have caused and are not returned (the engine reports them
// from the counters); segments claimed by a paged hypothesis count for
// their owner only.
std::vector<Hypothesis> explainLosses(const FabricEvidence& ev, const ExplainConfig& cfg);

// Whether the short horizon affirms loss on a hypothesis's flows beyond
// their background (ln 99 nats): the loss goes on now.
bool lossNow(const Candidate& c);

// Whether the newest stretch of the evidence (the last m buckets, for some
// m, none before `since`) rejects loss `x` on the hypothesis's link or
// host: the fault it paged for has gone, though the horizon still
// remembers it. `since` is when the fault was already on (its incident
// paged, or its rate's onset): a longer stretch would mix in the clean time before it. The bar
// is ln 99 plus ln of the stretches tried. `x` is added to `b`, the
// background the hypothesis states its rate above.
bool recentlyBelow(const FabricEvidence& ev, const Key& key, double x, double since,
                   const Background& b);

// Share of a link's lossy segments that lost every probe: near 1 for a
// partial blackhole (some flows dead, others clean), low for random loss.
double blackholeShare(const FabricEvidence& ev, topology::DirLinkId d);

}  // namespace netdiag::analyzer
