// Prober and responder over real sockets on loopback: probes lost on purpose
// by the responder's hooks (a real code path) must come out as the right
// sent/lost counts and the right one-way split.

#include "collector/prober.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector/responder.h"
#include "tests/unit/collector/free_port.h"

namespace netdiag::collector {
namespace {

using testing::freePort;

v1::ProbeFlow flowTo(const std::string& dst_addr, uint16_t sport) {
  v1::ProbeFlow f;
  f.set_src("a:eth0");
  f.set_src_addr("127.0.0.1");
  f.set_dst("b:eth0");
  f.set_dst_addr(dst_addr);
  f.set_source_port(sport);
  return f;
}

struct Totals {
  uint64_t sent = 0, lost = 0, fwd = 0, rev = 0, unsplit = 0;
};

// Runs until every flow sent max_probes and every window closed.
std::vector<v1::Probe> runToEnd(Prober& p, uint64_t total, double limit_s) {
  std::vector<v1::Probe> out;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < limit_s) {
    for (auto& r : p.drain()) out.push_back(std::move(r));
    const ProberStats s = p.stats();
    if (s.sent == total && s.answered + s.lost == total) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& r : p.drain()) out.push_back(std::move(r));
  return out;
}

Totals sum(const std::vector<v1::Probe>& records, double window_s) {
  Totals t;
  for (const v1::Probe& r : records) {
    t.sent += r.sent();
    t.lost += r.lost();
    EXPECT_LE(r.lost(), r.sent());
    EXPECT_DOUBLE_EQ(r.window_s(), window_s);
    // Windows end on multiples of window_s of the wall clock.
    const double k = r.t() / window_s;
    EXPECT_NEAR(k, std::round(k), 1e-6);
    EXPECT_EQ(r.has_lost_fwd(), r.has_lost_rev());
    if (r.has_lost_fwd()) {
      EXPECT_EQ(r.lost_fwd() + r.lost_rev(), r.lost());
      t.fwd += r.lost_fwd();
      t.rev += r.lost_rev();
    } else {
      t.unsplit += r.lost();
    }
    if (r.lost() < r.sent()) {
      EXPECT_TRUE(r.has_rtt_us_p50());
      EXPECT_GT(r.rtt_us_p50(), 0);
      EXPECT_LT(r.rtt_us_p50(), 1e6);
      EXPECT_GE(r.rtt_us_p99(), r.rtt_us_p50());
    } else {
      EXPECT_FALSE(r.has_rtt_us_p50());
    }
  }
  return t;
}

TEST(Prober, CountsLossesOneWayExactlyOnOneFlow) {
  ResponderOptions ro;
  ro.address = "127.0.0.1";
  ro.port = 0;
  ro.drop_every_nth = 5;  // probes 5, 10, ... never "arrive": lost on the way out
  ro.mute_every_nth = 7;  // probes 7, 14, ... counted, not answered: lost on the way back
  std::string err;
  auto responder = Responder::start(ro, &err);
  ASSERT_NE(responder, nullptr) << err;

  ProberOptions po;
  po.window_s = 0.4;
  po.probes_per_second = 50;
  po.responder_port = responder->port();
  po.timeout_s = 2;  // generous: a busy machine must not turn late replies into losses
  po.discover_paths = false;
  po.max_probes = 62;  // the last one is answered, so every gap is bracketed
  std::vector<std::string> errors;
  auto prober = Prober::start(po, {flowTo("127.0.0.1", freePort())}, {}, &errors);
  ASSERT_NE(prober, nullptr);
  ASSERT_TRUE(errors.empty()) << errors[0];
  const auto records = runToEnd(*prober, 62, 15);
  const Totals t = sum(records, po.window_s);
  EXPECT_EQ(t.sent, 62u);
  // 1..62: multiples of 5 dropped (12); multiples of 7 but not 5 muted (7).
  EXPECT_EQ(t.lost, 19u);
  EXPECT_EQ(t.unsplit, 0u);
  EXPECT_EQ(t.fwd, 12u);
  EXPECT_EQ(t.rev, 7u);
  EXPECT_EQ(responder->stats().hook_dropped, 12u);
  EXPECT_EQ(responder->stats().hook_muted, 7u);
  const ProberStats s = prober->stats();
  EXPECT_EQ(s.lost, 19u);
  EXPECT_EQ(s.send_errors, 0u);
  EXPECT_EQ(s.malformed, 0u);
  for (const v1::Probe& r : records) {
    EXPECT_EQ(r.src(), "a:eth0");
    EXPECT_EQ(r.dst(), "b:eth0");
  }
}

TEST(Prober, ManyFlowsToSeveralLoopbackPeersWithPaths) {
  ResponderOptions ro;
  ro.address = "0.0.0.0";
  ro.port = 0;
  ro.drop_every_nth = 6;
  std::string err;
  auto responder = Responder::start(ro, &err);
  ASSERT_NE(responder, nullptr) << err;

  ProberOptions po;
  po.window_s = 0.5;
  po.probes_per_second = 20;
  po.responder_port = responder->port();
  po.timeout_s = 2;  // generous: a busy machine must not turn late replies into losses
  po.max_probes = 30;
  po.path.hop_timeout_s = 2;
  std::vector<v1::ProbeFlow> flows;
  for (int peer = 1; peer <= 4; ++peer) {
    for (int k = 0; k < 2; ++k)
      flows.push_back(flowTo("127.0.0." + std::to_string(peer), freePort()));
  }
  std::vector<std::string> errors;
  auto prober = Prober::start(po, flows, {}, &errors);
  ASSERT_NE(prober, nullptr);
  ASSERT_TRUE(errors.empty()) << errors[0];
  const auto records = runToEnd(*prober, 8 * 30, 20);
  const Totals t = sum(records, po.window_s);
  EXPECT_EQ(t.sent, 240u);
  // Trace probes are not counted by the responder, so the hook saw exactly
  // the 240 probes and dropped every sixth.
  EXPECT_EQ(responder->stats().hook_dropped, 40u);
  EXPECT_EQ(t.lost, 40u);
  EXPECT_EQ(t.rev, 0u);  // nothing lost on the way back
  EXPECT_EQ(t.fwd + t.unsplit, 40u);
  // On loopback the destination answers at TTL 1: a complete one-hop path.
  const auto paths = prober->paths();
  EXPECT_EQ(paths.size(), 8u);
  for (const auto& [key, p] : paths) {
    ASSERT_EQ(p.path.hops.size(), 1u) << key;
    EXPECT_TRUE(p.path.complete) << key;
  }
  bool saw_path = false;
  for (const v1::Probe& r : records) {
    if (r.path_addrs_size() == 0) continue;
    saw_path = true;
    ASSERT_EQ(r.path_addrs_size(), 1);
    for (const v1::ProbeFlow& f : flows) {
      if (f.source_port() == r.flow()) {
        EXPECT_EQ(r.path_addrs(0), f.dst_addr());
      }
    }
    EXPECT_FALSE(r.path_partial());
  }
  EXPECT_TRUE(saw_path);
}

TEST(Prober, UnansweredFlowLosesEverythingWithoutASplit) {
  // Nobody listens on this port: every probe is lost and nothing tells
  // which way.
  ProberOptions po;
  po.window_s = 0.3;
  po.probes_per_second = 20;
  po.responder_port = freePort();
  po.timeout_s = 0.2;
  po.max_probes = 10;
  po.discover_paths = false;
  std::vector<std::string> errors;
  auto prober = Prober::start(po, {flowTo("127.0.0.1", freePort())}, {}, &errors);
  ASSERT_NE(prober, nullptr);
  const auto records = runToEnd(*prober, 10, 10);
  const Totals t = sum(records, po.window_s);
  EXPECT_EQ(t.sent, 10u);
  EXPECT_EQ(t.lost, 10u);
  EXPECT_EQ(t.unsplit, 10u);
  EXPECT_GT(prober->stats().icmp_errors, 0u);  // port unreachable, read off the error queue
}

TEST(Prober, HeldFlowsStartProbingOnlyAfterTheHold) {
  ResponderOptions ro;
  ro.address = "127.0.0.1";
  ro.port = 0;
  std::string err;
  auto responder = Responder::start(ro, &err);
  ASSERT_NE(responder, nullptr) << err;
  ProberOptions po;
  po.window_s = 0.3;
  po.probes_per_second = 20;
  po.responder_port = responder->port();
  po.timeout_s = 1;
  po.max_probes = 10;
  po.path.hop_timeout_s = 1;
  const v1::ProbeFlow now = flowTo("127.0.0.1", freePort());
  const v1::ProbeFlow later = flowTo("127.0.0.1", freePort());
  po.held = {flowKey(later)};
  po.hold_s = 1.5;
  std::vector<std::string> errors;
  const auto t0 = std::chrono::steady_clock::now();
  auto prober = Prober::start(po, {now, later}, {}, &errors);
  ASSERT_NE(prober, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  // The held flow's probes have not reached the responder yet.
  if (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1400)) {
    EXPECT_EQ(responder->stats().flows, 1u);
  }
  const auto records = runToEnd(*prober, 20, 15);
  const Totals t = sum(records, po.window_s);
  EXPECT_EQ(t.sent, 20u);
  EXPECT_EQ(t.lost, 0u);
  EXPECT_EQ(responder->stats().flows, 2u);
}

// The real monotonic clock under a wall clock the test steps, as NTP or an
// operator would.
class SteppedWallClock final : public Clock {
 public:
  uint64_t wallNs() const override {
    return systemClock().wallNs() + static_cast<uint64_t>(step_ns.load());
  }
  int64_t monoNs() const override { return systemClock().monoNs(); }
  std::atomic<int64_t> step_ns{0};
};

TEST(Prober, RttsDoNotFollowAWallClockStep) {
  ResponderOptions ro;
  ro.address = "127.0.0.1";
  ro.port = 0;
  std::string err;
  auto responder = Responder::start(ro, &err);
  ASSERT_NE(responder, nullptr) << err;

  SteppedWallClock clock;
  ProberOptions po;
  po.window_s = 0.4;
  po.probes_per_second = 50;
  po.responder_port = responder->port();
  po.timeout_s = 2;
  po.discover_paths = false;
  po.max_probes = 40;
  po.clock = &clock;
  std::vector<std::string> errors;
  auto prober = Prober::start(po, {flowTo("127.0.0.1", freePort())}, {}, &errors);
  ASSERT_NE(prober, nullptr);
  ASSERT_TRUE(errors.empty()) << errors[0];
  const auto t0 = std::chrono::steady_clock::now();
  while (prober->stats().sent < 10 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_GE(prober->stats().sent, 10u);
  const double stepped_at = systemClock().wallSeconds();
  clock.step_ns = 1000'000'000'000;  // 1000 s ahead
  const auto records = runToEnd(*prober, 40, 15);
  // sum() checks every RTT p50 lies in (0, 1 s): a difference of wall
  // readings would be about -1000 s here (clamped to 0).
  const Totals t = sum(records, po.window_s);
  EXPECT_EQ(t.sent, 40u);
  // Windows close by the wall clock, so the probe in flight at the step may
  // count as lost; no other.
  EXPECT_LE(t.lost, 1u);
  // Records stay stamped on the wall clock, step included.
  double newest = 0;
  for (const v1::Probe& r : records) newest = std::max(newest, r.t());
  EXPECT_GT(newest, stepped_at + 900);
}

TEST(Prober, ReportsFlowsItCannotOpen) {
  ProberOptions po;
  std::vector<std::string> errors;
  v1::ProbeFlow bad = flowTo("127.0.0.1", 40000);
  bad.set_src_addr("192.0.2.1");  // not ours: bind fails
  v1::ProbeFlow worse = flowTo("not-an-address", 40001);
  auto prober = Prober::start(po, {bad, worse}, {}, &errors);
  ASSERT_NE(prober, nullptr);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("192.0.2.1:40000"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("destination"), std::string::npos) << errors[1];
  EXPECT_EQ(prober->stats().flows, 0u);
}

}  // namespace
}  // namespace netdiag::collector
