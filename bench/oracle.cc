#include "bench/oracle.h"

#include <algorithm>
#include <cmath>

namespace netdiag::bench {

double binomialLlr(double n, double k, double p0) {
  if (n <= 0 || k <= 0 || p0 <= 0) return k > 0 && p0 <= 0 ? INFINITY : 0;
  const double p = k / n;
  if (p <= p0) return 0;
  double llr = k * std::log(p / p0);
  if (n > k) llr += (n - k) * std::log((1 - p) / (1 - p0));
  return llr;
}

Oracle::Oracle(const topology::Topology& topo, const sim::Truth& truth, OracleConfig config)
    : topo_(topo), config_(config) {
  const double m = static_cast<double>(topo.dirLinkCount() + topo.nodeCount());
  bar_ = config.bar > 0 ? config.bar : std::max(8.0, std::log(m) + std::log(2.0));
  for (const sim::TruthItem& f : truth.faults) {
    if (f.kind == "link_latency") continue;  // no loss to test
    auto d = topo.findDirLink(f.link);
    if (!d) continue;
    Tracked t;
    t.row.id = f.id;
    t.row.link = f.link;
    t.row.onset = f.onset;
    t.row.end = f.end;
    t.row.injected = f.kind == "link_down" || f.kind == "link_flap" ? 1.0 : f.loss;
    t.link = *d;
    faults_.push_back(std::move(t));
  }
}

void Oracle::add(Tracked& f, double t, double n, double k, double p0) {
  if (n <= 0) return;
  const auto b = static_cast<size_t>(std::max(0.0, std::ceil(t / config_.pass_s - 1e-9)));
  if (f.buckets.size() <= b) f.buckets.resize(b + 1);
  f.buckets[b].n += n;
  f.buckets[b].k += k;
  f.buckets[b].e0 += n * p0;
  if (t - 1e-9 > f.row.onset && (!f.row.end || t - 5 < *f.row.end)) {
    f.row.probes += n;
    f.row.losses += k;
  }
}

void Oracle::onProbe(const telemetry::ProbeRecord& r) {
  if (faults_.empty() || (r.path.empty() && r.reply_path.empty())) return;
  const double bg = config_.background_loss;
  auto through = [](double len, double p) { return 1 - std::pow(1 - p, len); };
  const auto fwd_len = static_cast<double>(r.path.size());
  const auto rev_len =
      static_cast<double>(r.reply_path.empty() ? r.path.size() : r.reply_path.size());
  for (Tracked& f : faults_) {
    const bool on_fwd = std::find(r.path.begin(), r.path.end(), f.link) != r.path.end();
    const bool on_rev =
        std::find(r.reply_path.begin(), r.reply_path.end(), f.link) != r.reply_path.end();
    if (!on_fwd && !on_rev) continue;
    if (r.hasOneWay()) {
      if (on_fwd) add(f, r.t, r.sent, *r.lost_fwd, through(fwd_len, bg));
      if (on_rev) add(f, r.t, r.sent - *r.lost_fwd, *r.lost_rev, through(rev_len, bg));
    } else {
      add(f, r.t, r.sent, r.lost, through(fwd_len + rev_len, bg));
    }
  }
}

std::vector<OracleFault> Oracle::finish(double end) {
  std::vector<OracleFault> out;
  const auto window = static_cast<size_t>(std::lround(config_.horizon_s / config_.pass_s));
  for (Tracked& f : faults_) {
    const auto last = static_cast<size_t>(std::floor(end / config_.pass_s + 1e-9));
    const auto first = static_cast<size_t>(std::ceil(f.row.onset / config_.pass_s - 1e-9));
    f.buckets.resize(std::max(f.buckets.size(), last + 1));
    Bucket sum;
    // Sliding sum over buckets (p - window, p].
    for (size_t p = 0; p <= last; ++p) {
      sum.n += f.buckets[p].n;
      sum.k += f.buckets[p].k;
      sum.e0 += f.buckets[p].e0;
      if (p >= window) {
        sum.n -= f.buckets[p - window].n;
        sum.k -= f.buckets[p - window].k;
        sum.e0 -= f.buckets[p - window].e0;
      }
      if (p < first + 1) continue;  // a pass sees the fault once a bucket after onset is in
      const double p0 = sum.n > 0 ? sum.e0 / sum.n : 0;
      if (binomialLlr(sum.n, sum.k, p0) >= bar_) {
        f.row.localized_at = static_cast<double>(p) * config_.pass_s;
        break;
      }
    }
    out.push_back(f.row);
  }
  return out;
}

}  // namespace netdiag::bench
