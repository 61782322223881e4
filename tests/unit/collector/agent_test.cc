// The whole agent with a fixed plan over a fake sysfs tree, its analyzer
// away (batches spool): its sources run on the scheduler and show up,
// per source and target, on its real /metrics endpoint.

#include "collector/agent.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector/probe_packet.h"
#include "tests/unit/collector/free_port.h"

namespace netdiag::collector {
namespace {

namespace fs = std::filesystem;

// GET /metrics over a plain socket; "" when it fails.
std::string scrape(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
    const std::string req = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
        out.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

// The value of the series whose line starts with `series` (name and labels).
std::optional<double> value(const std::string& text, const std::string& series) {
  size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
    ++at;
  }
  return std::nullopt;
}

TEST(Agent, RunsItsSourcesAndExportsTheirPollsPerTarget) {
  const fs::path dir = fs::temp_directory_path() / ("netdiag-agent-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path eth = dir / "sys/class/net/nd-a0";
  fs::create_directories(eth / "statistics");
  std::ofstream(eth / "operstate") << "up\n";
  std::ofstream(eth / "carrier_changes") << "1\n";
  for (const char* f :
       {"rx_packets", "tx_packets", "rx_errors", "rx_crc_errors", "rx_dropped", "tx_dropped"})
    std::ofstream(eth / "statistics" / f) << "5\n";
  // nd-b0 is in the plan, not in sysfs.
  std::ofstream(dir / "plan.json")
      << R"({"version": 7, "responder_port": )" << testing::freePort()
      << R"(, "window_s": 1, "monitored_ports": ["h1:nd-a0", "h1:nd-b0"]})";

  AgentConfig cfg;
  cfg.node = "h1";
  cfg.analyzer = "127.0.0.1:" + std::to_string(testing::freePort());  // nobody there
  cfg.metrics_address = "127.0.0.1:0";
  cfg.plan_file = (dir / "plan.json").string();
  cfg.sysfs_root = (dir / "sys").string();
  cfg.batch_interval = 0.1;
  cfg.counters_interval = 0.1;
  cfg.responder_address = "127.0.0.1";
  cfg.lldp = false;
  std::string error;
  auto agent = Agent::create(cfg, nullptr, &error);
  ASSERT_NE(agent, nullptr) << error;
  ASSERT_GT(agent->metricsPort(), 0);
  std::thread runner([&] { agent->run(); });

  const std::string ok = R"(netdiag_agent_source_polls_total{source="counters",target="nd-a0"})";
  const std::string bad =
      R"(netdiag_agent_source_poll_failures_total{source="counters",target="nd-b0"})";
  std::string text;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    text = scrape(agent->metricsPort());
    if (value(text, ok).value_or(0) >= 2 && value(text, bad).value_or(0) >= 2 &&
        value(text, "netdiag_agent_batches_total").value_or(0) >= 2)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  agent->requestStop();
  runner.join();
  std::error_code ec;
  fs::remove_all(dir, ec);

  EXPECT_GE(value(text, ok).value_or(0), 2) << text;
  EXPECT_EQ(
      value(text, R"(netdiag_agent_source_poll_failures_total{source="counters",target="nd-a0"})"),
      0);
  EXPECT_GE(value(text, bad).value_or(0), 2);
  EXPECT_EQ(
      value(
          text,
          R"(netdiag_agent_source_last_success_timestamp_seconds{source="counters",target="nd-b0"})"),
      0);
  EXPECT_GT(
      value(
          text,
          R"(netdiag_agent_source_last_success_timestamp_seconds{source="counters",target="nd-a0"})")
          .value_or(0),
      1e9);
  EXPECT_EQ(value(text, "netdiag_agent_plan_version"), 7);
  // A plan without probed_by_addrs: the responder answers everyone.
  EXPECT_EQ(value(text, "netdiag_agent_responder_open"), 1);
  EXPECT_EQ(value(text, "netdiag_agent_responder_global_rate_limit"), 20000);
  EXPECT_EQ(value(text, "netdiag_agent_flows"), 0);
  EXPECT_GE(value(text, "netdiag_agent_batches_total").value_or(0), 2);
  EXPECT_GE(value(text, "netdiag_agent_counter_read_errors_total").value_or(0),
            2);  // nd-b0, each read
}

// This test's responder address: its own loopback address, so that another
// test's responder, which binds 127.0.0.1 and may draw the same free port,
// can never be the one that answers.
constexpr const char* kResponderAddress = "127.0.59.1";

// Sends one probe from `from` to kResponderAddress:`port`; true if answered
// within 300 ms.
bool probeAnswered(const char* from, uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  inet_pton(AF_INET, from, &src.sin_addr);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(port);
  inet_pton(AF_INET, kResponderAddress, &dst.sin_addr);
  bool ok = false;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) == 0 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0) {
    ProbePacket p;
    p.session = 1;
    p.flow = 40000;
    p.seq = 1;
    p.send_ns = 1000;
    const ProbeBytes b = encodeProbe(p);
    pollfd pfd{fd, POLLIN, 0};
    uint8_t buf[256];
    ProbePacket reply;
    // An ICMP error (nobody listening yet) also wakes poll; only a reply counts.
    ok = ::send(fd, b.data(), b.size(), 0) == static_cast<ssize_t>(b.size()) &&
         ::poll(&pfd, 1, 300) == 1 && (pfd.revents & POLLIN) != 0;
    const ssize_t n = ok ? ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) : -1;
    ok = n > 0 && decodeProbe({buf, static_cast<size_t>(n)}, reply) == DecodeError::kOk &&
         reply.type == ProbeType::kReply;
  }
  ::close(fd);
  return ok;
}

