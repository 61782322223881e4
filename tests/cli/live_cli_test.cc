// `netdiag analyzer` and `netdiag simulate --live` as real processes: bad
// flags fail clearly; a simulated gray link streamed into a running analyzer
// is localized (checked over HTTP with httplib), SIGTERM stops it cleanly,
// and a restarted analyzer still has the incident.

#include <chrono>
#include <thread>

#include <httplib.h>
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

class LiveCliTest : public CliTest {
 protected:
  json get(const std::string& target) { return json::parse(analyzer_.get(target), nullptr, false); }

  AnalyzerProcess analyzer_{path("analyzer.out"), path("analyzer.err")};
};

TEST_F(LiveCliTest, AnalyzerRejectsBadFlagsClearly) {
  auto r =
      run("analyzer --topology /nonexistent.yaml --listen 127.0.0.1:0 --web.listen-address "
          "127.0.0.1:0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent.yaml"), std::string::npos) << r.err;

  const std::string topo = std::string(NETDIAG_FIXTURES) + "/topologies/good_leaf_spine.yaml";
  r = run("analyzer --topology " + topo + " --listen nowhere");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--listen \"nowhere\" is not HOST:PORT"), std::string::npos) << r.err;

  r = run("analyzer --topology " + topo + " --listen 127.0.0.1:0 --web.listen-address :80x");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--web.listen-address"), std::string::npos) << r.err;

  r = run("analyzer --topology " + topo + " --dscp 99");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--dscp"), std::string::npos) << r.err;

  r = run("analyzer --topology " + topo + " --tls-cert " + topo);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--tls-key"), std::string::npos) << r.err;

  // Issue #15: plaintext on an address other hosts reach only with --insecure.
  r = run("analyzer --topology " + topo + " --listen 0.0.0.0:0 --web.listen-address 127.0.0.1:0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not a loopback address"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--insecure"), std::string::npos) << r.err;

  // A collectors file is checked against the topology, errors by line.
  write("collectors.yaml", "collectors:\n  poller:\n    nodes: [spine1, nosuch]\n");
  r = run("analyzer --topology " + topo + " --collectors " + path("collectors.yaml") +
          " --listen 127.0.0.1:0 --web.listen-address 127.0.0.1:0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(path("collectors.yaml") + ":3: error: collector \"poller\": unknown node "
                                                 "\"nosuch\""),
            std::string::npos)
      << r.err;

  // Issue #14: the drain policy file, by line and key; its scopes exist in
  // the topology; acting scopes need the drain key.
  write("policy.yaml", "mode: auto\nhold_passes: soon\n");
  r = run("analyzer --topology " + topo + " --drain-policy-file " + path("policy.yaml") +
          " --listen 127.0.0.1:0 --web.listen-address 127.0.0.1:0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(path("policy.yaml") + ":2: hold_passes: \"soon\" is not a number"),
            std::string::npos)
      << r.err;
  write("policy.yaml", "scopes:\n  pod 42: {mode: approve}\n");
  r = run("analyzer --topology " + topo + " --drain-policy-file " + path("policy.yaml") +
          " --listen 127.0.0.1:0 --web.listen-address 127.0.0.1:0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("\"pod 42\""), std::string::npos) << r.err;
  write("policy.yaml", "scopes:\n  leaf-spine: {mode: approve}\n");
  r = run("analyzer --topology " + topo + " --drain-policy-file " + path("policy.yaml") +
          " --db '' --listen 127.0.0.1:0 --web.listen-address 127.0.0.1:0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("needs --drain-key"), std::string::npos) << r.err;

  // The bus: a URL that is not NATS, a fabric that is not one token, and a
  // server that does not answer are named.
  r = run("analyzer --topology " + topo + " --bus http://127.0.0.1:4222");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("expected nats://HOST:PORT"), std::string::npos) << r.err;
  r = run("analyzer --topology " + topo + " --bus nats://127.0.0.1:4222 --bus-fabric a.b");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bus fabric \"a.b\""), std::string::npos) << r.err;
  r = run("analyzer --topology " + topo +
          " --listen 127.0.0.1:0 --web.listen-address 127.0.0.1:0 --db '' --bus "
          "nats://u:secret@127.0.0.1:1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no NATS server answers at nats://***@127.0.0.1:1"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("secret"), std::string::npos) << r.err;
  r = run("agent --node h1 --analyzer 127.0.0.1:7600 --bus nats://127.0.0.1:4222");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("analyzer and bus: give one"), std::string::npos) << r.err;

  r = run("simulate --fabric leaf-spine:spines=2,leaves=2,hosts_per_leaf=2 --speed 2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--live"), std::string::npos) << r.err;

  r = run("simulate --fabric leaf-spine:spines=2,leaves=2,hosts_per_leaf=2 --live nohost");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("HOST:PORT"), std::string::npos) << r.err;
}

