// `netdiag analyzer --bus` as a real process, killed with SIGKILL while a
// gray link it localized is still on (issue #13, tests): every node's agent
// publishes into the stream of a real nats-server on loopback, the
// restarted analyzer rebuilds its evidence from the stream and keeps the
// incident under its id, and the records the stream acknowledged to the
// agents are the records its engine ingested, each once. Skipped where
// Debian's nats-server is not installed.

#include <chrono>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "planner/plan.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "tests/cli/analyzer_process.h"
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
  ::testing::AssertionResult startAnalyzer(const std::string& nats) {
    analyzer_.grpc_port = analyzer_.http_port = 0;
    return analyzer_.start("--topology " + path("fabric.yaml") + " --db " + path("netdiag.db") +
                           " --max-future 3600 --bus " + nats);
  }
  // The localized incident on `link`, or null.
  json localized(const std::string& link) {
    json j = json::parse(analyzer_.get("/api/v1/incidents"), nullptr, false);
    if (!j.is_object()) return json();
    for (const auto& i : j.value("incidents", json::array())) {
      if (i.value("link", "") == link && !i["localized_at"].is_null()) return i;
    }
    return json();
  }

  AnalyzerProcess analyzer_{path("analyzer.out"), path("analyzer.err")};
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
  ASSERT_TRUE(startAnalyzer(nats.url()));
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
        << analyzer_.get("/api/v1/incidents") << slurp(path("analyzer.err"));
    id = localized(faulty)["id"];
    analyzer_.stop(SIGKILL);
    ASSERT_TRUE(startAnalyzer(nats.url()));
    ASSERT_TRUE(waitFor([&] { return localized(faulty).value("id", "") == id; }))
        << analyzer_.get("/api/v1/incidents");
  });
  simulator->run(agents);
  ASSERT_TRUE(agents.finish());  // every batch acknowledged by the stream
  ASSERT_FALSE(id.empty());
  const double acked = static_cast<double>(agents.probes());
  auto ingested = [&] { return analyzer_.probesIngested(); };
  EXPECT_TRUE(waitFor([&] { return ingested() >= acked; })) << ingested() << " of " << acked;
  EXPECT_EQ(ingested(), acked);
  EXPECT_EQ(localized(faulty).value("id", ""), id);
  const std::string err = slurp(path("analyzer.err"));
  EXPECT_NE(err.find("evidence rebuilt from"), std::string::npos) << err;
}

}  // namespace
}  // namespace netdiag::testing
