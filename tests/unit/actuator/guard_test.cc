// The switch agent's checks before it acts: each hostile or broken action
// is refused with its own reason, and a good one is accepted once.

#include "actuator/guard.h"

#include <gtest/gtest.h>

#include "tests/unit/actuator/test_keys.h"

namespace netdiag::actuator {
namespace {

using testing::signedAction;
using testing::testKey;

const std::unordered_set<std::string> kOwn = {"leaf0:swp1", "leaf0:swp3"};
constexpr uint64_t kNow = 1'800'000'000'000;

Guard guard() { return Guard(GuardOptions{"leaf0", 600000, 30000, 4}, testKey()); }

TEST(Guard, AcceptsAGoodActionOnceThenCallsItReplayed) {
  Guard g = guard();
  const v1::DrainAction a = signedAction("leaf0", "leaf0:swp3", kNow, 1);
  EXPECT_EQ(g.check(a, kNow + 100, kOwn), "");
  EXPECT_EQ(g.check(a, kNow + 200, kOwn), kReplayed);
  EXPECT_EQ(g.remembered(), 1u);
}

TEST(Guard, RefusesEveryActionWithoutAKey) {
  Guard g(GuardOptions{"leaf0"}, std::nullopt);
  EXPECT_EQ(g.check(signedAction("leaf0", "leaf0:swp3", kNow, 1), kNow, kOwn), kNoKey);
}

TEST(Guard, RefusesAForgedActionBeforeLookingAtIt) {
  Guard g = guard();
  v1::DrainAction forged = signedAction("leaf0", "leaf0:swp3", kNow, 1, testKey('x'));
  EXPECT_EQ(g.check(forged, kNow, kOwn), kBadMac);
  v1::DrainAction unsigned_action = signedAction("leaf0", "leaf0:swp3", kNow, 2);
  unsigned_action.clear_mac();
  EXPECT_EQ(g.check(unsigned_action, kNow, kOwn), kBadMac);
  v1::DrainAction for_another = signedAction("leaf1", "leaf0:swp3", kNow, 3);
  EXPECT_EQ(g.check(for_another, kNow, kOwn), kBadMac);
  EXPECT_EQ(g.remembered(), 0u) << "a forger must not fill the nonce table";
}

TEST(Guard, RefusesStaleEarlyAndOverlongActions) {
  Guard g = guard();
  EXPECT_EQ(g.check(signedAction("leaf0", "leaf0:swp3", kNow, 1), kNow + 60001, kOwn), kExpired);
  EXPECT_EQ(g.check(signedAction("leaf0", "leaf0:swp3", kNow + 30001, 2), kNow, kOwn),
            kNotYetValid);
  EXPECT_EQ(g.check(signedAction("leaf0", "leaf0:swp3", kNow + 30000, 3), kNow, kOwn), "")
      << "within the skew allowed";
  v1::DrainAction forever = signedAction("leaf0", "leaf0:swp3", kNow, 4);
  forever.set_expires_at_ms(kNow + 600001);
  sign(testKey(), "leaf0", forever);
  EXPECT_EQ(g.check(forever, kNow, kOwn), kLifetimeTooLong);
}

TEST(Guard, RefusesPortsItDoesNotOwn) {
  Guard g = guard();
  EXPECT_EQ(g.check(signedAction("leaf0", "leaf1:swp3", kNow, 1), kNow, kOwn), kNotOwnPort);
  EXPECT_EQ(g.check(signedAction("leaf0", "leaf0:swp9", kNow, 2), kNow, kOwn), kNotOwnPort)
      << "not in the plan";
  EXPECT_EQ(g.check(signedAction("leaf0", "leaf0:swp3", kNow, 3), kNow, {}), kNotOwnPort)
      << "no plan yet";
}

TEST(Guard, RefusesMalformedActions) {
  Guard g = guard();
  v1::DrainAction a = signedAction("leaf0", "leaf0:swp3", kNow, 1);
  a.set_op(v1::DrainAction::OP_UNSPECIFIED);
  sign(testKey(), "leaf0", a);
  EXPECT_EQ(g.check(a, kNow, kOwn), kBadAction);
  EXPECT_EQ(g.check(signedAction("leaf0", "leaf0:swp3", kNow, 0), kNow, kOwn), kBadAction)
      << "nonce 0";
}

TEST(Guard, ForgetsNoncesOnlyOnceTheirActionsExpiredAndStaysBounded) {
  Guard g = guard();  // remembers 4
  for (uint64_t n = 1; n <= 4; ++n) {
    EXPECT_EQ(g.check(signedAction("leaf0", "leaf0:swp3", kNow, n), kNow, kOwn), "");
  }
  EXPECT_EQ(g.check(signedAction("leaf0", "leaf0:swp3", kNow, 5), kNow, kOwn), kTooMany);
  // Once the first four expired, their nonces go and new ones fit.
  EXPECT_EQ(g.check(signedAction("leaf0", "leaf0:swp3", kNow + 60001, 6), kNow + 60001, kOwn), "");
  EXPECT_EQ(g.remembered(), 1u);
}

}  // namespace
}  // namespace netdiag::actuator
