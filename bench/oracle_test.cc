// The oracle's test of one link when other faults are on the same probes'
// paths: their loss is in the null, so the link is not credited with it.

#include "bench/oracle.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace netdiag::bench {
namespace {

TEST(OracleLlr, OneClassIsTheBinomialTest) {
  EXPECT_DOUBLE_EQ(addedLossLlr({{10000, 30, 1e-4}}), binomialLlr(10000, 30, 1e-4));
  EXPECT_EQ(addedLossLlr({{10000, 0, 1e-4}}), 0);
}

// 20 of 1,000 probes lost where another fault on their path loses 2 %: no
// evidence against the link tested; counted against the background alone,
// as the oracle did, they were over 80 nats of it.
TEST(OracleLlr, LossesAnotherFaultExplainsAreNotTheLinks) {
  const double clean = addedLossLlr({{10000, 0, 1e-5}, {1000, 20, 0.02}});
  EXPECT_LT(clean, 1.0);
  EXPECT_GT(binomialLlr(11000, 20, 1e-5), 80);
  // Loss beyond what the other fault explains is still evidence.
  EXPECT_GT(addedLossLlr({{10000, 50, 1e-5}, {1000, 40, 0.02}}), 100);
}

TEST(OracleLlr, FindsTheMaximumOverTheAddedLoss) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::array<double, 3>> classes;
    for (int c = 0; c < 3; ++c) {
      const double n = std::floor(10 + 5000 * u(rng));
      const double q = std::pow(10, -6 + 5.5 * u(rng));
      classes.push_back({n, std::floor(n * std::min(1.0, q * 4 * u(rng))), q});
    }
    double best = 0;
    for (int i = 0; i < 50000; ++i) {
      const double x = i / 50000.0;
      double s = 0;
      for (const auto& [n, k, q] : classes) {
        s += k * std::log1p(x * (1 - q) / q) + (n - k) * std::log1p(-x);
      }
      best = std::max(best, s);
    }
    const double got = addedLossLlr(classes);
    EXPECT_GE(got, best - 1e-6) << trial;
    EXPECT_LE(got, best + 0.01 * std::max(1.0, best)) << trial;
  }
}

}  // namespace
}  // namespace netdiag::bench
