// The analyzer restarted 10 times (kill -9 and SIGTERM, alternately) while
// a 5 % gray link is on, in gRPC mode, as real processes: the synthetic
// agents keep streaming and resend what was not acknowledged; nothing but
// the faulty link is ever paged, and its incident stays open under one id
// the whole time (SQLite keeps it; each new instance takes it up again).
// Issue #15, item 3.

#include <chrono>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli/analyzer_process.h"
#include "tests/cli/cli_harness.h"

namespace netdiag::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class RestartCliTest : public CliTest {
 protected:
  void TearDown() override {
    analyzer_.stop(SIGKILL);
    if (sim_ > 0) {
      ::kill(sim_, SIGKILL);
      ::waitpid(sim_, nullptr, 0);
    }
    CliTest::TearDown();
  }

  // Starts the analyzer (on the gRPC port of the first start, once there
  // is one: the agents reconnect to it).
  ::testing::AssertionResult startAnalyzer() {
    // The telemetry runs at 10x: the default 60 s to resolve would be 6 s of
    // wall time, less than a restart and the agents' reconnect take under a
    // sanitizer on a busy machine, and the incident resolved in the gap.
    return analyzer_.start("--topology " + path("fabric.yaml") + " --db " + path("netdiag.db") +
                           " --resolve-after 300 --max-future 3600");
  }

  bool simRunning() {
    int status = 0;
    if (::waitpid(sim_, &status, WNOHANG) == sim_) {
      sim_status_ = status;
      sim_ = -1;
    }
    return sim_ > 0;
  }

  AnalyzerProcess analyzer_{path("analyzer.out"), path("analyzer.err")};
  pid_t sim_ = -1;
  int sim_status_ = -1;
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
  ASSERT_TRUE(startAnalyzer());
  // 10 telemetry seconds per wall second: 90 s of wall time, on every node's own stream.
  sim_ = ::fork();
  if (sim_ == 0) {
    const std::string cmd = "exec " + std::string(NETDIAG_BIN) + " simulate --topology " +
                            path("fabric.yaml") + " --scenario " + path("gray.yaml") + " --truth " +
                            path("truth.json") +
                            " --live 127.0.0.1:" + std::to_string(analyzer_.grpc_port) +
                            " --speed 10 >" + path("sim.out") + " 2>" + path("sim.err");
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }

  std::set<std::string> ids_on_faulty;
  auto firstIncident = [&]() -> json {
    json j = json::parse(analyzer_.get("/api/v1/incidents"), nullptr, false);
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
      if (analyzer_.probesIngested() > 2000) {
        flowing = true;
        break;
      }
      std::this_thread::sleep_for(100ms);
    }
    ASSERT_TRUE(flowing) << "restart " << restart << ": no records after the restart, or the "
                         << "simulation ended too soon\n"
                         << slurp(path("sim.err"));
    analyzer_.stop(restart % 2 == 0 ? SIGKILL : SIGTERM);
    ASSERT_TRUE(startAnalyzer());
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
