// `netdiag locate`, `incidents` and `explain` on a database written by
// `netdiag replay --db` of a simulated gray link: the table names the link,
// --json is the formats.md §3 report, filters and exit codes (0 nothing
// wrong, 1 faults, 2 errors), and --analyzer against a real HTTP server
// serving the same report.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "tests/cli/cli_harness.h"

namespace {

using netdiag::testing::CliTest;
using netdiag::testing::Outcome;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kScenarios = std::string(NETDIAG_SOURCE_DIR) + "/sim/scenarios/";

class LocateCliTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_EQ(
        run("topo generate leaf-spine --spines 4 --leaves 8 --hosts-per-leaf 4 -o " + topo()).code,
        0);
  }
  std::string topo() const { return path("fabric.yaml"); }
  std::string db() const { return path("nd.db"); }

  // Simulates `scenario` for `duration` seconds and replays it into nd.db;
  // returns the faulty directed link of the truth ("" without faults).
  std::string replayIntoDb(const std::string& scenario, double duration) {
    Outcome r = run("simulate --scenario " + kScenarios + scenario + " --topology " + topo() +
                    " --seed 3 --duration " + std::to_string(duration) + " -o " +
                    path("log.jsonl") + " --truth " + path("truth.json"));
    EXPECT_EQ(r.code, 0) << r.err;
    r = run("replay --topology " + topo() + " --telemetry " + path("log.jsonl") + " --db " + db());
    EXPECT_NE(r.code, 2) << r.err;
    json truth = json::parse(slurp(path("truth.json")));
    return truth["faults"].empty() ? "" : truth["faults"][0]["link"].get<std::string>();
  }
};

TEST_F(LocateCliTest, NamesTheGrayLinkFromTheDatabaseAndExitsOne) {
  const std::string link = replayIntoDb("gray_loss.yaml", 300);
  ASSERT_FALSE(link.empty());
  const std::string words =
      link.substr(0, link.find("->")) + " -> " + link.substr(link.find("->") + 2);
  Outcome r = run("locate --db " + db());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr(words));
  EXPECT_THAT(r.out, HasSubstr("critical"));
  EXPECT_THAT(r.out, HasSubstr("link_loss"));
  EXPECT_THAT(r.out, HasSubstr("probes lost"));  // one line of evidence
  EXPECT_THAT(r.out, Not(HasSubstr("\033[")));   // no colour off a terminal

  // --json: the contract's report, only open incidents, naming the link.
  r = run("locate --db " + db() + " --json");
  EXPECT_EQ(r.code, 1);
  json j = json::parse(r.out);
  ASSERT_TRUE(j["generated_at"].is_number());
  ASSERT_TRUE(j["incidents"].is_array());
  ASSERT_FALSE(j["incidents"].empty());
  for (const json& i : j["incidents"]) {
    for (const char* k : {"id", "kind", "opened_at", "localized_at", "resolved_at", "confidence",
                          "loss_ratio", "evidence"}) {
      EXPECT_TRUE(i.contains(k)) << k << " in " << i.dump();
    }
    EXPECT_TRUE(i["resolved_at"].is_null());
  }
  EXPECT_EQ(j["incidents"][0]["link"], link);
  EXPECT_EQ(j["incidents"][0]["kind"], "link_loss");

  // Filters: another kind, or only incidents newer than this one: nothing wrong.
  r = run("locate --db " + db() + " --kind congestion");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("no open incident"));
  r = run("locate --db " + db() + " --since 10s");
  EXPECT_EQ(r.code, 0) << r.out;
  r = run("locate --db " + db() + " --since 0 --kind link_loss");
  EXPECT_EQ(r.code, 1);
  r = run("locate --db " + db() + " --since yesterday");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--since"));

  // History and explanation.
  r = run("incidents --db " + db());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(words));
  const std::string id = j["incidents"][0]["id"];
  r = run("explain " + id + " --db " + db() + " --topology " + topo());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("flows crossing the link"));
  EXPECT_THAT(r.out, HasSubstr("background loss"));
  EXPECT_THAT(r.out, HasSubstr("Drain: safe: "));
  r = run("explain inc-999 --db " + db());
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("no incident inc-999"));
}

TEST_F(LocateCliTest, HealthyFabricExitsZero) {
  EXPECT_EQ(replayIntoDb("baseline.yaml", 200), "");
  Outcome r = run("locate --db " + db());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("OK: no open incident"));
  r = run("locate --db " + db() + " --json");
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(json::parse(r.out)["incidents"].empty());
}

