// Hostile but ordinary clients against a real `netdiag analyzer` process on
// loopback (issue #15, "What was found"). After every attack the analyzer
// must still answer, the real agent must still be heard, nothing may be
// paged, and its memory must stay within the bound.

#include <chrono>
#include <cmath>
#include <fstream>
#include <regex>
#include <thread>

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/probe_packet.h"
#include "netdiag/v1/collector.grpc.pb.h"
#include "tests/cli/cli_harness.h"

namespace netdiag::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

double wallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A fabric of 2 spines, 2 leaves and 4 hosts (host1..host4, eth0 each).
class HostileClients : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_EQ(run("topo generate leaf-spine --spines 2 --leaves 2 --hosts-per-leaf 2 -o " +
                  path("fabric.yaml"))
                  .code,
              0);
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string cmd = "exec " + std::string(NETDIAG_BIN) + " analyzer --topology " +
                              path("fabric.yaml") + " --db " + path("netdiag.db") +
                              " --listen 127.0.0.1:0 --web.listen-address 127.0.0.1:0 2>" +
                              path("analyzer.err");
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::regex re(R"(grpc=127\.0\.0\.1:(\d+).* http=http://127\.0\.0\.1:(\d+))");
    for (int i = 0; i < 600 && grpc_ == 0; ++i) {
      std::smatch m;
      const std::string err = slurp(path("analyzer.err"));
      if (std::regex_search(err, m, re)) {
        grpc_ = std::stoi(m[1]);
        http_ = std::stoi(m[2]);
      }
      std::this_thread::sleep_for(50ms);
    }
    ASSERT_GT(grpc_, 0) << slurp(path("analyzer.err"));
    stub_ = v1::Collector::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_),
                                                       grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "the analyzer did not exit cleanly: " << slurp(path("analyzer.err"));
    }
    CliTest::TearDown();
  }

  // Alive: the process runs and answers /healthz.
  bool alive() {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    httplib::Client c("127.0.0.1", http_);
    c.set_read_timeout(10, 0);
    auto r = c.Get("/healthz");
    return r && r->status == 200;
  }
  double metric(const std::string& series) {
    httplib::Client c("127.0.0.1", http_);
    auto r = c.Get("/metrics");
    if (!r) return -1;
    const std::string needle = "\n" + series + " ";
    const size_t at = r->body.find(needle);
    return at == std::string::npos ? 0 : std::stod(r->body.substr(at + needle.size()));
  }
  // The analyzer's metrics follow its passes: wait (bounded) until the
  // series reaches `at_least`; its last value either way.
  double waitMetric(const std::string& series, double at_least) {
    double v = metric(series);
    for (int i = 0; i < 300 && v < at_least; ++i) {
      std::this_thread::sleep_for(100ms);
      v = metric(series);
    }
    return v;
  }
  json incidents() {
    httplib::Client c("127.0.0.1", http_);
    auto r = c.Get("/api/v1/incidents");
    return r ? json::parse(r->body, nullptr, false) : json();
  }
  size_t rssBytes() {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
    return 0;
  }

  struct Stream {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<v1::Batch, v1::Ack>> rw;
    explicit Stream(v1::Collector::Stub& stub) : rw(stub.Stream(&ctx)) {}
    std::optional<v1::Ack> send(const v1::Batch& b) {
      if (!rw->Write(b)) return std::nullopt;
      v1::Ack a;
      if (!rw->Read(&a)) return std::nullopt;
      return a;
    }
    grpc::Status finish() {
      rw->WritesDone();
      return rw->Finish();
    }
  };
  // One probe record from host1 to host3, stamped t.
  static v1::Batch probes(const std::string& agent, uint64_t epoch, uint64_t seq, double t,
                          uint32_t lost = 0) {
    v1::Batch b;
    b.set_agent(agent);
    b.set_epoch(epoch);
    b.set_seq(seq);
    v1::Probe* p = b.add_probes();
    p->set_t(t);
    p->set_src("host1:eth0");
    p->set_dst("host3:eth0");
    p->set_flow(40000);
    p->set_window_s(5);
    p->set_sent(100);
    p->set_lost(lost);
    p->add_path("leaf1:swp1");
    return b;
  }

  pid_t pid_ = -1;
  int grpc_ = 0, http_ = 0;
  std::unique_ptr<v1::Collector::Stub> stub_;
};

// Finding 1: one unauthenticated request must not abort the analyzer.
TEST_F(HostileClients, MalformedHttpRequestsAreAnsweredNotFatal) {
  httplib::Client c("127.0.0.1", http_);
  c.set_read_timeout(10, 0);
  for (const char* target :
       {"/x%FF", "/%C0%AF", "/api/v1/incidents?since=nan", "/api/v1/incidents?since=1e309",
        "/api/v1/links/%FF%FE", "/api/v1/explain/%00"}) {
    auto r = c.Get(target);
    ASSERT_TRUE(r) << target;
    EXPECT_GE(r->status, 400) << target;
    EXPECT_LT(r->status, 500) << target;
    ASSERT_TRUE(alive()) << target;
  }
  auto post = c.Post("/%C0%AF", std::string(100000, 'x'), "application/json");
  ASSERT_TRUE(post);
  EXPECT_GE(post->status, 400);
  auto huge = c.Get(("/" + std::string(200000, 'a')).c_str());  // a 200 KB request line
  ASSERT_TRUE(alive());
  (void)huge;
}

