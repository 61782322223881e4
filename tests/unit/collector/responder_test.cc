// The responder over real UDP sockets on 127.0.0.1.

#include "collector/responder.h"

#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector/probe_packet.h"

namespace netdiag::collector {
namespace {

// A UDP client connected to the responder on 127.0.0.1, sending from
// `from` (any address of 127/8 is local on Linux).
class Client {
 public:
  explicit Client(uint16_t port, const char* from = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    if (from != nullptr) {
      sockaddr_in src{};
      src.sin_family = AF_INET;
      inet_pton(AF_INET, from, &src.sin_addr);
      EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&src), sizeof src), 0) << from;
    }
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  }
  ~Client() { ::close(fd_); }
  void send(const std::vector<uint8_t>& b) { ASSERT_GE(::send(fd_, b.data(), b.size(), 0), 0); }
  void send(const ProbePacket& p) {
    const ProbeBytes b = encodeProbe(p);
    send(std::vector<uint8_t>(b.begin(), b.end()));
  }
  // The next datagram within `ms`, nullopt if none.
  std::optional<std::vector<uint8_t>> recv(int ms) {
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, ms) <= 0) return std::nullopt;
    std::vector<uint8_t> buf(2048);
    const ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
    if (n < 0) return std::nullopt;
    buf.resize(static_cast<size_t>(n));
    return buf;
  }
  std::vector<std::vector<uint8_t>> recvAll(int quiet_ms) {
    std::vector<std::vector<uint8_t>> all;
    while (auto r = recv(quiet_ms)) all.push_back(*r);
    return all;
  }

 private:
  int fd_ = -1;
};

ResponderOptions loopbackOptions() {
  ResponderOptions o;
  o.address = "127.0.0.1";
  o.port = 0;
  return o;
}

ProbePacket probe(uint64_t flow, uint32_t seq, uint32_t session = 1) {
  ProbePacket p;
  p.session = session;
  p.flow = flow;
  p.seq = seq;
  p.send_ns = 1000 + seq;
  return p;
}

std::unique_ptr<Responder> startOrDie(const ResponderOptions& o) {
  std::string err;
  auto r = Responder::start(o, &err);
  EXPECT_NE(r, nullptr) << err;
  return r;
}

TEST(Responder, AnswersProbesWithCountsPerFlowAndSession) {
  auto r = startOrDie(loopbackOptions());
  ASSERT_NE(r, nullptr);
  Client c(r->port());
  const std::vector<std::pair<uint64_t, uint32_t>> sends = {{1, 1}, {1, 1}, {2, 1},
                                                            {1, 1}, {1, 2}, {2, 1}};
  const std::vector<uint32_t> want = {1, 2, 1, 3, 1, 2};
  for (size_t i = 0; i < sends.size(); ++i) {
    c.send(probe(sends[i].first, static_cast<uint32_t>(i), sends[i].second));
    auto got = c.recv(2000);
    ASSERT_TRUE(got) << i;
    ASSERT_EQ(got->size(), kProbeSize);
    ProbePacket reply;
    ASSERT_EQ(decodeProbe(*got, reply), DecodeError::kOk);
    EXPECT_EQ(reply.type, ProbeType::kReply);
    EXPECT_EQ(reply.seq, i);
    EXPECT_EQ(reply.flow, sends[i].first);
    EXPECT_EQ(reply.send_ns, 1000 + i);
    EXPECT_EQ(reply.received, want[i]) << i;
  }
  // A trace probe is answered but not counted.
  ProbePacket t = probe(1, 99);
  t.flags = kProbeFlagTrace;
  c.send(t);
  auto got = c.recv(2000);
  ASSERT_TRUE(got);
  ProbePacket reply;
  ASSERT_EQ(decodeProbe(*got, reply), DecodeError::kOk);
  EXPECT_TRUE(reply.trace());
  EXPECT_EQ(reply.received, 0u);
  c.send(probe(1, 100));
  got = c.recv(2000);
  ASSERT_TRUE(got);
  ASSERT_EQ(decodeProbe(*got, reply), DecodeError::kOk);
  EXPECT_EQ(reply.received, 4u);
  EXPECT_EQ(r->stats().replied, 8u);
  EXPECT_EQ(r->stats().flows, 3u);
}