TEST_F(LocateCliTest, ErrorsExitTwo) {
  Outcome r = run("locate --db " + path("missing.db"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("missing.db"));
  r = run("locate");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--analyzer"));
  r = run("locate --analyzer http://127.0.0.1:1");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("cannot reach http://127.0.0.1:1/api/v1/locate"));
}

// A real HTTP server (python3's http.server) serves the replayed report at
// /api/v1/locate, as the analyzer would.
TEST_F(LocateCliTest, AsksTheAnalyzerOverHttp) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 not installed";
  const std::string link = replayIntoDb("gray_loss.yaml", 300);
  Outcome r = run("locate --db " + db() + " --json");
  ASSERT_EQ(r.code, 1);
  std::filesystem::create_directories(dir_ / "www/api/v1");
  write("www/api/v1/locate", r.out);
  write("www/api/v1/bad", "{\"incidents\": 3}");
  write("serve.py",
        "import http.server, functools, sys\n"
        "h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])\n"
        "s = http.server.HTTPServer(('127.0.0.1', 0), h)\n"
        "open(sys.argv[2], 'w').write(str(s.server_address[1]))\n"
        "s.serve_forever()\n");
  const std::string port_file = path("port");
  std::string cmd = "python3 " + path("serve.py") + " " + path("www") + " " + port_file +
                    " >/dev/null 2>&1 & echo $!";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  int pid = 0;
  ASSERT_EQ(std::fscanf(p, "%d", &pid), 1);
  pclose(p);
  std::string port;
  for (int i = 0; i < 100 && port.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    port = slurp(port_file);
  }
  ASSERT_FALSE(port.empty()) << "the HTTP server did not start";
  const std::string url = "http://127.0.0.1:" + port;
  r = run("locate --analyzer " + url + " --json");
  Outcome table = run("locate --analyzer " + url + "/");
  ::kill(pid, SIGTERM);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(json::parse(r.out)["incidents"][0]["link"], link);
  EXPECT_EQ(table.code, 1);
  EXPECT_THAT(table.out, HasSubstr("critical"));
}

}  // namespace

// Loss on every flow into one single-NIC host, with no path discovery: its
// access link and the host itself fit the evidence alike, so the incident
// is an ambiguity group. locate shows it (not paged, exit 0), explain names
// the members, and --json keeps localized_at null with a `candidates` list.
TEST_F(LocateCliTest, AnAmbiguityGroupIsShownAndNotPaged) {
  ASSERT_EQ(run("topo generate leaf-spine --spines 2 --leaves 2 --hosts-per-leaf 2 "
                "--no-addresses -o " +
                path("small.yaml"))
                .code,
            0);
  std::ofstream log(path("group.jsonl"));
  const char* ports[] = {"host1:eth0", "host2:eth0", "host3:eth0", "host4:eth0"};
  for (int w = 1; w <= 60; ++w) {
    for (const char* src : ports) {
      for (const char* dst : ports) {
        if (std::string(src) == dst) continue;
        for (int flow = 0; flow < 4; ++flow) {
          const int lost = std::string(dst) == "host3:eth0" && (w + flow) % 2 == 0 ? 2 : 0;
          log << R"({"t":)" << 5 * w << R"(,"kind":"probe","src":")" << src << R"(","dst":")" << dst
              << R"(","flow":)" << 40000 + flow << R"(,"sent":50,"lost":)" << lost
              << R"(,"lost_fwd":)" << lost << R"(,"lost_rev":0,"rtt_us_p50":10})" << '\n';
        }
      }
    }
  }
  log.close();
  Outcome r = run("replay --topology " + path("small.yaml") + " --telemetry " +
                  path("group.jsonl") + " --db " + db());
  ASSERT_NE(r.code, 2) << r.err;

  r = run("locate --db " + db() + " --json");
  EXPECT_EQ(r.code, 0) << r.out;  // nothing localized
  json j = json::parse(r.out);
  ASSERT_FALSE(j["incidents"].empty()) << r.out;
  const json& group = j["incidents"][0];
  EXPECT_EQ(group["link"], "leaf2:swp1->host3:eth0");
  EXPECT_TRUE(group["localized_at"].is_null());
  ASSERT_TRUE(group["candidates"].is_array()) << group.dump();
  EXPECT_EQ(group["candidates"][0], (json{{"node", "host3"}}));
  EXPECT_LE(group["confidence"].get<double>(), 0.5);

  r = run("locate --db " + db());
  EXPECT_THAT(r.out, HasSubstr("ambiguous"));
  EXPECT_THAT(r.out, HasSubstr("or one of: host host3"));
  r = run("explain " + group["id"].get<std::string>() + " --db " + db());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("could be:   host host3"));
}
