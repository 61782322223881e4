// `netdiag analyzer --bus` as a real process, killed with SIGKILL while a
// gray link it localized is still on (issue #13, tests): every node's agent
// publishes into the stream of a real nats-server on loopback, the
// restarted analyzer rebuilds its evidence from the stream and keeps the
// incident under its id, and the records the stream acknowledged to the
// agents are the records its engine ingested, each once. Skipped where
// Debian's nats-server is not installed.

#include <chrono>
#include <regex>
#include <sstream>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "planner/plan.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "tests/cli/cli_harness.h"
#include "tests/unit/bus/bus_agents.h"
#include "tests/unit/bus/nats_server.h"
#include "topology/loader.h"

namespace netdiag::testing {
namespace {

using namespace std::chrono_literals;
using bus::testing::waitFor;
using nlohmann::json;

class BusKillCliTest : public CliTest {
 protected:
  void TearDown() override {
    if (analyzer_ > 0) {
      ::kill(analyzer_, SIGKILL);
      ::waitpid(analyzer_, nullptr, 0);
    }
    CliTest::TearDown();
  }

  // Starts the analyzer on the bus and waits for its "listening" line.
  void startAnalyzer(const std::string& nats) {
    const size_t before = slurp(path("analyzer.err")).size();
    analyzer_ = ::fork();
    if (analyzer_ == 0) {
      const std::string cmd = "exec " + std::string(NETDIAG_BIN) + " analyzer --topology " +
                              path("fabric.yaml") + " --db " + path("netdiag.db") +
                              " --max-future 3600 --listen 127.0.0.1:0"
                              " --web.listen-address 127.0.0.1:0 --bus " +
                              nats + " >/dev/null 2>>" + path("analyzer.err");
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const std::regex re(R"(http=http://127\.0\.0\.1:(\d+))");
    ASSERT_TRUE(waitFor(
        [&] {
          const std::string err = slurp(path("analyzer.err"));
          std::smatch m;
          const std::string fresh = err.size() > before ? err.substr(before) : "";
          if (!std::regex_search(fresh, m, re)) return false;
          http_port_ = std::stoi(m[1]);
          return true;
        },
        120s))
        << slurp(path("analyzer.err"));
  }

  std::string get(const std::string& target) {
    httplib::Client c("127.0.0.1", http_port_);
    c.set_read_timeout(10, 0);
    auto r = c.Get(target.c_str());
    return r && r->status == 200 ? r->body : "";
  }
  // Probe records this analyzer instance's engine ingested.
  double ingested() {
    const std::string m = get("/metrics");
    std::smatch s;
    static const std::regex re(R"(\nnetdiag_ingest_records_total\{kind="probe"\} ([0-9.e+]+))");
    return std::regex_search(m, s, re) ? std::stod(s[1]) : -1;
  }
  // The localized incident on `link`, or null.
  json localized(const std::string& link) {
    json j = json::parse(get("/api/v1/incidents"), nullptr, false);
    if (!j.is_object()) return json();
    for (const auto& i : j.value("incidents", json::array())) {
      if (i.value("link", "") == link && !i["localized_at"].is_null()) return i;
    }
    return json();
  }

  pid_t analyzer_ = -1;
  int http_port_ = 0;
};

TEST_F(BusKillCliTest, KillNineMidFaultKeepsTheIncidentAndEveryAcknowledgedRecordOnce) {
  if (!bus::testing::natsServerInstalled()) {
    GTEST_SKIP() << "nats-server not installed (apt-get install nats-server)";
  }
  bus::testing::NatsServer nats;
  nats.start();
  ASSERT_EQ(run("topo generate leaf-spine --spines 2 --leaves 4 --hosts-per-leaf 4 -o " +
                path("fabric.yaml"))
                .code,
            0);
  topology::LoadResult loaded = topology::loadTopologyFile(path("fabric.yaml"));
  ASSERT_TRUE(loaded.ok());
  const topology::Topology& topo = loaded.topology;
  startAnalyzer(nats.url());
  std::istringstream yaml(R"(name: gray
duration_s: 240
window_s: 5
noise: {background_loss: 1.0e-5, path_unknown: 0.3}
faults:
  - kind: link_loss
    link: {from: leaf, to: spine}
    loss: 0.03
    onset: 20
)");
  sim::ScenarioLoad load = sim::loadScenario(yaml, "gray.yaml");
  ASSERT_TRUE(load.errors.empty());
  planner::Plan plan = planner::makePlan(topo, load.scenario.budget, {}, 1);
  std::vector<topology::Diagnostic> errors;
  auto simulator = sim::Simulator::create(topo, load.scenario, plan, {}, errors);
  ASSERT_TRUE(simulator);
  const std::string faulty = simulator->truth().faults.at(0).link;

  bus::BusOptions options;
  options.url = nats.url();
  options.request_timeout_s = 5;
  options.reconnect_wait_s = 0.1;
  bus::testing::BusAgents agents(topo, options);
  std::string id;
  agents.pauseAt(120, [&] {
    ASSERT_TRUE(waitFor([&] { return !localized(faulty).is_null(); }))
        << get("/api/v1/incidents") << slurp(path("analyzer.err"));
    id = localized(faulty)["id"];
    ::kill(analyzer_, SIGKILL);
    ::waitpid(analyzer_, nullptr, 0);
    analyzer_ = -1;
    startAnalyzer(nats.url());
    ASSERT_TRUE(waitFor([&] { return localized(faulty).value("id", "") == id; }))
        << get("/api/v1/incidents");
  });
  simulator->run(agents);
  ASSERT_TRUE(agents.finish());  // every batch acknowledged by the stream
  ASSERT_FALSE(id.empty());
  const double acked = static_cast<double>(agents.probes());
  EXPECT_TRUE(waitFor([&] { return ingested() >= acked; })) << ingested() << " of " << acked;
  EXPECT_EQ(ingested(), acked);
  EXPECT_EQ(localized(faulty).value("id", ""), id);
  const std::string err = slurp(path("analyzer.err"));
  EXPECT_NE(err.find("evidence rebuilt from"), std::string::npos) << err;
}

}  // namespace
}  // namespace netdiag::testing
