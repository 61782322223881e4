// The two formulas of localization (analyzer/stats.h): the binomial
// likelihood ratio, its two-background form, and the posterior.

#include "analyzer/stats.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace netdiag::analyzer {
namespace {

// The two-class log-likelihood ratio at added loss x, straight from its definition.
double llrAt(double x, double n1, double k1, double q1, double n2, double k2, double q2) {
  auto one = [x](double n, double k, double q) {
    return k * std::log((q + x) / q) + (n - k) * std::log((1 - q - x) / (1 - q));
  };
  return one(n1, k1, q1) + one(n2, k2, q2);
}

TEST(Stats, BinomialLlrIsZeroAtOrBelowBackgroundAndGrowsWithLosses) {
  EXPECT_EQ(binomialLlr(10000, 0, 1e-4), 0);
  EXPECT_EQ(binomialLlr(10000, 1, 1e-4), 0);
  EXPECT_EQ(binomialLlr(0, 0, 1e-4), 0);
  EXPECT_GT(binomialLlr(10000, 10, 1e-4), binomialLlr(10000, 5, 1e-4));
  // Every probe lost: k ln(1/q0).
  EXPECT_NEAR(binomialLlr(100, 100, 1e-4), 100 * std::log(1e4), 1e-9);
}

TEST(Stats, TwoClassLlrWithOneClassEmptyIsTheBinomialOne) {
  double x = -1;
  EXPECT_DOUBLE_EQ(twoClassLlr(10000, 12, 5e-5, 0, 0, 1e-4, &x), binomialLlr(10000, 12, 5e-5));
  EXPECT_NEAR(x, 12.0 / 10000 - 5e-5, 1e-15);
  EXPECT_DOUBLE_EQ(twoClassLlr(0, 0, 5e-5, 8000, 30, 1e-4, &x), binomialLlr(8000, 30, 1e-4));
  EXPECT_NEAR(x, 30.0 / 8000 - 1e-4, 1e-15);
}

TEST(Stats, TwoClassLlrWithOneBackgroundIsThePooledOne) {
  double x = 0;
  EXPECT_NEAR(twoClassLlr(6000, 4, 1e-4, 4000, 9, 1e-4, &x), binomialLlr(10000, 13, 1e-4), 1e-6);
  EXPECT_NEAR(x, 13.0 / 10000 - 1e-4, 1e-9);
}

TEST(Stats, TwoClassLlrIsZeroWhenNeitherClassLosesMoreThanItsBackground) {
  double x = 1;
  EXPECT_EQ(twoClassLlr(10000, 0, 5e-5, 10000, 1, 1e-4, &x), 0);
  EXPECT_EQ(x, 0);
}

TEST(Stats, TwoClassLlrIsTheMaximumOverTheAddedLoss) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 500; ++i) {
    SCOPED_TRACE(i);
    const double q1 = std::pow(10, -6 + 3 * u(rng)), q2 = std::pow(10, -6 + 3 * u(rng));
    const double n1 = std::floor(1 + 1e5 * u(rng)), n2 = std::floor(1 + 1e5 * u(rng));
    const double rate = std::pow(10, -5 + 5 * u(rng));
    const double k1 = std::floor(n1 * std::min(1.0, rate * 2 * u(rng)));
    const double k2 = std::floor(n2 * std::min(1.0, rate * 2 * u(rng)));
    double x = -1;
    const double llr = twoClassLlr(n1, k1, q1, n2, k2, q2, &x);
    ASSERT_TRUE(std::isfinite(llr));
    ASSERT_GE(llr, 0);
    ASSERT_GE(x, 0);
    ASSERT_LT(x, 1);
    if (k1 >= n1 && k2 >= n2) continue;  // the maximum is at the boundary
    // No point of a fine grid (in log scale) beats it, and it is the value at x.
    EXPECT_NEAR(llr, x > 0 ? llrAt(x, n1, k1, q1, n2, k2, q2) : 0, 1e-6 * std::max(1.0, llr));
    const double top = 1 - std::max(q1, q2);
    for (int g = 0; g <= 2000; ++g) {
      const double y = top * std::pow(10, -9 + 9 * g / 2000.0) * (1 - 1e-9);
      EXPECT_LE(llrAt(y, n1, k1, q1, n2, k2, q2), llr + 1e-6 * std::max(1.0, llr)) << "x=" << y;
    }
  }
}

