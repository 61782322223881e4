// Subjects and message ids of the bus: any agent name is one token, and a
// subject says which agent it belongs to or nothing.

#include "bus/subjects.h"

#include <gtest/gtest.h>

#include "bus/connection.h"
#include "bus/stream.h"
#include "bus/tick.h"

namespace netdiag::bus {
namespace {

TEST(Subjects, AnyNameIsOneTokenAndComesBack) {
  for (const std::string name : {"leaf1", "host-7_a", "spine.1", "a*b>c", "sw 1", "x%41", "é"}) {
    const std::string t = escapeToken(name);
    EXPECT_EQ(t.find_first_of(".*> \t"), std::string::npos) << t;
    ASSERT_TRUE(unescapeToken(t)) << t;
    EXPECT_EQ(*unescapeToken(t), name);
  }
  EXPECT_EQ(escapeToken("spine.1"), "spine%2E1");
}

TEST(Subjects, HostileTokensDoNotDecode) {
  for (const std::string bad : {"", "%", "%4", "%zz", "%41", "a.b", "a*", ">"}) {
    EXPECT_FALSE(unescapeToken(bad)) << bad;  // %41 is "A": one spelling per name
  }
}

TEST(Subjects, ASubjectNamesItsAgentOrNothing) {
  Subjects s{"netdiag", "pod1"};
  EXPECT_EQ(s.batch("leaf.1"), "netdiag.pod1.batch.leaf%2E1");
  EXPECT_EQ(s.batchAgent("netdiag.pod1.batch.leaf%2E1"), "leaf.1");
  EXPECT_FALSE(s.batchAgent("netdiag.pod2.batch.leaf1"));
  EXPECT_FALSE(s.batchAgent("netdiag.pod1.plan.leaf1"));
  EXPECT_FALSE(s.batchAgent("netdiag.pod1.batch."));
  EXPECT_FALSE(s.batchAgent("netdiag.pod1.batch.a.b"));
  EXPECT_EQ(s.planAgent(s.plan("h1")), "h1");
  EXPECT_EQ(s.stream(), "NETDIAG_POD1");
  EXPECT_EQ(messageId("h1", 7, 42), "h1:7:42");
}

TEST(Subjects, BadPrefixesFabricsAndUrlsAreNamed) {
  EXPECT_EQ(checkSubjects({"netdiag", "pod-1"}), "");
  EXPECT_EQ(checkSubjects({"corp.netdiag", "pod1"}), "");
  EXPECT_NE(checkSubjects({"net*", "pod1"}).find("prefix"), std::string::npos);
  EXPECT_NE(checkSubjects({"a..b", "pod1"}).find("prefix"), std::string::npos);
  EXPECT_NE(checkSubjects({"netdiag", "pod.1"}).find("fabric"), std::string::npos);
  EXPECT_NE(checkSubjects({"netdiag", ""}).find("fabric"), std::string::npos);
  BusOptions o;
  EXPECT_NE(checkBusOptions(o).find("no URL"), std::string::npos);
  o.url = "http://x:4222";
  EXPECT_NE(checkBusOptions(o).find("nats://"), std::string::npos);
  o.url = "nats://x";
  EXPECT_NE(checkBusOptions(o).find("port"), std::string::npos);
  o.url = "nats://a:4222,nats://b:4223";
  EXPECT_EQ(checkBusOptions(o), "");
  o.creds_file = "/nonexistent/creds";
  EXPECT_NE(checkBusOptions(o).find("cannot read"), std::string::npos);
}

TEST(StreamLimits, KeepTheHorizonPlusTheOutageAtTheFabricsRate) {
  const StreamLimits l = deriveLimits(180, 3600, 1e6);
  EXPECT_DOUBLE_EQ(l.max_age_s, 3780);
  EXPECT_EQ(l.max_bytes, static_cast<int64_t>(1.5 * 1e6 * 3780));
  EXPECT_EQ(deriveLimits(180, 0, 1).max_bytes, int64_t{64} << 20);  // a floor
}

// Tick markers: the period's multiple at or below the wall clock, a body
// that says it back, and nothing else decodes.
TEST(Ticks, RoundDownEncodeAndRefuseAnythingElse) {
  EXPECT_DOUBLE_EQ(tickTime(1796547812.37, 1), 1796547812);
  EXPECT_DOUBLE_EQ(tickTime(1796547812.37, 0.5), 1796547812);
  EXPECT_EQ(encodeTick(1796547812), "1796547812.000");
  EXPECT_EQ(decodeTick(encodeTick(1796547812.5)), 1796547812.5);
  EXPECT_EQ((Subjects{"netdiag", "f1"}.tick()), "netdiag.f1.tick");
  for (const char* bad : {"", "-1", "1e9", "nan", "inf", "1.2.3", " 5", "5 ", "0x10",
                          "99999999999999999999999999999999999"}) {
    EXPECT_FALSE(decodeTick(bad)) << bad;
  }
}

}  // namespace
}  // namespace netdiag::bus
