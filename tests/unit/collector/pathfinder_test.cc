// Path discovery: on real loopback sockets (the destination is one hop
// away), and the per-flow state machine fed with the error-queue entries a
// multi-hop fabric produces (the real multi-hop run is the namespace e2e).

#include "collector/pathfinder.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector/responder.h"
#include "tests/unit/collector/free_port.h"

namespace netdiag::collector {
namespace {

using testing::freePort;

TEST(Pathfinder, LoopbackResponderIsAOneHopPath) {
  ResponderOptions ro;
  ro.address = "127.0.0.1";
  ro.port = 0;
  std::string err;
  auto responder = Responder::start(ro, &err);
  ASSERT_NE(responder, nullptr) << err;
  FlowTuple t{"127.0.0.1", freePort(), "127.0.0.1", responder->port(), 0};
  auto r = tracePath(t, {}, &err);
  ASSERT_TRUE(r) << err;
  ASSERT_EQ(r->hops, std::vector<std::string>{"127.0.0.1"});
  EXPECT_TRUE(r->complete);
  EXPECT_EQ(responder->stats().replied, 1u);
  EXPECT_EQ(responder->stats().flows, 0u);  // trace probes are not counted
}

TEST(Pathfinder, PortUnreachableFromTheDestinationCompletesThePath) {
  FlowTuple t{"127.0.0.1", freePort(), "127.0.0.3", freePort(), 0};
  std::string err;
  auto r = tracePath(t, {}, &err);
  ASSERT_TRUE(r) << err;
  ASSERT_EQ(r->hops, std::vector<std::string>{"127.0.0.3"});
  EXPECT_TRUE(r->complete);
}

// The planner gives flow i of every peer the same source port; each flow's
// socket must still open and hear only its own peer.
TEST(Pathfinder, FlowsToDifferentPeersShareASourcePort) {
  std::string err;
  ResponderOptions ro;
  ro.port = 0;
  ro.address = "127.0.0.2";
  auto a = Responder::start(ro, &err);
  ASSERT_NE(a, nullptr) << err;
  ro.address = "127.0.0.3";
  auto b = Responder::start(ro, &err);
  ASSERT_NE(b, nullptr) << err;
  const uint16_t sport = freePort();
  auto ra = tracePath({"127.0.0.1", sport, "127.0.0.2", a->port(), 0}, {}, &err);
  ASSERT_TRUE(ra) << err;
  int fa = openFlowSocket({"127.0.0.1", sport, "127.0.0.2", a->port(), 0}, &err);
  ASSERT_GE(fa, 0) << err;
  int fb = openFlowSocket({"127.0.0.1", sport, "127.0.0.3", b->port(), 0}, &err);
  EXPECT_GE(fb, 0) << err;
  auto rb = tracePath({"127.0.0.1", sport, "127.0.0.3", b->port(), 0}, {}, &err);
  ASSERT_TRUE(rb) << err;
  EXPECT_EQ(rb->hops, std::vector<std::string>{"127.0.0.3"});
  ::close(fa);
  if (fb >= 0) ::close(fb);
}

TEST(Pathfinder, ReportsABadTuple) {
  std::string err;
  EXPECT_FALSE(tracePath({"127.0.0.1", freePort(), "nowhere", 7, 0}, {}, &err));
  EXPECT_NE(err.find("destination"), std::string::npos) << err;
}

SockError timeExceeded(const std::string& from, std::optional<ProbePacket> quoted) {
  SockError e;
  e.origin = SO_EE_ORIGIN_ICMP;
  e.icmp_type = 11;
  e.offender = from;
  e.quoted = quoted;
  return e;
}

ProbePacket decodeSent(const PathTrace::Send& s) {
  ProbePacket p;
  EXPECT_EQ(decodeProbe(s.bytes, p), DecodeError::kOk);
  return p;
}

TEST(PathTrace, WalksTtlsUpToTheDestination) {
  PathTrace t({}, 42, 40001, "10.0.9.1");
  auto s = t.poll(0, 1);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->ttl, 1);
  ProbePacket sent = decodeSent(*s);
  EXPECT_TRUE(sent.trace());
  EXPECT_EQ(sent.flow, 40001u);
  EXPECT_FALSE(t.poll(0.01, 1));  // one TTL in flight
  // An answer quoting another flow's probe is not ours.
  ProbePacket other = sent;
  other.flow = 7;
  t.onError(timeExceeded("10.0.0.9", other), 0.02);
  t.onError(timeExceeded("10.0.0.1", sent), 0.02);
  s = t.poll(0.02, 1);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->ttl, 2);
  t.onError(timeExceeded("10.0.1.1", std::nullopt), 0.03);  // short quote: by timing
  s = t.poll(0.03, 1);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->ttl, 3);
  ProbePacket reply = makeReply(decodeSent(*s), 0);
  t.onReply(reply, 0.04);
  ASSERT_TRUE(t.done());
  EXPECT_EQ(t.result().hops, (std::vector<std::string>{"10.0.0.1", "10.0.1.1", "10.0.9.1"}));
  EXPECT_TRUE(t.result().complete);
}

TEST(PathTrace, ASilentHopEndsAPartialPathAfterRetries) {
  PathfinderOptions o;
  o.hop_timeout_s = 1;
  o.retries = 1;
  PathTrace t(o, 1, 2, "10.0.9.1");
  auto s = t.poll(0, 1);
  ASSERT_TRUE(s);
  t.onError(timeExceeded("10.0.0.1", decodeSent(*s)), 0.1);
  s = t.poll(0.1, 1);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->ttl, 2);
  EXPECT_FALSE(t.poll(1.0, 1));
  s = t.poll(1.2, 1);  // timed out: the retry
  ASSERT_TRUE(s);
  EXPECT_EQ(s->ttl, 2);
  EXPECT_FALSE(t.poll(2.3, 1));  // second silence: give up
  ASSERT_TRUE(t.done());
  EXPECT_EQ(t.result().hops, std::vector<std::string>{"10.0.0.1"});
  EXPECT_FALSE(t.result().complete);
}

TEST(PathTrace, StopsAtMaxTtlAndOnUnreachableRouters) {
  PathfinderOptions o;
  o.max_ttl = 2;
  PathTrace t(o, 1, 2, "10.0.9.1");
  for (int ttl = 1; ttl <= 2; ++ttl) {
    auto s = t.poll(ttl, 1);
    ASSERT_TRUE(s);
    t.onError(timeExceeded("10.0.0." + std::to_string(ttl), decodeSent(*s)), ttl);
  }
  EXPECT_FALSE(t.poll(3, 1));
  ASSERT_TRUE(t.done());
  EXPECT_EQ(t.result().hops.size(), 2u);
  EXPECT_FALSE(t.result().complete);

  PathTrace u({}, 1, 2, "10.0.9.1");
  auto s = u.poll(0, 1);
  ASSERT_TRUE(s);
  SockError e = timeExceeded("10.0.0.1", decodeSent(*s));
  e.icmp_type = 3;  // net unreachable from a router
  e.icmp_code = 0;
  u.onError(e, 0.1);
  ASSERT_TRUE(u.done());
  EXPECT_EQ(u.result().hops, std::vector<std::string>{"10.0.0.1"});
  EXPECT_FALSE(u.result().complete);
}

}  // namespace
}  // namespace netdiag::collector
