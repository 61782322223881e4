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

double addedLossLlr(const std::vector<std::array<double, 3>>& classes) {
  if (classes.size() == 1) {
    const auto [n, k, q] = classes[0];
    return binomialLlr(n, k, q);
  }
  auto llr = [&](double x) {
    double sum = 0;
    for (const auto& [n, k, q] : classes) {
      if (n <= 0) continue;
      if (k > 0) sum += k * (q > 0 ? std::log1p(x * (1 - q) / q) : INFINITY);
      if (n > k) sum += (n - k) * std::log1p(-x);
    }
    return sum;
  };
  // Concave in x (a sum of logs of functions linear in x): a golden-section
  // search over [0, 1) finds its maximum.
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = 0, b = 1 - 1e-12;
  double c = b - g * (b - a), d = a + g * (b - a);
  double fc = llr(c), fd = llr(d);
  for (int i = 0; i < 200 && b - a > 1e-12; ++i) {
    if (fc < fd) {
      a = c, c = d, fc = fd;
      d = a + g * (b - a), fd = llr(d);
    } else {
      b = d, d = c, fd = fc;
      c = b - g * (b - a), fc = llr(c);
    }
  }
  return std::max({0.0, fc, fd});
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
    t.uninformative = f.kind == "link_down" || f.kind == "link_flap" || f.kind == "link_blackhole";
    t.others_loss = f.loss;
    faults_.push_back(std::move(t));
  }
}

void Oracle::add(Tracked& f, double t, double n, double k, double p0, double others) {
  if (n <= 0) return;
  const auto b = static_cast<size_t>(std::max(0.0, std::ceil(t / config_.pass_s - 1e-9)));
  if (f.buckets.size() <= b) f.buckets.resize(b + 1);
  Bucket& into = f.buckets[b][others];
  into.n += n;
  into.k += k;
  into.e0 += n * p0;
  if (t - 1e-9 > f.row.onset && (!f.row.end || t - 5 < *f.row.end)) {
    f.row.probes += n;
    f.row.losses += k;
  }
}

std::optional<double> Oracle::othersOn(const Tracked& f,
                                       const std::vector<topology::DirLinkId>& path, double t,
                                       double window_s) const {
  double survive = 1;
  for (const Tracked& o : faults_) {
    if (&o == &f || t <= o.row.onset || (o.row.end && t - window_s >= *o.row.end)) continue;
    if (std::find(path.begin(), path.end(), o.link) == path.end()) continue;
    if (o.uninformative) return std::nullopt;
    survive *= 1 - o.others_loss;
  }
  return 1 - survive;
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
    const auto fwd = othersOn(f, r.path, r.t, r.window_s);
    const auto rev = othersOn(f, r.reply_path, r.t, r.window_s);
    if (r.hasOneWay()) {
      if (on_fwd && fwd) add(f, r.t, r.sent, *r.lost_fwd, through(fwd_len, bg), *fwd);
      if (on_rev && rev) {
        add(f, r.t, r.sent - *r.lost_fwd, *r.lost_rev, through(rev_len, bg), *rev);
      }
    } else if (fwd && rev) {
      add(f, r.t, r.sent, r.lost, through(fwd_len + rev_len, bg), 1 - (1 - *fwd) * (1 - *rev));
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
    Classes sum;
    // Sliding sum over buckets (p - window, p].
    for (size_t p = 0; p <= last; ++p) {
      for (const auto& [m, b] : f.buckets[p]) {
        Bucket& into = sum[m];
        into.n += b.n, into.k += b.k, into.e0 += b.e0;
      }
      if (p >= window) {
        for (const auto& [m, b] : f.buckets[p - window]) {
          Bucket& into = sum[m];
          into.n -= b.n, into.k -= b.k, into.e0 -= b.e0;
        }
      }
      if (p < first + 1) continue;  // a pass sees the fault once a bucket after onset is in
      std::vector<std::array<double, 3>> classes;
      for (const auto& [m, b] : sum) {
        if (b.n < 0.5) continue;  // (whole probes; what subtracting left)
        const double q0 = b.e0 / b.n;
        classes.push_back({b.n, b.k, m > 0 ? 1 - (1 - q0) * (1 - m) : q0});
      }
      if (!classes.empty() && addedLossLlr(classes) >= bar_) {
        f.row.localized_at = static_cast<double>(p) * config_.pass_s;
        break;
      }
    }
    out.push_back(f.row);
  }
  return out;
}

}  // namespace netdiag::bench
