// A flow the prober cannot watch for replies must be skipped, said and
// counted, not probed into 100 % loss. The failure is real epoll_ctl(2)
// failing: this binary interposes epoll_ctl (its own definition wins over
// libc's) and fails the ADD of one chosen flow socket.

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "collector/prober.h"
#include "collector/responder.h"
#include "tests/unit/collector/free_port.h"

namespace {
// The local UDP port whose socket may not join an epoll set (0: none).
std::atomic<uint16_t> g_refused_port{0};
}  // namespace

extern "C" int epoll_ctl(int epfd, int op, int fd, epoll_event* event) {
  using Fn = int (*)(int, int, int, epoll_event*);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "epoll_ctl"));
  const uint16_t refused = g_refused_port.load();
  if (op == EPOLL_CTL_ADD && refused != 0) {
    sockaddr_in sa{};
    socklen_t len = sizeof sa;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0 && sa.sin_family == AF_INET &&
        ntohs(sa.sin_port) == refused) {
      errno = ENOSPC;  // what a full fs.epoll.max_user_watches gives
      return -1;
    }
  }
  return real(epfd, op, fd, event);
}

namespace netdiag::collector {
namespace {

using testing::freePort;

v1::ProbeFlow flowFrom(uint16_t sport) {
  v1::ProbeFlow f;
  f.set_src("a:eth0");
  f.set_src_addr("127.0.0.1");
  f.set_dst("b:eth0");
  f.set_dst_addr("127.0.0.1");
  f.set_source_port(sport);
  return f;
}

TEST(ProberSetup, AFlowItCannotWatchIsAnErrorNotALoss) {
  ResponderOptions ro;
  ro.address = "127.0.0.1";
  ro.port = 0;
  std::string err;
  auto responder = Responder::start(ro, &err);
  ASSERT_NE(responder, nullptr) << err;

  ProberOptions po;
  po.window_s = 0.3;
  po.probes_per_second = 50;
  po.responder_port = responder->port();
  po.timeout_s = 2;
  po.discover_paths = false;
  po.max_probes = 15;
  const v1::ProbeFlow good = flowFrom(freePort());
  const v1::ProbeFlow bad = flowFrom(freePort());
  ASSERT_NE(good.source_port(), bad.source_port());
  std::vector<std::string> errors;
  g_refused_port = static_cast<uint16_t>(bad.source_port());
  auto prober = Prober::start(po, {good, bad}, {}, &errors);
  g_refused_port = 0;
  ASSERT_NE(prober, nullptr);

  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find(flowKey(bad)), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("epoll_ctl"), std::string::npos) << errors[0];
  EXPECT_EQ(prober->stats().flows, 1u);
  EXPECT_EQ(prober->stats().setup_errors, 1u);
  const auto health = prober->health();
  ASSERT_EQ(health.count("a:eth0"), 1u);
  EXPECT_EQ(health.at("a:eth0").flows, 1u);
  EXPECT_EQ(health.at("a:eth0").failed_flows, 1u);

  // The flow that did open probes as usual, and nothing reads as lost.
  std::vector<v1::Probe> records;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15)) {
    for (auto& r : prober->drain()) records.push_back(std::move(r));
    const ProberStats s = prober->stats();
    if (s.sent == 15 && s.answered + s.lost == 15) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& r : prober->drain()) records.push_back(std::move(r));
  uint64_t sent = 0, lost = 0;
  for (const v1::Probe& r : records) {
    EXPECT_EQ(r.flow(), good.source_port());
    sent += r.sent();
    lost += r.lost();
  }
  EXPECT_EQ(sent, 15u);
  EXPECT_EQ(lost, 0u);
}

}  // namespace
}  // namespace netdiag::collector