TEST(Stats, LossesHeldToTheLowerBackgroundWeighMore) {
  // The same 12 losses in 10,000 probes: as one-way counts (background
  // 5e-5) they are stronger evidence than as round trips (1e-4).
  EXPECT_GT(twoClassLlr(10000, 12, 5e-5, 0, 0, 1e-4), twoClassLlr(0, 0, 5e-5, 10000, 12, 1e-4));
  // Losses only among the round trips are not made stronger by clean
  // one-way probes next to them.
  EXPECT_LT(twoClassLlr(20000, 0, 5e-5, 10000, 12, 1e-4), twoClassLlr(0, 0, 5e-5, 10000, 12, 1e-4));
}

// The 90 % interval is a coverage claim: over many draws at a known rate
// it holds the rate about 90 % of the time, at few losses and at many, with
// one-way and round-trip probes mixed. (Fixed seed: deterministic.)
TEST(Stats, LossIntervalCoversTheTrueRateNinetyPercentOfTheTime) {
  std::mt19937_64 rng(7);
  const double q1 = 5e-5, q2 = 1e-4;
  for (double x : {2e-3, 5e-3, 2e-2, 0.2}) {
    for (double n : {3000.0, 30000.0}) {
      int covered = 0;
      const int draws = 2000;
      for (int i = 0; i < draws; ++i) {
        const double n1 = n * 0.4, n2 = n * 0.6;
        const double k1 = std::binomial_distribution<int>(static_cast<int>(n1), q1 + x)(rng);
        const double k2 = std::binomial_distribution<int>(static_cast<int>(n2), q2 + x)(rng);
        double x_hat = 0;
        twoClassLlr(n1, k1, q1, n2, k2, q2, &x_hat);
        auto [lo, hi] = twoClassInterval(x_hat, n1, k1, q1, n2, k2, q2);
        ASSERT_LE(lo, x_hat + 1e-12);
        ASSERT_GE(hi, x_hat - 1e-12);
        covered += lo <= x && x <= hi;
      }
      const double share = static_cast<double>(covered) / draws;
      EXPECT_GT(share, 0.87) << "x=" << x << " n=" << n;
      EXPECT_LT(share, 0.93) << "x=" << x << " n=" << n;  // not a vacuously wide interval
    }
  }
}

TEST(Stats, LossIntervalEndsAreWhereTheLikelihoodDropsByTheBar) {
  double x_hat = 0;
  twoClassLlr(10000, 40, 5e-5, 10000, 60, 1e-4, &x_hat);
  auto [lo, hi] = twoClassInterval(x_hat, 10000, 40, 5e-5, 10000, 60, 1e-4);
  const double top = llrAt(x_hat, 10000, 40, 5e-5, 10000, 60, 1e-4);
  EXPECT_NEAR(llrAt(lo, 10000, 40, 5e-5, 10000, 60, 1e-4), top - kInterval90Nats, 1e-6);
  EXPECT_NEAR(llrAt(hi, 10000, 40, 5e-5, 10000, 60, 1e-4), top - kInterval90Nats, 1e-6);
  // No loss above background: the interval starts at 0.
  auto [lo0, hi0] = twoClassInterval(0, 10000, 0, 5e-5, 0, 0, 1e-4);
  EXPECT_EQ(lo0, 0);
  EXPECT_GT(hi0, 0);
  EXPECT_LT(hi0, 1e-3);
  // Every probe lost: the interval reaches the top.
  auto [lo1, hi1] = twoClassInterval(1, 0, 0, 5e-5, 100, 100, 1e-4);
  EXPECT_GT(lo1, 0.9);
  EXPECT_GT(hi1, 0.999);
}

TEST(Stats, PosteriorWeighsThePriorAndTheBestAlternative) {
  EXPECT_NEAR(posterior(std::log(1e4) + std::log(99.0), std::log(1e4), -INFINITY), 0.99, 1e-12);
  EXPECT_NEAR(posterior(20, 0, 20), 1.0 / (1 + std::exp(-20) + 1), 1e-12);
  EXPECT_LT(posterior(5, std::log(1e4), -INFINITY), 0.1);
}

TEST(Stats, LogAddExpNeitherOverflowsNorLosesTheEmptySide) {
  EXPECT_EQ(logAddExp(-INFINITY, 3.0), 3.0);
  EXPECT_EQ(logAddExp(3.0, -INFINITY), 3.0);
  EXPECT_EQ(logAddExp(-INFINITY, -INFINITY), -INFINITY);
  EXPECT_NEAR(logAddExp(1000, 1000), 1000 + std::log(2.0), 1e-9);
  EXPECT_NEAR(logAddExp(std::log(3.0), std::log(5.0)), std::log(8.0), 1e-12);
}

}  // namespace
}  // namespace netdiag::analyzer