// Raw bytes that are not HTTP/2 on the gRPC port, and not HTTP on the web one.
TEST_F(HostileClients, GarbageOnEitherPortIsDropped) {
  for (int port : {grpc_, http_}) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    std::string junk(65536, '\0');
    for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>(i * 131 + 7);
    (void)::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    ::close(fd);
  }
  ASSERT_TRUE(alive());
}

// Finding 5: a stream that is not a node cannot page a healthy link, and a
// stream cannot change who it is.
TEST_F(HostileClients, NoOneButTheNodeSpeaksForItsPorts) {
  const double now = wallNow();
  {
    Stream s(*stub_);
    for (uint64_t i = 0; i < 60; ++i) {
      auto ack = s.send(probes("sim-0", 1, i + 1, now - 120 + 2 * static_cast<double>(i), 5));
      ASSERT_TRUE(ack);  // acknowledged, so it leaves the sender's spool...
    }
    EXPECT_TRUE(s.finish().ok());
  }
  EXPECT_EQ(waitMetric("netdiag_ingest_not_authorized_records_total", 60), 60);  // ...not ingested
  {
    Stream s(*stub_);
    ASSERT_TRUE(s.send(probes("host1", 7, 1, now)));
    EXPECT_FALSE(s.send(probes("host2", 7, 1, now)));  // the same stream, another name
    EXPECT_EQ(s.finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  ASSERT_TRUE(alive());
  EXPECT_TRUE(incidents()["incidents"].empty()) << incidents().dump(1);
}

// Finding 3: forged higher epochs in a node's name must not make its real
// batches read as duplicates (and be deleted from its spool unheard).
TEST_F(HostileClients, ForgedEpochsCannotSilenceAnAgent) {
  const double now = wallNow();
  for (uint64_t e = 1u << 30; e < (1u << 30) + 64; ++e) {
    Stream s(*stub_);
    ASSERT_TRUE(s.send(probes("host1", e, 1, now)));
    s.finish();
  }
  Stream real(*stub_);
  for (uint64_t seq = 1; seq <= 5; ++seq) {
    auto ack = real.send(probes("host1", 12345, seq, now));
    ASSERT_TRUE(ack);
    EXPECT_FALSE(ack->duplicate())
        << "the real agent's batch " << seq << " was dropped as a duplicate";
  }
  EXPECT_TRUE(real.finish().ok());
  ASSERT_TRUE(alive());
}

// Finding 4 and item 8: times from the future, and times no clock has.
TEST_F(HostileClients, FutureAndExtremeTimesAreRejectedWithoutMovingTheClock) {
  const double now = wallNow();
  {
    Stream s(*stub_);
    uint64_t seq = 0;
    for (double t : {now + 3500, now + 1e9, 1e300, -1e300, 4e18, -4e18}) {
      v1::Batch b = probes("host1", 99, ++seq, t);
      v1::PortCounters* p = b.add_ports();
      p->set_t(t);
      p->set_port("host1:eth0");
      p->set_rx_packets(1);
      ASSERT_TRUE(s.send(b)) << t;
    }
    // A record stamped now, after them, is not too late: the clock did not move.
    ASSERT_TRUE(s.send(probes("host1", 99, ++seq, now)));
    EXPECT_TRUE(s.finish().ok());
  }
  ASSERT_TRUE(alive());
  // The four far-future times, a probe and a port record each, are rejected;
  // the two ancient ones are too late (counted, as §2 says); the record
  // stamped now is neither.
  EXPECT_EQ(waitMetric("netdiag_ingest_future_records_total", 8), 8);
  EXPECT_EQ(waitMetric("netdiag_ingest_too_late_records_total", 4), 4);
  EXPECT_GE(waitMetric("netdiag_ingest_records_total{kind=\"probe\"}", 1), 1);
}

// Messages far over any batch's size, and many streams at once.
TEST_F(HostileClients, OversizedMessagesAndManyStreamsAreBounded) {
  {
    Stream s(*stub_);
    v1::Batch b = probes("host1", 5, 1, wallNow());
    b.mutable_probes(0)->set_src(std::string(64 << 20, 'x'));  // a 64 MiB field
    EXPECT_FALSE(s.send(b));
    s.finish();
  }
  std::vector<std::unique_ptr<Stream>> open;
  for (int i = 0; i < 200; ++i) open.push_back(std::make_unique<Stream>(*stub_));
  ASSERT_TRUE(alive());  // HTTP still answers with 200 streams held open
  for (auto& s : open) s->ctx.TryCancel();
  open.clear();
  ASSERT_TRUE(alive());
  EXPECT_LT(rssBytes(), size_t{1} << 30) << "the analyzer's memory after the attacks";
}

// Finding 7: slow clients cannot starve the health and metrics endpoints,
// and a multi-range header cannot multiply a body.
TEST_F(HostileClients, SlowClientsAndRangeHeadersCannotStarveOrAmplify) {
  std::vector<int> stalled;
  for (int i = 0; i < 64; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(http_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      const std::string part = "GET /readyz HTTP/1.1\r\nHost: x\r\n";  // and never the end
      (void)::send(fd, part.data(), part.size(), MSG_NOSIGNAL);
    }
    stalled.push_back(fd);
  }
  {
    httplib::Client c("127.0.0.1", http_);
    c.set_read_timeout(10, 0);
    auto r = c.Get("/readyz");
    ASSERT_TRUE(r) << "/readyz starved by 64 stalled connections";
    EXPECT_LT(r->status, 500);
  }
  for (int fd : stalled) ::close(fd);
  httplib::Client c("127.0.0.1", http_);
  auto plain = c.Get("/metrics");
  ASSERT_TRUE(plain);
  std::string ranges = "bytes=0-";
  while (ranges.size() < 7900) ranges += ",0-";
  auto ranged = c.Get("/metrics", httplib::Headers{{"Range", ranges}});
  ASSERT_TRUE(ranged);
  EXPECT_LT(ranged->body.size(), 2 * plain->body.size() + 4096)
      << "a Range header multiplied /metrics";
  ASSERT_TRUE(alive());
}

// Finding 2: -o never replaces anything but a regular file, nor follows a
// planted symlink.
TEST_F(HostileClients, OutputFilesAreWrittenSafely) {
  ::symlink("/etc/hostname", path("link").c_str());
  auto r =
      run("topo generate leaf-spine --spines 2 --leaves 2 --hosts-per-leaf 2 -o " + path("link"));
  EXPECT_NE(r.code, 0);
  struct stat st {};
  ASSERT_EQ(::lstat(path("link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the symlink was replaced";
  r = run("topo generate leaf-spine --spines 2 --leaves 2 --hosts-per-leaf 2 -o /dev/null");
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null was replaced";
}

// Finding 9: the responder is no reflector for strangers. A real agent whose
// plan says only 127.0.0.2 probes it answers none of a flood from other
// sources, counts every refusal, and still answers 127.0.0.2.
TEST_F(HostileClients, TheResponderAnswersOnlyThePlansProbers) {
  const int responder_port = 20000 + static_cast<int>(::getpid() % 20000);
  std::ofstream(path("plan.json"))
      << R"({"version": 1, "window_s": 1, "responder_port": )" << responder_port
      << R"(, "probed_by_known": true, "probed_by_addrs": ["127.0.0.2"]})";
  pid_t agent = ::fork();
  if (agent == 0) {
    const std::string cmd = "exec " + std::string(NETDIAG_BIN) +
                            " agent --node host1 --analyzer 127.0.0.1:1 --plan-file " +
                            path("plan.json") +
                            " --responder-address 127.0.0.1 --metrics-address 127.0.0.1:0"
                            " --lldp false --sysfs-root " +
                            path("nosys") + " 2>" + path("agent.err");
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  auto socketFrom = [&](const char* from) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    ::inet_pton(AF_INET, from, &src.sin_addr);
    ::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
    return fd;
  };
  auto send = [&](int fd, uint32_t seq) {
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(static_cast<uint16_t>(responder_port));
    ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    collector::ProbePacket p;
    p.session = 7;
    p.seq = seq;
    p.flow = 40000;
    p.send_ns = 1;
    const auto bytes = collector::encodeProbe(p);
    ::sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&dst), sizeof dst);
  };
  // Replies waiting on fd within `ms`.
  auto replies = [&](int fd, int ms) {
    int n = 0;
    char buf[256];
    pollfd pf{fd, POLLIN, 0};
    while (::poll(&pf, 1, ms) == 1 && ::recv(fd, buf, sizeof buf, 0) > 0) ++n;
    return n;
  };
  // One probe from `from`; whether a reply came within 200 ms.
  auto probe = [&](const char* from, uint32_t seq) {
    const int fd = socketFrom(from);
    send(fd, seq);
    const bool replied = replies(fd, 200) > 0;
    ::close(fd);
    return replied;
  };
  bool up = false;
  for (int i = 0; i < 100 && !up; ++i) up = probe("127.0.0.2", static_cast<uint32_t>(i));
  ASSERT_TRUE(up) << "the agent's responder never answered its planned prober\n"
                  << slurp(path("agent.err"));
  const int a = socketFrom("127.0.0.1"), b = socketFrom("127.0.0.3");
  for (uint32_t i = 0; i < 100; ++i) {
    send(a, i);
    send(b, i);
  }
  EXPECT_EQ(replies(a, 500) + replies(b, 100), 0) << "a stranger was answered";
  ::close(a);
  ::close(b);
  EXPECT_TRUE(probe("127.0.0.2", 999)) << "the planned prober is still answered";
  int status = 0;
  EXPECT_EQ(::waitpid(agent, &status, WNOHANG), 0)
      << "the agent died: " << slurp(path("agent.err"));
  ::kill(agent, SIGTERM);
  ::waitpid(agent, &status, 0);
}

}  // namespace
}  // namespace netdiag::testing
