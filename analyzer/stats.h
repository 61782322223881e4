#pragma once

// The statistics of localization, in one place.

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

namespace netdiag::analyzer {

// Log-likelihood ratio (nats) of k losses in n probes under the maximum-
// likelihood loss rate k/n against the background rate q0; 0 when the data
// show no more loss than background. Binomial likelihoods aggregate
// exactly over records, so n and k may be sums.
inline double binomialLlr(double n, double k, double q0) {
  if (n <= 0 || k <= n * q0) return 0;
  double x = k / n;
  double llr = k * std::log(x / q0);
  if (n > k) llr += (n - k) * (std::log1p(-x) - std::log1p(-q0));
  return llr;
}

// The log-likelihood ratio of "the first n1 probes lose at a higher rate
// than the other n2" against one rate for all (0 when they lose no more).
inline double twoSampleLlr(double n1, double k1, double n2, double k2) {
  if (n1 <= 0 || n2 <= 0) return 0;
  k1 = std::clamp(k1, 0.0, n1), k2 = std::clamp(k2, 0.0, n2);
  if (k1 * n2 <= k2 * n1) return 0;
  auto ll = [](double n, double k, double p) {  // with 0 ln 0 = 0
    double l = 0;
    if (k > 0) l += k * std::log(p);
    if (n > k) l += (n - k) * std::log1p(-p);
    return l;
  };
  const double p = (k1 + k2) / (n1 + n2);
  return std::max(0.0, ll(n1, k1, k1 / n1) + ll(n2, k2, k2 / n2) - ll(n1, k1, p) - ll(n2, k2, p));
}

// The log-likelihood ratio of x added loss against none, for probes of two
// kinds with backgrounds q1 and q2 (below).
inline double twoClassLlrAt(double x, double n1, double k1, double q1, double n2, double k2,
                            double q2) {
  double l = 0;
  for (auto [n, k, q] : {std::tuple{n1, k1, q1}, std::tuple{n2, k2, q2}}) {
    if (n <= 0) continue;
    if (k > 0) l += k * std::log1p(x / q);
    if (n > k) l += (n - k) * (std::log1p(-(q + x)) - std::log1p(-q));
  }
  return l;
}

// The same for probes of two kinds with different backgrounds q1 and q2
// (one-way and round-trip counts) and one added loss x >= 0 common to both:
// the maximum over x of the two binomial log-likelihoods at q + x against
// x = 0. The log-likelihood is concave in x, so Newton's method from the
// pooled estimate, kept inside the bracket where the slope changes sign,
// finds the maximum. `added`, when given, receives the maximizing x.
inline double twoClassLlr(double n1, double k1, double q1, double n2, double k2, double q2,
                          double* added = nullptr) {
  auto single = [&](double n, double k, double q) {
    if (added) *added = n > 0 ? std::max(0.0, k / n - q) : 0.0;
    return binomialLlr(n, k, q);
  };
  if (n2 <= 0) return single(n1, k1, q1);
  if (n1 <= 0) return single(n2, k2, q2);
  // Slope and curvature of the log-likelihood at x.
  auto slope = [&](double x, double& curve) {
    double g = 0;
    curve = 0;
    for (auto [n, k, q] : {std::tuple{n1, k1, q1}, std::tuple{n2, k2, q2}}) {
      const double p = q + x;
      g += k / p - (n - k) / (1 - p);
      curve -= k / (p * p) + (n - k) / ((1 - p) * (1 - p));
    }
    return g;
  };
  auto llr = [&](double x) { return twoClassLlrAt(x, n1, k1, q1, n2, k2, q2); };
  double curve = 0;
  if (slope(0, curve) <= 0) {
    if (added) *added = 0;
    return 0;
  }
  double lo = 0, hi = 1 - std::max(q1, q2);
  if (k1 >= n1 && k2 >= n2) {  // every probe lost: the rate is 1
    if (added) *added = hi;
    return llr(hi * (1 - 1e-12));
  }
  double x = std::clamp((k1 + k2) / (n1 + n2) - (q1 * n1 + q2 * n2) / (n1 + n2), 0.0, hi);
  for (int i = 0; i < 60; ++i) {
    const double g = slope(x, curve);
    if (g > 0)
      lo = x;
    else
      hi = x;
    double next = x - g / curve;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);  // Newton left the bracket
    if (std::abs(next - x) <= 1e-15 + 1e-12 * x) {
      x = next;
      break;
    }
    x = next;
  }
  if (added) *added = x;
  return llr(x);
}

