// `netdiag simulate` runs every scenario in sim/scenarios/ on each kind of
// generated fabric and writes a log the telemetry reader accepts line for
// line; `netdiag score` reads its truth back; bad scenarios write nothing.

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "telemetry/jsonl.h"
#include "tests/cli/cli_harness.h"
#include "topology/loader.h"

namespace {

namespace fs = std::filesystem;
using netdiag::testing::CliTest;
using netdiag::testing::Outcome;
using ::testing::HasSubstr;

struct NullSink : netdiag::telemetry::RecordSink {
  uint64_t probes = 0;
  void onProbe(const netdiag::telemetry::ProbeRecord&) override { ++probes; }
  void onPort(const netdiag::telemetry::PortRecord&) override {}
  void onLldp(const netdiag::telemetry::LldpRecord&) override {}
};

TEST_F(CliTest, EveryScenarioRunsOnEveryGeneratedFabric) {
  const std::vector<std::pair<std::string, std::string>> fabrics = {
      {"leaf-spine", "leaf-spine --spines 4 --leaves 8 --hosts-per-leaf 4"},
      {"fat-tree", "fat-tree -k 4"},
      {"rail", "rail --sus 2 --hosts-per-su 4 --rails 4 --spines 2 --leaf-uplinks 2 --cores 2"}};
  int scenarios = 0;
  for (const auto& [name, args] : fabrics) {
    const std::string topo_file = path(name + ".yaml");
    ASSERT_EQ(run("topo generate " + args + " -o " + topo_file).code, 0);
    auto topo = netdiag::topology::loadTopologyFile(topo_file);
    ASSERT_TRUE(topo.ok());
    for (const auto& entry :
         fs::directory_iterator(fs::path(NETDIAG_SOURCE_DIR) / "sim" / "scenarios")) {
      const std::string scenario = entry.path().string();
      SCOPED_TRACE(name + " " + entry.path().filename().string());
      ++scenarios;
      Outcome r = run("simulate --scenario " + scenario + " --topology " + topo_file +
                      " --seed 3 --duration 240 -o " + path("log.jsonl") + " --truth " +
                      path("truth.json"));
      ASSERT_EQ(r.code, 0) << r.err;
      EXPECT_THAT(r.err, HasSubstr("records/s"));

      std::ifstream log(path("log.jsonl"));
      NullSink sink;
      netdiag::telemetry::ReadStats stats;
      ASSERT_TRUE(netdiag::telemetry::readJsonl(log, topo.topology, sink, stats));
      EXPECT_EQ(stats.bad, 0u) << (stats.first_bad.empty() ? "" : stats.first_bad[0].message);
      EXPECT_GT(sink.probes, 1000u);

      auto truth = nlohmann::json::parse(slurp(path("truth.json")));
      const bool baseline = entry.path().filename() == "baseline.yaml";
      EXPECT_EQ(truth["faults"].size() + truth["traps"].size() == 0, baseline);
    }
  }
  EXPECT_GE(scenarios, 3 * 13);
}

TEST_F(CliTest, ScoreReadsTheTruthOfASimulation) {
  ASSERT_EQ(run("topo generate fat-tree -k 4 -o " + path("ft.yaml")).code, 0);
  Outcome sim = run("simulate --scenario " + std::string(NETDIAG_SOURCE_DIR) +
                    "/sim/scenarios/gray_loss.yaml --topology " + path("ft.yaml") +
                    " --duration 200 -o " + path("log.jsonl") + " --truth " + path("t.json"));
  ASSERT_EQ(sim.code, 0) << sim.err;
  auto truth = nlohmann::json::parse(slurp(path("t.json")));
  ASSERT_EQ(truth["faults"].size(), 1u);
  const std::string link = truth["faults"][0]["link"];

  write("empty.json", R"({"generated_at": 200, "incidents": []})");
  Outcome empty = run("score --json --truth " + path("t.json") + " --report " + path("empty.json"));
  ASSERT_EQ(empty.code, 0) << empty.err;
  EXPECT_EQ(nlohmann::json::parse(empty.out)["summary"]["faults"]["recall"], 0.0);

  write("hit.json", R"({"generated_at": 200, "incidents": [{"id": "inc-1", "kind": "link_loss",
     "link": ")" + link +
                        R"(", "opened_at": 125, "localized_at": 140, "resolved_at": null,
     "confidence": 0.99, "loss_ratio": 0.01, "evidence": {}}]})");
  Outcome hit = run("score --json --truth " + path("t.json") + " --report " + path("hit.json") +
                    " --min-precision 1 --min-recall 1");
  ASSERT_EQ(hit.code, 0) << hit.err;
  auto j = nlohmann::json::parse(hit.out);
  EXPECT_EQ(j["summary"]["faults"]["recall"], 1.0);
  EXPECT_EQ(
      run("score --truth " + path("t.json") + " --report " + path("empty.json") + " --min-recall 1")
          .code,
      1);
}

TEST_F(CliTest, BadScenarioWritesNothingAndNamesEveryProblem) {
  write("bad.yaml", R"(topology: {generate: leaf-spine}
budget: {probes_per_second: -5}
faults:
  - kind: link_melt
  - kind: link_loss
    loss: 2
    onset: 100
    end: 50
)");
  Outcome r = run("simulate --scenario " + path("bad.yaml") + " -o " + path("log.jsonl") +
                  " --truth " + path("truth.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.yaml:4: error: unknown fault kind 'link_melt'"));
  EXPECT_THAT(r.err, HasSubstr("bad.yaml:6: error: 'loss' must be in [0, 1]"));
  EXPECT_THAT(r.err, HasSubstr("bad.yaml:5: error: fault 'link_loss': onset 100 is not before"));
  EXPECT_THAT(r.err, HasSubstr("bad.yaml:2: error: budget:"));
  EXPECT_FALSE(fs::exists(path("log.jsonl")));
  EXPECT_FALSE(fs::exists(path("truth.json")));

  write("badlink.yaml", R"(topology: {generate: leaf-spine}
faults:
  - kind: link_down
    link: leaf1:swp9->spine7:swp1
)");
  Outcome l = run("simulate --scenario " + path("badlink.yaml") + " -o " + path("log.jsonl"));
  EXPECT_EQ(l.code, 2);
  EXPECT_THAT(l.err, HasSubstr("badlink.yaml:3: error: fault 'link_down': link "));
  EXPECT_FALSE(fs::exists(path("log.jsonl")));
  EXPECT_EQ(run("simulate --fabric torus").code, 2);
  EXPECT_EQ(run("simulate").code, 2);
}

}  // namespace