TEST(Responder, IgnoresAnythingButWellFormedProbes) {
  auto r = startOrDie(loopbackOptions());
  ASSERT_NE(r, nullptr);
  Client c(r->port());
  std::mt19937_64 rng(5);
  int sent = 0;
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> b(rng() % 100);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    c.send(b);
    ++sent;
  }
  // A reply is not a probe; a valid probe with a byte more is not a probe.
  ProbePacket reply = makeReply(probe(1, 1), 1);
  c.send(reply);
  const ProbeBytes ok = encodeProbe(probe(1, 2));
  std::vector<uint8_t> longer(ok.begin(), ok.end());
  longer.push_back(0);
  c.send(longer);
  std::vector<uint8_t> huge(1400, 0);
  std::copy(ok.begin(), ok.end(), huge.begin());
  c.send(huge);
  sent += 3;
  EXPECT_TRUE(c.recvAll(300).empty());
  // Still serving afterwards, and never more bytes than received.
  c.send(std::vector<uint8_t>(ok.begin(), ok.end()));
  auto got = c.recv(2000);
  ASSERT_TRUE(got);
  EXPECT_LE(got->size(), ok.size());
  const ResponderStats s = r->stats();
  EXPECT_EQ(s.malformed, static_cast<uint64_t>(sent));
  EXPECT_EQ(s.replied, 1u);
}

TEST(Responder, RateLimitsEachSource) {
  ResponderOptions o = loopbackOptions();
  o.rate_per_source = 50;
  o.burst_per_source = 10;
  auto r = startOrDie(o);
  ASSERT_NE(r, nullptr);
  Client c(r->port());
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < 400; ++i) c.send(probe(7, i));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const size_t replies = c.recvAll(300).size();
  EXPECT_GE(replies, 10u);
  EXPECT_LE(static_cast<double>(replies), 10 + 50 * (elapsed + 0.05) + 1);
  const ResponderStats s = r->stats();
  EXPECT_EQ(s.replied + s.rate_limited, 400u);
  EXPECT_GT(s.rate_limited, 300u);
  // Another source (127.0.0.2) has its own bucket... when the host routes it.
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.2", &src.sin_addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src), 0);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(r->port());
  inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  const ProbeBytes b = encodeProbe(probe(7, 1));
  ASSERT_GE(::sendto(fd, b.data(), b.size(), 0, reinterpret_cast<sockaddr*>(&dst), sizeof dst), 0);
  pollfd pfd{fd, POLLIN, 0};
  EXPECT_EQ(::poll(&pfd, 1, 2000), 1);
  ::close(fd);
}

TEST(Responder, FlowTableStaysBounded) {
  ResponderOptions o = loopbackOptions();
  o.max_flows = 4;
  auto r = startOrDie(o);
  ASSERT_NE(r, nullptr);
  Client c(r->port());
  for (uint64_t flow = 0; flow < 50; ++flow) c.send(probe(flow, 0));
  EXPECT_EQ(c.recvAll(300).size(), 50u);
  const ResponderStats s = r->stats();
  EXPECT_EQ(s.flows, 4u);
  EXPECT_EQ(s.flows_evicted, 46u);
  // The most recent flow kept its count; the first one was forgotten.
  c.send(probe(49, 1));
  c.send(probe(0, 1));
  auto all = c.recvAll(300);
  ASSERT_EQ(all.size(), 2u);
  ProbePacket a, b;
  ASSERT_EQ(decodeProbe(all[0], a), DecodeError::kOk);
  ASSERT_EQ(decodeProbe(all[1], b), DecodeError::kOk);
  EXPECT_EQ(a.received, 2u);
  EXPECT_EQ(b.received, 1u);
}

