#pragma once

// The statistics of localization, in one place.

#include <cmath>

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

// Posterior probability that a hypothesis with log-likelihood ratio `llr`
// is the right one, given a prior of one fault among e^log_m hypotheses and
// a competing explanation of the same evidence with ratio `alt_llr`.
inline double posterior(double llr, double log_m, double alt_llr) {
  double against = std::exp(log_m - llr);
  if (std::isfinite(alt_llr)) against += std::exp(alt_llr - llr);
  return 1.0 / (1.0 + against);
}

}  // namespace netdiag::analyzer
