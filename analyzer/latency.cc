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
                                                 const ShareFn& share) const {
  std::vector<SlowLink> out;
  if (spread_.total(0).n < 100) return out;
  const double sigma = this->sigma();
  // Candidates: links crossed by slow records.
  std::unordered_map<DirLinkId, Tally> cand;
  for (const Slow& s : slow_) {
    for (DirLinkId d : s.links) cand.emplace(d, decode(excess_.total(d)));
  }
  std::vector<bool> explained(slow_.size(), false);
  for (int round = 0; round < 16; ++round) {
    SlowLink best;
    for (const auto& [d, t] : cand) {
      if (t.n < 10) continue;
      double mean = t.k / t.n;
      double z = mean * std::sqrt(t.n) / std::max(sigma, 1e-9);
      if (mean >= min_added_us && z >= min_z && z > best.z) best = {d, mean, z, t.n};
    }
    if (best.link == topology::kNone) break;
    out.push_back(best);
    cand.erase(best.link);
    for (size_t i = 0; i < slow_.size(); ++i) {
      const Slow& s = slow_[i];
      bool through = std::find(s.links.begin(), s.links.end(), best.link) != s.links.end() ||
                     (!s.back.known() && share(s.back.from, s.back.to, best.link) > 0);
      if (explained[i] || !through) continue;
      explained[i] = true;
      for (DirLinkId d : s.links) {
        if (auto it = cand.find(d); it != cand.end()) {
          it->second.n -= 1;
          it->second.k -= s.excess;
        }
      }
    }
  }
  return out;
}

}  // namespace netdiag::analyzer