TEST(Responder, TestHooksDropOrMuteEveryNth) {
  ResponderOptions o = loopbackOptions();
  o.drop_every_nth = 4;
  auto r = startOrDie(o);
  ASSERT_NE(r, nullptr);
  Client c(r->port());
  for (uint32_t i = 0; i < 8; ++i) c.send(probe(1, i));
  auto all = c.recvAll(300);
  ASSERT_EQ(all.size(), 6u);  // the 4th and 8th never "arrived"
  ProbePacket last;
  ASSERT_EQ(decodeProbe(all.back(), last), DecodeError::kOk);
  EXPECT_EQ(last.received, 6u);

  ResponderOptions m = loopbackOptions();
  m.mute_every_nth = 4;
  auto r2 = startOrDie(m);
  ASSERT_NE(r2, nullptr);
  Client c2(r2->port());
  for (uint32_t i = 0; i < 8; ++i) c2.send(probe(1, i));
  all = c2.recvAll(300);
  ASSERT_EQ(all.size(), 6u);  // counted but not answered
  ASSERT_EQ(decodeProbe(all.back(), last), DecodeError::kOk);
  EXPECT_EQ(last.received, 7u);
  EXPECT_EQ(r2->stats().hook_muted, 2u);
}

// Sends `n` probes from `c` and returns how many were answered.
size_t answered(Client& c, uint32_t n, uint64_t flow = 1) {
  for (uint32_t i = 0; i < n; ++i) c.send(probe(flow, i));
  return c.recvAll(200).size();
}

TEST(Responder, AnswersOnlySourcesInItsListAndCountsTheRest) {
  auto r = startOrDie(loopbackOptions());
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->stats().everyone);
  const std::vector<std::string> bad = r->allowOnly({"127.0.0.2", "not-an-address"}, 60);
  EXPECT_EQ(bad, std::vector<std::string>{"not-an-address"});
  // A fresh responder has answered nobody: its first list holds at once.
  EXPECT_FALSE(r->stats().everyone);
  EXPECT_EQ(r->stats().allowed, 1u);
  Client stranger(r->port(), "127.0.0.1");
  Client peer(r->port(), "127.0.0.2");
  EXPECT_EQ(answered(stranger, 5), 0u);
  EXPECT_EQ(answered(peer, 3), 3u);
  const ResponderStats s = r->stats();
  EXPECT_EQ(s.not_in_plan, 5u);
  EXPECT_EQ(s.replied, 3u);
  EXPECT_EQ(s.received, 8u);
  EXPECT_EQ(s.flows, 1u);  // a refused probe makes no state
  // Malformed datagrams are malformed whoever sends them.
  stranger.send(std::vector<uint8_t>{1, 2, 3});
  EXPECT_TRUE(stranger.recvAll(200).empty());
  EXPECT_EQ(r->stats().malformed, 1u);
  EXPECT_EQ(r->stats().not_in_plan, 5u);
  // Back to everyone (a plan without a list).
  r->allowEveryone();
  EXPECT_EQ(answered(stranger, 2), 2u);
}

TEST(Responder, StartedWithAListNeverAnswersAnyoneElse) {
  ResponderOptions o = loopbackOptions();
  o.allow_only = std::vector<std::string>{"127.0.0.2", "not-an-address"};
  auto r = startOrDie(o);
  ASSERT_NE(r, nullptr);
  // In force before the first datagram: no window in which everyone is.
  EXPECT_FALSE(r->stats().everyone);
  EXPECT_EQ(r->stats().allowed, 1u);
  Client stranger(r->port(), "127.0.0.1");
  Client peer(r->port(), "127.0.0.2");
  EXPECT_EQ(answered(stranger, 3), 0u);
  EXPECT_EQ(answered(peer, 2), 2u);
  EXPECT_EQ(r->stats().not_in_plan, 3u);
}

