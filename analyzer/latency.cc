#include "analyzer/latency.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace netdiag::analyzer {
namespace {

// Records this far above their hop-count median are kept one by one, so an
// accepted slow link can take them out of its neighbours' evidence.
constexpr double kSlowKeepUs = 20;

// Per-link excess is kept in fixed point (1/16 us), offset to be a whole
// non-negative number, so the ring keeps its compact 32-bit cells (a double
// would widen it, and every add would take the slow path). Excess beyond
// +-4 ms is clamped: such a link is slow either way.
constexpr double kUnitsPerUs = 16;
constexpr double kOffset = 65536;  // units: 4.096 ms

double quantize(double excess_us) {
  return std::round(std::clamp(excess_us * kUnitsPerUs, -kOffset, kOffset));
}
Tally decode(Tally t) { return {t.n, (t.k - t.n * kOffset) / kUnitsPerUs}; }

}  // namespace

LatencyEvidence::LatencyEvidence(size_t dir_links, size_t buckets, double width_s)
    : excess_(dir_links, buckets, width_s), spread_(1, buckets, width_s) {}

void LatencyEvidence::add(double t, double rtt_us, size_t hops, const std::vector<DirLinkId>& links,
                          Middle back) {
  if (!std::isfinite(rtt_us) || rtt_us < 0) return;
  if (hops >= median_by_hops_.size()) median_by_hops_.resize(hops + 1, NAN);
  double& m = median_by_hops_[hops];
  if (std::isnan(m)) m = rtt_us;
  // A streaming median: step towards each sample by a small fraction of the
  // current level; latency faults touch few flows, so it tracks the healthy.
  double step = std::max(0.01, 0.002 * m);
  m += rtt_us > m ? step : (rtt_us < m ? -step : 0);
  const double units = quantize(rtt_us - m);
  const double excess = units / kUnitsPerUs;
  for (DirLinkId d : links) excess_.add(d, t, 1, units + kOffset);
  spread_.add(0, t, 1, excess * excess);
  if (excess >= kSlowKeepUs) slow_.push_back({t, excess, links, back});
}

void LatencyEvidence::advanceTo(double now, double horizon_s) {
  excess_.advanceTo(now);
  spread_.advanceTo(now);
  while (!slow_.empty() && slow_.front().t < now - horizon_s) slow_.pop_front();
}

Tally LatencyEvidence::excessOf(DirLinkId d) const { return decode(excess_.total(d)); }

double LatencyEvidence::sigma() const {
  const Tally spread = spread_.total(0);
  return spread.n > 0 ? std::sqrt(spread.k / spread.n) : 0;
}

std::vector<SlowLink> LatencyEvidence::slowLinks(double min_added_us, double min_z,
                                                 const ShareFn& share,
                                                 const topology::Topology& topo) const {
  std::vector<SlowLink> out;
  if (spread_.total(0).n < 100) return out;
  const double sigma = std::max(this->sigma(), 1e-9);
  // A host's own records: every round trip of one of its ports leaves by
  // that port's egress (a probe out, or the reply to one), once.
  auto hostOf = [&topo](DirLinkId d) {
    const NodeId n = topo.dirSrcNode(d);
    return topo.node(n).isHost() ? n : topology::kNone;
  };
  // Candidates: links crossed by slow records, and the hosts they left.
  std::unordered_map<DirLinkId, Tally> cand;
  std::unordered_map<NodeId, Tally> hosts;
  for (const Slow& s : slow_) {
    for (DirLinkId d : s.links) {
      cand.emplace(d, decode(excess_.total(d)));
      const NodeId h = hostOf(d);
      if (h == topology::kNone || hosts.contains(h)) continue;
      Tally own;
      for (topology::PortId p : topo.portsOf(h)) {
        if (const DirLinkId e = topo.egressOf(p); e != topology::kNone) {
          const Tally t = decode(excess_.total(e));
          own.add(t.n, t.k);
        }
      }
      hosts.emplace(h, own);
    }
  }
  auto zOf = [sigma](const Tally& t) { return t.k / t.n * std::sqrt(t.n) / sigma; };
  // Each slow record's excess not yet explained; an explanation takes `us`
  // of it out of every candidate it counts for (`whole`: the record too).
  std::vector<double> left(slow_.size());
  for (size_t i = 0; i < slow_.size(); ++i) left[i] = slow_[i].excess;
  auto takeOut = [&](size_t i, double us, bool whole) {
    left[i] -= us;
    for (DirLinkId d : slow_[i].links) {
      if (auto it = cand.find(d); it != cand.end()) {
        it->second.n -= whole ? 1 : 0;
        it->second.k -= us;
      }
      if (auto it = hosts.find(hostOf(d)); it != hosts.end()) {
        it->second.n -= whole ? 1 : 0;
        it->second.k -= us;
      }
    }
  };
  std::vector<bool> explained(slow_.size(), false);
  for (size_t links = 0; links < 16;) {
    SlowLink best;
    for (const auto& [d, t] : cand) {
      if (t.n < 10) continue;
      const double z = zOf(t);
      if (t.k / t.n >= min_added_us && z >= min_z && z > best.z)
        best = {d, topology::kNone, t.k / t.n, z, t.n};
    }
    // A host stronger than every link: its stack, not a link, first.
    for (const auto& [h, t] : hosts) {
      if (t.n < 10) continue;
      const double z = zOf(t);
      if (z >= min_z && z > best.z) best = {topology::kNone, h, t.k / t.n, z, t.n};
    }
    if (best.link == topology::kNone && best.host == topology::kNone) break;
    out.push_back(best);
    if (best.host != topology::kNone) {
      hosts.erase(best.host);
      for (size_t i = 0; i < slow_.size(); ++i) {
        if (explained[i]) continue;
        const auto& ls = slow_[i].links;
        if (std::any_of(ls.begin(), ls.end(), [&](DirLinkId d) { return hostOf(d) == best.host; }))
          takeOut(i, std::clamp(best.added_us, 0.0, left[i]), false);
      }
      continue;
    }
    ++links;
    cand.erase(best.link);
    for (size_t i = 0; i < slow_.size(); ++i) {
      const Slow& s = slow_[i];
      bool through = std::find(s.links.begin(), s.links.end(), best.link) != s.links.end() ||
                     (!s.back.known() && share(s.back.from, s.back.to, best.link) > 0);
      if (explained[i] || !through) continue;
      explained[i] = true;
      takeOut(i, left[i], true);
    }
  }
  return out;
}

}  // namespace netdiag::analyzer
