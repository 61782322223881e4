// The analyzer restarted 10 times (kill -9 and SIGTERM, alternately) while
// a 5 % gray link is on, in gRPC mode, as real processes: the synthetic
// agents keep streaming and resend what was not acknowledged; nothing but
// the faulty link is ever paged, and its incident stays open under one id
// the whole time (SQLite keeps it; each new instance takes it up again).
// Issue #15, item 3.

#include <chrono>
#include <regex>
#include <set>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli/cli_harness.h"

namespace netdiag::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class RestartCliTest : public CliTest {
 protected:
  void TearDown() override {
    if (analyzer_ > 0) stop(analyzer_, SIGKILL);
    if (sim_ > 0) stop(sim_, SIGKILL);
    CliTest::TearDown();
  }

  pid_t spawn(const std::string& args, const std::string& log) {
    pid_t pid = ::fork();
    if (pid == 0) {
      const std::string cmd = "exec " + std::string(NETDIAG_BIN) + " " + args + " >" +
                              path(log + ".out") + " 2>>" + path(log + ".err");
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  }

  static int stop(pid_t pid, int sig) {
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
  }

  // Starts the analyzer (on grpc_port_ once it is known) and waits for its
  // "listening" line of this start.
  void startAnalyzer() {
    const size_t before = slurp(path("analyzer.err")).size();
    const std::string listen = "127.0.0.1:" + std::to_string(grpc_port_);
    // The telemetry runs at 10x: the default 60 s to resolve would be 6 s of
    // wall time, less than a restart and the agents' reconnect take under a
    // sanitizer on a busy machine, and the incident resolved in the gap.
    analyzer_ = spawn("analyzer --topology " + path("fabric.yaml") + " --db " + path("netdiag.db") +
                          " --resolve-after 300 --max-future 3600 --listen " + listen +
                          " --web.listen-address 127.0.0.1:" + std::to_string(http_port_),
                      "analyzer");
    std::regex re(R"(grpc=127\.0\.0\.1:(\d+).* http=http://127\.0\.0\.1:(\d+))");
    for (int i = 0; i < 600; ++i) {
      const std::string err = slurp(path("analyzer.err"));
      std::smatch m;
      const std::string fresh = err.size() > before ? err.substr(before) : "";
      if (std::regex_search(fresh, m, re)) {
        grpc_port_ = std::stoi(m[1]);
        http_port_ = std::stoi(m[2]);
        return;
      }
      int status = 0;
      if (::waitpid(analyzer_, &status, WNOHANG) == analyzer_) {
        analyzer_ = -1;
        FAIL() << "analyzer exited: " << fresh;
      }
      std::this_thread::sleep_for(50ms);
    }
    FAIL() << "analyzer did not start: " << slurp(path("analyzer.err"));
  }

  std::string get(const std::string& target) {
    httplib::Client c("127.0.0.1", http_port_);
    c.set_read_timeout(10, 0);
    auto r = c.Get(target.c_str());
    return r && r->status == 200 ? r->body : "";
  }

  // Probe records this analyzer instance ingested (its counter starts at 0).
  double ingested() {
    const std::string m = get("/metrics");
    std::smatch s;
    static const std::regex re(R"(\nnetdiag_ingest_records_total\{kind="probe"\} ([0-9.e+]+))");
    return std::regex_search(m, s, re) ? std::stod(s[1]) : 0;
  }

  bool simRunning() {
    int status = 0;
    if (::waitpid(sim_, &status, WNOHANG) == sim_) {
      sim_status_ = status;
      sim_ = -1;
    }
    return sim_ > 0;
  }

  pid_t analyzer_ = -1, sim_ = -1;
  int sim_status_ = -1;
  int grpc_port_ = 0, http_port_ = 0;
};

TEST_F(RestartCliTest, TenRestartsDuringAFaultPageNothingElseAndKeepTheIncident) {
  ASSERT_EQ(run("topo generate leaf-spine --spines 4 --leaves 6 --hosts-per-leaf 4 -o " +
                path("fabric.yaml"))
                .code,
            0);
  write("gray.yaml", R"(name: gray_restarts
duration_s: 900
window_s: 5
noise: {background_loss: 1.0e-5, path_unknown: 0.3}
faults:
  - kind: link_loss
    link: {from: leaf, to: spine}
    loss: 0.05
    onset: 20
)");
  startAnalyzer();
  ASSERT_GT(grpc_port_, 0);
  // 10 telemetry seconds per wall second: 90 s of wall time, on every node's own stream.
  sim_ = spawn("simulate --topology " + path("fabric.yaml") + " --scenario " + path("gray.yaml") +
                   " --truth " + path("truth.json") +
                   " --live 127.0.0.1:" + std::to_string(grpc_port_) + " --speed 10",
               "sim");

  std::set<std::string> ids_on_faulty;
  auto firstIncident = [&]() -> json {
    json j = json::parse(get("/api/v1/incidents"), nullptr, false);
    return j.is_object() ? j : json();
  };
  // The fault is found before the first restart.
  json located;
  for (int i = 0; i < 1200 && simRunning(); ++i) {
    located = firstIncident();
    if (located.is_object() && !located["incidents"].empty() &&
        !located["incidents"][0]["localized_at"].is_null())
      break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(located.is_object() && !located["incidents"].empty())
      << slurp(path("analyzer.err")) << slurp(path("sim.err"));
  const std::string id = located["incidents"][0]["id"];
  const std::string first_link = located["incidents"][0].value("link", "");

  for (int restart = 0; restart < 10; ++restart) {
    // Wait until this instance ingests again (the agents reconnected), then kill it.
    bool flowing = false;
    for (int i = 0; i < 600 && simRunning(); ++i) {
      if (ingested() > 2000) {
        flowing = true;
        break;
      }
      std::this_thread::sleep_for(100ms);
    }
    ASSERT_TRUE(flowing) << "restart " << restart << ": no records after the restart, or the "
                         << "simulation ended too soon\n"
                         << slurp(path("sim.err"));
    stop(analyzer_, restart % 2 == 0 ? SIGKILL : SIGTERM);
    analyzer_ = -1;
    startAnalyzer();
  }
  // The simulation ends with the fault still on; everything it sent is delivered.
  for (int i = 0; i < 3000 && simRunning(); ++i) std::this_thread::sleep_for(100ms);
  ASSERT_FALSE(simRunning()) << "simulate did not finish";
  EXPECT_TRUE(WIFEXITED(sim_status_) && WEXITSTATUS(sim_status_) == 0) << slurp(path("sim.err"));
  const std::string faulty = json::parse(slurp(path("truth.json")))["faults"][0]["link"];
  EXPECT_EQ(first_link, faulty);

  // The last instance localizes it again under the same id; nothing else was ever paged.
  json all;
  for (int i = 0; i < 600; ++i) {
    all = firstIncident();
    bool again = false;
    for (const auto& inc : all.value("incidents", json::array()))
      again |= inc["id"] == id && !inc["localized_at"].is_null();
    if (again) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(all.is_object());
  size_t on_faulty = 0;
  for (const auto& inc : all["incidents"]) {
    if (inc["localized_at"].is_null()) continue;  // an ambiguity group: never paged
    EXPECT_EQ(inc.value("link", ""), faulty) << "a false page: " << inc.dump();
    if (inc.value("link", "") != faulty) continue;
    ++on_faulty;
    EXPECT_EQ(inc["id"], id) << "the incident was reopened under a new id: " << inc.dump();
    EXPECT_TRUE(inc["resolved_at"].is_null()) << "resolved while the fault is on: " << inc.dump();
  }
  EXPECT_EQ(on_faulty, 1u) << all.dump(1);
}

}  // namespace
}  // namespace netdiag::testing