// A 90 % interval for the added loss of twoClassLlr, maximized at x_hat:
// the x whose log-likelihood lies within kInterval90Nats of the maximum
// (Wilks: twice the drop is chi-square with one degree of freedom, whose
// 0.90 quantile is 2.706). The log-likelihood is concave, so each end is
// found by bisection on its side of x_hat.
constexpr double kInterval90Nats = 2.706 / 2;
// The x in [0, top] where a concave f is at least `bar`, f(x_hat) >= bar:
// each end by bisection on its side of x_hat. An interval that reaches top
// (every probe lost but for the background) ends at 1.
template <typename F>
std::pair<double, double> concaveLevelSet(const F& f, double x_hat, double bar, double top) {
  x_hat = std::clamp(x_hat, 0.0, top);
  auto inside = [&](double x) { return f(x) >= bar; };
  auto edge = [&](double in, double out) {  // inside(in), !inside(out)
    for (int i = 0; i < 60 && std::abs(out - in) > 1e-12 + 1e-9 * in; ++i) {
      const double mid = 0.5 * (in + out);
      (inside(mid) ? in : out) = mid;
    }
    return in;
  };
  const double lo = inside(0) ? 0.0 : edge(x_hat, 0.0);
  const double hi = inside(top) ? 1.0 : edge(x_hat, top);
  return {lo, hi};
}

// The largest added loss probes of backgrounds q1 and q2 admit.
inline double addedLossTop(double q1, double q2) { return 1 - std::max(q1, q2) - 1e-12; }

// The 90 % interval of twoClassLlr's added loss on one set of counts.
inline std::pair<double, double> twoClassInterval(double x_hat, double n1, double k1, double q1,
                                                  double n2, double k2, double q2) {
  const double top = addedLossTop(n1 > 0 ? q1 : 0.0, n2 > 0 ? q2 : 0.0);
  auto f = [&](double x) { return twoClassLlrAt(x, n1, k1, q1, n2, k2, q2); };
  return concaveLevelSet(f, x_hat, f(std::clamp(x_hat, 0.0, top)) - kInterval90Nats, top);
}

// log(e^a + e^b), without overflow (either may be -infinity).
inline double logAddExp(double a, double b) {
  if (a < b) std::swap(a, b);
  return std::isinf(b) && b < 0 ? a : a + std::log1p(std::exp(b - a));
}

// Posterior probability that a hypothesis with log-likelihood ratio `llr`
// is the right one, given a prior of one fault among e^log_m hypotheses and
// a competing explanation of the same evidence with ratio `alt_llr`.
inline double posterior(double llr, double log_m, double alt_llr) {
  double against = std::exp(log_m - llr);
  if (std::isfinite(alt_llr)) against += std::exp(alt_llr - llr);
  return 1.0 / (1.0 + against);
}

// The confidence an incident states: that posterior with one more
// explanation beside the named ones, "no fault here" (noise, or a fault the
// model does not see). Its odds come from the paging bar: evidence at the
// bar leaves it the odds the paging confidence allows, (1 - p) / p, and
// each nat short of the bar multiplies them by e. So a suspect below the
// bar says how far short it is, not how well it beats its alternatives.
inline double withNoFault(double posterior_alt, double llr, double bar, double page_confidence) {
  const double against = 1.0 / std::max(posterior_alt, 1e-300) - 1.0;
  const double no_fault =
      std::exp(std::min(bar - llr, 700.0)) * (1 - page_confidence) / page_confidence;
  return 1.0 / (1.0 + against + no_fault);
}

}  // namespace netdiag::analyzer