TEST_F(LiveCliTest, SimulateLiveIntoAnAnalyzerLocalizesTheGrayLink) {
  ASSERT_EQ(run("topo generate leaf-spine --spines 4 --leaves 6 --hosts-per-leaf 6 -o " +
                path("fabric.yaml"))
                .code,
            0);
  write("gray.yaml", R"(name: gray_short
duration_s: 180
window_s: 5
noise: {background_loss: 1.0e-5, path_unknown: 0.3}
faults:
  - kind: link_loss
    link: {from: leaf, to: spine}
    loss: 0.03
    onset: 30
)");
  // --speed 0 streams 180 s of telemetry in a few wall seconds: the agents'
  // clocks run that far ahead of the analyzer's, by design.
  // 12 streams for 46 nodes: grouped synthetic agents, which the analyzer
  // accepts only when told so, loudly.
  ASSERT_TRUE(analyzer_.start("--topology " + path("fabric.yaml") + " --db " + path("netdiag.db") +
                              " --max-future 3600 --accept-sim-agents 12"));
  EXPECT_NE(slurp(path("analyzer.err")).find("WARNING: --accept-sim-agents 12"), std::string::npos);
  {
    httplib::Client c("127.0.0.1", analyzer_.http_port);
    auto ready = c.Get("/readyz");
    ASSERT_TRUE(ready);
    EXPECT_EQ(ready->status, 200);
  }

  auto r = run("simulate --topology " + path("fabric.yaml") + " --scenario " + path("gray.yaml") +
               " --truth " + path("truth.json") + " --live 127.0.0.1:" +
               std::to_string(analyzer_.grpc_port) + " --speed 0 --agents 12");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("over 12 agent stream(s)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--accept-sim-agents 12"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("delivered"), std::string::npos) << r.err;
  const std::string faulty = json::parse(slurp(path("truth.json")))["faults"][0]["link"];

  json located;
  for (int i = 0; i < 100; ++i) {
    located = get("/api/v1/locate");
    if (located.is_object() && !located["incidents"].empty()) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(located.is_object());
  ASSERT_EQ(located["incidents"].size(), 1u) << located.dump(1);
  const json& incident = located["incidents"][0];
  EXPECT_EQ(incident["link"], faulty) << located.dump(1);
  EXPECT_EQ(incident["kind"], "link_loss");
  EXPECT_FALSE(incident["localized_at"].is_null());

  std::string encoded;
  for (char ch : faulty) encoded += ch == ':' ? "%3A" : ch == '>' ? "%3E" : std::string(1, ch);
  json link = get("/api/v1/links/" + encoded);
  EXPECT_EQ(link["link"], faulty);
  EXPECT_EQ(link["incidents"][0], incident["id"]);

  // explain: the evidence and the analyzer's drain advice and decision.
  auto explained = run("explain " + incident["id"].get<std::string>() +
                       " --analyzer http://127.0.0.1:" + std::to_string(analyzer_.http_port));
  EXPECT_EQ(explained.code, 0) << explained.err;
  EXPECT_NE(explained.out.find("Drain: safe: "), std::string::npos) << explained.out;
  EXPECT_NE(explained.out.find("policy advise, verdict advise"), std::string::npos)
      << explained.out;

  const int status = analyzer_.stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_NE(slurp(path("analyzer.err")).find("SIGTERM: shutting down"), std::string::npos);

  // A restarted analyzer keeps the incident (SQLite).
  ASSERT_TRUE(analyzer_.start("--topology " + path("fabric.yaml") + " --db " + path("netdiag.db")));
  json all = get("/api/v1/incidents");
  ASSERT_TRUE(all.is_object());
  bool kept = false;
  for (const auto& i : all["incidents"]) kept |= i["id"] == incident["id"] && i["link"] == faulty;
  EXPECT_TRUE(kept) << all.dump(1) << slurp(path("analyzer.err"));
}

}  // namespace
}  // namespace netdiag::testing
