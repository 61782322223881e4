// The scheduler driven with explicit monotonic times: no sleeps, no clock.

#include "collector/scheduler.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace netdiag::collector {
namespace {

TEST(Scheduler, PeriodicTaskKeepsItsGridWithoutJitter) {
  Scheduler s(1);
  std::vector<double> runs;
  s.every("t", 100, Cadence{1, 0, 0, false}, [&](double now) { runs.push_back(now); });
  EXPECT_DOUBLE_EQ(s.nextDue(), 100);
  EXPECT_EQ(s.runDue(100), 1u);
  EXPECT_DOUBLE_EQ(s.nextDue(), 101);
  EXPECT_EQ(s.runDue(100.5), 0u);
  // Run late within the slot: the next one stays on the grid (no drift).
  EXPECT_EQ(s.runDue(101.3), 1u);
  EXPECT_DOUBLE_EQ(s.nextDue(), 102);
  EXPECT_EQ(runs, (std::vector<double>{100, 101.3}));
  EXPECT_EQ(s.skipped("t"), 0u);
}

TEST(Scheduler, FirstRunWaitsFirstS) {
  Scheduler s(1);
  int n = 0;
  s.every("batch", 10, Cadence{2, 0, 2, false}, [&](double) { ++n; });
  EXPECT_EQ(s.runDue(11.9), 0u);
  EXPECT_EQ(s.runDue(12), 1u);
  EXPECT_DOUBLE_EQ(s.nextDue(), 14);
  EXPECT_EQ(n, 1);
}

TEST(Scheduler, JitterMovesRunsWithinItsBoundAroundTheGrid) {
  Scheduler s(7);
  s.every("t", 0, Cadence{10, 0.2, 0, false}, [](double) {});
  std::vector<double> offsets;
  for (int k = 1; k <= 500; ++k) {
    s.runDue(s.nextDue());
    offsets.push_back(s.nextDue() - 10.0 * k);  // slot k's grid time
  }
  const auto [lo, hi] = std::minmax_element(offsets.begin(), offsets.end());
  EXPECT_GE(*lo, -1.0);  // ±jitter/2 of the interval
  EXPECT_LE(*hi, 1.0);
  EXPECT_LT(*lo, -0.5);  // and it does move them, both ways
  EXPECT_GT(*hi, 0.5);
  EXPECT_EQ(s.skipped("t"), 0u);  // running at the jittered due time is never late
}

TEST(Scheduler, FallingBehindSkipsMissedSlotsInsteadOfBursting) {
  Scheduler s(1);
  int n = 0;
  s.every("t", 0, Cadence{1, 0, 0, false}, [&](double) { ++n; });
  s.runDue(0);
  // The loop stalls for 5.5 s: one run now, slots 2..5 skipped, next at 6.
  EXPECT_EQ(s.runDue(5.5), 1u);
  EXPECT_EQ(s.skipped("t"), 4u);
  EXPECT_DOUBLE_EQ(s.nextDue(), 6);
  EXPECT_EQ(s.runDue(5.9), 0u);
  EXPECT_EQ(n, 2);
}

TEST(Scheduler, SelfTimedTaskSaysWhenItRunsNext) {
  Scheduler s(1);
  std::vector<double> delays = {1, 2, 4};
  size_t k = 0;
  s.selfTimed("plan", 50, 0, [&](double) { return delays[std::min(k++, delays.size() - 1)]; });
  s.runDue(50);
  EXPECT_DOUBLE_EQ(s.nextDue(), 51);
  s.runDue(51.5);  // late: the delay counts from when it ran
  EXPECT_DOUBLE_EQ(s.nextDue(), 53.5);
  s.runDue(53.5);
  EXPECT_DOUBLE_EQ(s.nextDue(), 57.5);
}

TEST(Scheduler, TasksDueTogetherRunEarliestFirstThenInTheOrderAdded) {
  Scheduler s(1);
  std::vector<std::string> order;
  s.every("b", 0, Cadence{5, 0, 1, false}, [&](double) { order.push_back("b"); });
  s.selfTimed("plan", 0, 0, [&](double) {
    order.push_back("plan");
    return 100.0;
  });
  s.every("counters", 0, Cadence{5, 0, 0, false}, [&](double) { order.push_back("counters"); });
  EXPECT_EQ(s.runDue(1), 3u);
  EXPECT_EQ(order, (std::vector<std::string>{"plan", "counters", "b"}));
}

TEST(Scheduler, RandomPhaseSpreadsManyTargetsOverTheInterval) {
  Scheduler s(42);
  for (int i = 0; i < 200; ++i)
    s.every("switch" + std::to_string(i), 0, Cadence{10, 0, 0, true}, [](double) {});
  std::set<int> seconds;  // which second of the interval each first run falls in
  size_t ran = 0;
  for (double t = 0; t < 10; t += 0.01) {
    const size_t n = s.runDue(t);
    if (n > 0) seconds.insert(static_cast<int>(t));
    ran += n;
  }
  EXPECT_EQ(ran, 200u);            // every target ran once in its first interval
  EXPECT_EQ(seconds.size(), 10u);  // and not all at the same moment
}

TEST(Scheduler, SameSeedSameSchedule) {
  auto dues = [](uint64_t seed) {
    Scheduler s(seed);
    s.every("t", 0, Cadence{3, 0.5, 0, true}, [](double) {});
    std::vector<double> out;
    for (int k = 0; k < 20; ++k) {
      out.push_back(s.nextDue());
      s.runDue(s.nextDue());
    }
    return out;
  };
  EXPECT_EQ(dues(5), dues(5));
  EXPECT_NE(dues(5), dues(6));
}

TEST(Scheduler, EmptyIsNeverDue) {
  Scheduler s(1);
  EXPECT_TRUE(std::isinf(s.nextDue()));
  EXPECT_EQ(s.runDue(1e9), 0u);
}

}  // namespace
}  // namespace netdiag::collector