TEST(Responder, KeepsTheReplacedListsSourcesForTheGracePeriodOnly) {
  auto r = startOrDie(loopbackOptions());
  ASSERT_NE(r, nullptr);
  r->allowOnly({"127.0.0.2", "127.0.0.3"}, 2);
  Client gone(r->port(), "127.0.0.2");  // in the old list, not in the new
  Client kept(r->port(), "127.0.0.3");  // in both
  Client added(r->port(), "127.0.0.4");
  Client stranger(r->port(), "127.0.0.5");
  EXPECT_EQ(answered(added, 2), 0u);
  // The re-plan: 127.0.0.2 keeps its replies for the grace period.
  const auto replanned = std::chrono::steady_clock::now();
  r->allowOnly({"127.0.0.3", "127.0.0.4"}, 2);
  EXPECT_EQ(r->stats().allowed, 3u);
  EXPECT_EQ(answered(gone, 3), 3u);
  EXPECT_EQ(answered(kept, 3), 3u);
  EXPECT_EQ(answered(added, 3), 3u);
  EXPECT_EQ(answered(stranger, 3), 0u);
  ASSERT_LT(std::chrono::steady_clock::now() - replanned, std::chrono::milliseconds(2000))
      << "the machine is too slow for this test's grace period";
  std::this_thread::sleep_until(replanned + std::chrono::milliseconds(2100));
  // After it, only the new list.
  EXPECT_EQ(r->stats().allowed, 2u);
  EXPECT_EQ(answered(gone, 3), 0u);
  EXPECT_EQ(answered(kept, 3), 3u);
  EXPECT_EQ(answered(added, 3), 3u);
  EXPECT_EQ(r->stats().not_in_plan, 2u + 3u + 3u);
}

TEST(Responder, AnsweredEveryoneThenAListKeepsEveryoneForTheGracePeriod) {
  auto r = startOrDie(loopbackOptions());
  ASSERT_NE(r, nullptr);
  r->allowEveryone();  // a plan without a list (an older analyzer)
  Client stranger(r->port(), "127.0.0.5");
  EXPECT_EQ(answered(stranger, 2), 2u);
  r->allowOnly({"127.0.0.2"}, 0.5);  // the analyzer upgraded
  EXPECT_TRUE(r->stats().everyone);
  EXPECT_EQ(answered(stranger, 2), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_FALSE(r->stats().everyone);
  EXPECT_EQ(answered(stranger, 2), 0u);
  EXPECT_EQ(r->stats().not_in_plan, 2u);
}

TEST(Responder, GlobalRateLimitHoldsAcrossManySources) {
  ResponderOptions o = loopbackOptions();
  o.rate_per_source = 1e6;  // no source is over its own rate
  o.burst_per_source = 1e6;
  o.global_rate = 200;
  o.global_burst = 20;
  auto r = startOrDie(o);
  ASSERT_NE(r, nullptr);
  std::vector<std::unique_ptr<Client>> sources;
  for (int i = 1; i <= 100; ++i) {
    const std::string addr = "127.0.1." + std::to_string(i);
    sources.push_back(std::make_unique<Client>(r->port(), addr.c_str()));
  }
  // Rounds of one probe per source, each read by the responder before the
  // next (so no socket buffer overflows).
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t round = 0; round < 10; ++round) {
    for (auto& c : sources) c->send(probe(1, round));
    while (r->stats().received < 100 * (round + 1) &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t replies = 0;
  for (auto& c : sources) replies += c->recvAll(5).size();
  const ResponderStats s = r->stats();
  EXPECT_EQ(s.received, 1000u);
  EXPECT_EQ(s.replied, replies);
  EXPECT_EQ(s.replied + s.global_rate_limited, 1000u);
  EXPECT_EQ(s.rate_limited, 0u);
  EXPECT_GE(replies, 20u);
  // The burst, then the rate, over the time the responder took to read them.
  EXPECT_LE(static_cast<double>(replies), 20 + 200 * elapsed + 1) << elapsed;
  // The limit is the plan's to change.
  r->setGlobalRate(1e6, 1e6);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(answered(*sources[0], 5, 2), 5u);
}

}  // namespace
}  // namespace netdiag::collector