TEST(Agent, ResponderAnswersThePlansSourcesAndThePreviousOnesForTheGracePeriod) {
  const fs::path dir =
      fs::temp_directory_path() / ("netdiag-agent-resp-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const uint16_t port = testing::freePort();
  auto writePlan = [&](uint64_t version, const std::string& addrs) {
    std::ofstream(dir / "plan.json.tmp")
        << R"({"version": )" << version << R"(, "responder_port": )" << port
        << R"(, "window_s": 1, "inbound_probes_per_second": 6000, "probed_by_known": true,)"
        << R"( "probed_by_addrs": [)" << addrs << "]}";
    fs::rename(dir / "plan.json.tmp", dir / "plan.json");
  };
  writePlan(1, R"("127.0.0.2")");
  AgentConfig cfg;
  cfg.node = "h1";
  cfg.analyzer = "127.0.0.1:" + std::to_string(testing::freePort());  // nobody there
  cfg.metrics_address = "127.0.0.1:0";
  cfg.plan_file = (dir / "plan.json").string();
  cfg.plan_refresh = 0.5;  // grace: 2 x 0.5 s
  cfg.sysfs_root = (dir / "sys").string();
  cfg.batch_interval = 0.1;
  cfg.responder_address = kResponderAddress;
  cfg.lldp = false;
  std::string error;
  std::vector<std::string> logs;
  std::mutex logs_mu;
  auto agent = Agent::create(
      cfg,
      [&](const std::string& l) {
        std::lock_guard lock(logs_mu);
        logs.push_back(l);
      },
      &error);
  ASSERT_NE(agent, nullptr) << error;
  std::thread runner([&] { agent->run(); });
  auto waitFor = [&](const char* from) {
    const auto t0 = std::chrono::steady_clock::now();
    while (!probeAnswered(from, port) &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  auto logged = [&] {
    std::lock_guard lock(logs_mu);
    return ::testing::PrintToString(logs);
  };
  waitFor("127.0.0.2");
  EXPECT_TRUE(probeAnswered("127.0.0.2", port)) << logged();
  EXPECT_FALSE(probeAnswered("127.0.0.3", port)) << logged();
  // The re-plan: 127.0.0.3 in, 127.0.0.2 out but within its grace.
  writePlan(2, R"("127.0.0.3")");
  waitFor("127.0.0.3");
  const auto applied = std::chrono::steady_clock::now();
  const bool within_grace = probeAnswered("127.0.0.2", port);
  if (std::chrono::steady_clock::now() - applied < std::chrono::milliseconds(900)) {
    EXPECT_TRUE(within_grace);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  EXPECT_FALSE(probeAnswered("127.0.0.2", port));
  EXPECT_TRUE(probeAnswered("127.0.0.3", port));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a batch: metrics updated
  const std::string text = scrape(agent->metricsPort());
  agent->requestStop();
  runner.join();
  std::error_code ec;
  fs::remove_all(dir, ec);

  // 127.0.0.3 before the re-plan, 127.0.0.2 after the grace, and the
  // waits' refused tries.
  EXPECT_GE(
      value(text, R"(netdiag_agent_responder_dropped_total{reason="not_in_plan"})").value_or(0), 2)
      << text;
  EXPECT_EQ(value(text, R"(netdiag_agent_responder_dropped_total{reason="global_rate_limited"})"),
            0);
  EXPECT_EQ(value(text, "netdiag_agent_responder_open"), 0);
  EXPECT_EQ(value(text, "netdiag_agent_responder_allowed_sources"), 1);
  // max(20000, 4 x 6000 inbound probes/s).
  EXPECT_EQ(value(text, "netdiag_agent_responder_global_rate_limit"), 24000);
  std::lock_guard lock(logs_mu);
  bool said = false;
  for (const std::string& l : logs) said |= l.find("responder answers 1 source address") == 0;
  EXPECT_TRUE(said) << ::testing::PrintToString(logs);
}

}  // namespace
}  // namespace netdiag::collector
