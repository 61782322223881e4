#include "analyzer/host_loss_clock.h"

#include <gtest/gtest.h>

namespace netdiag::analyzer {
namespace {

// An episode runs from its first affirming pass to its newest, through
// passes without a loss as long as the evidence does not show the loss
// stopped, and never through more than the gap (the horizon).
TEST(HostLossClock, AnEpisodeEndsWhenTheLossStoppedNotWhenAPassSawNone) {
  HostLossClock clock(180);
  bool stopped = false;
  double asked_last = -1, asked_rate = -1;
  const auto judge = [&](topology::NodeId, double last, double rate) {
    asked_last = last, asked_rate = rate;
    return stopped;
  };
  clock.lossy(7, 100, 0.01);
  clock.endPass(100, judge);
  EXPECT_EQ(asked_last, -1) << "a host affirmed this pass is not asked";
  for (double t = 105; t <= 200; t += 5) clock.endPass(t, judge);
  ASSERT_TRUE(clock.episode(7));
  EXPECT_EQ(asked_last, 100);
  EXPECT_EQ(asked_rate, 0.01);
  clock.lossy(7, 205, 0.02);
  clock.endPass(205, judge);
  EXPECT_EQ(clock.episode(7)->since, 100);
  EXPECT_EQ(clock.episode(7)->last, 205);
  EXPECT_EQ(clock.episode(7)->rate, 0.02);
  stopped = true;
  clock.endPass(210, judge);
  EXPECT_FALSE(clock.episode(7)) << "the evidence after it rejects its rate";
  // A new episode starts afresh, and dies after the gap whatever the test.
  stopped = false;
  clock.lossy(7, 300, 0.01);
  clock.endPass(480, judge);
  EXPECT_EQ(clock.episode(7)->since, 300);
  clock.endPass(485, judge);
  EXPECT_FALSE(clock.episode(7));
  EXPECT_FALSE(clock.episode(8));
}

}  // namespace
}  // namespace netdiag::analyzer
