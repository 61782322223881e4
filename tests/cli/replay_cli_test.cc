// `netdiag replay`: reads a telemetry log from a real shell pipe or a file,
// reports bad lines with their numbers and skips them (--strict stops at the
// first), prints a report (formats.md §3) that `netdiag score` accepts, and
// exits 1 while a fault is still open at the end, 0 on a healthy fabric.

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

namespace {

using netdiag::testing::CliTest;
using netdiag::testing::Outcome;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kScenarios = std::string(NETDIAG_SOURCE_DIR) + "/sim/scenarios/";

class ReplayCliTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_EQ(
        run("topo generate leaf-spine --spines 4 --leaves 8 --hosts-per-leaf 4 -o " + topo()).code,
        0);
  }
  std::string topo() const { return path("fabric.yaml"); }

  // Simulates `scenario` into log.jsonl with its truth in truth.json.
  void simulate(const std::string& scenario, double duration) {
    Outcome r = run("simulate --scenario " + kScenarios + scenario + " --topology " + topo() +
                    " --seed 3 --duration " + std::to_string(duration) + " -o " +
                    path("log.jsonl") + " --truth " + path("truth.json"));
    ASSERT_EQ(r.code, 0) << r.err;
  }

  // Runs a bash script (no single quotes in it) through std::system.
  static int bash(const std::string& script) {
    int status = std::system(("bash -c '" + script + "'").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  static std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  }
};

TEST_F(ReplayCliTest, SimulatePipedIntoReplayGivesAReportThatScores) {
  const std::string bin = NETDIAG_BIN;
  const std::string script =
      bin + " simulate --scenario " + kScenarios + "gray_loss.yaml --topology " + topo() +
      " --seed 3 --duration 240 --truth " + path("truth.json") + " -o - 2>" + path("sim.err") +
      " | " + bin + " replay --topology " + topo() + " --telemetry - --json >" +
      path("report.json") + " 2>" + path("replay.err") +
      "; s=(\"${PIPESTATUS[@]}\"); echo \"${s[0]} ${s[1]}\" >" + path("codes") + "; exit ${s[1]}";
  const int code = bash(script);
  EXPECT_EQ(slurp(path("codes")), "0 1\n") << slurp(path("sim.err")) << slurp(path("replay.err"));
  // The fault (onset 120, end 480) is still on at 240: findings, exit 1.
  EXPECT_EQ(code, 1) << slurp(path("replay.err"));
  EXPECT_THAT(slurp(path("replay.err")), HasSubstr("replayed "));
  EXPECT_THAT(slurp(path("replay.err")), HasSubstr(" 0 bad"));

  const auto report = nlohmann::json::parse(slurp(path("report.json")));
  const auto truth = nlohmann::json::parse(slurp(path("truth.json")));
  ASSERT_EQ(truth["faults"].size(), 1u);
  EXPECT_EQ(report["generated_at"], 240.0);
  int positives = 0;
  for (const auto& i : report["incidents"]) {
    for (const char* field : {"id", "kind", "opened_at", "localized_at", "resolved_at",
                              "confidence", "loss_ratio", "evidence"}) {
      EXPECT_TRUE(i.contains(field)) << field << " missing: " << i.dump();
    }
    if (i["localized_at"].is_null()) continue;
    ++positives;
    EXPECT_EQ(i["kind"], "link_loss") << i.dump();
    EXPECT_EQ(i["link"], truth["faults"][0]["link"]) << i.dump();
    EXPECT_TRUE(i["resolved_at"].is_null());
  }
  EXPECT_EQ(positives, 1) << report.dump(1);

  Outcome score =
      run("score --json --truth " + path("truth.json") + " --report " + path("report.json") +
          " --topology " + topo() + " --min-precision 1 --min-recall 1");
  EXPECT_EQ(score.code, 0) << score.out << score.err;
  auto s = nlohmann::json::parse(score.out);
  EXPECT_EQ(s["thresholds"]["met"], true) << score.out;
}

TEST_F(ReplayCliTest, FileAndStdinGiveTheSameReport) {
  simulate("link_down.yaml", 200);
  Outcome from_file =
      run("replay --topology " + topo() + " --telemetry " + path("log.jsonl") + " --json");
  const std::string bin = NETDIAG_BIN;
  const int code = bash("cat " + path("log.jsonl") + " | " + bin + " replay --topology " + topo() +
                        " --telemetry - --json >" + path("piped.json") + " 2>" + path("piped.err"));
  EXPECT_EQ(from_file.code, 1) << from_file.err;  // the link is still down at 200
  EXPECT_EQ(code, 1) << slurp(path("piped.err"));
  EXPECT_EQ(nlohmann::json::parse(from_file.out), nlohmann::json::parse(slurp(path("piped.json"))));
  write("report.json", from_file.out);
  EXPECT_EQ(run("score --truth " + path("truth.json") + " --report " + path("report.json") +
                " --min-precision 1 --min-recall 1")
                .code,
            0);
}

TEST_F(ReplayCliTest, BadLinesAreCountedReportedWithTheirNumbersAndSkipped) {
  simulate("baseline.yaml", 60);
  const std::string clean = slurp(path("log.jsonl"));
  std::vector<std::string> log = lines(clean);
  ASSERT_GT(log.size(), 100u);
  // Bad lines land on lines 2, 5 and 9 of the new file; an unknown kind on 7.
  log.insert(log.begin() + 1, "{this is not json");
  log.insert(log.begin() + 4,
             R"({"t": 1.0, "kind": "probe", "src": "host1:eth0", "dst": "host9:eth0", )"
             R"("flow": 1, "sent": 5, "lost": 9})");
  log.insert(log.begin() + 6, R"({"t": 1.0, "kind": "sflow", "port": "leaf1:swp1"})");
  log.insert(log.begin() + 8,
             R"({"t": 1.0, "kind": "port", "port": "nosuch:swp1", "oper_up": true})");
  std::string text;
  for (const auto& l : log) text += l + "\n";
  write("bad.jsonl", text);

  Outcome r = run("replay --topology " + topo() + " --telemetry " + path("bad.jsonl") + " --json");
  EXPECT_EQ(r.code, 0) << r.err;  // a healthy fabric: nothing open
  EXPECT_THAT(r.err, HasSubstr(path("bad.jsonl") + ":2: bad record"));
  EXPECT_THAT(r.err, HasSubstr(path("bad.jsonl") + ":5: bad record"));
  EXPECT_THAT(r.err, HasSubstr(path("bad.jsonl") + ":9: bad record"));
  EXPECT_THAT(r.err, Not(HasSubstr(":7: bad record")));
  EXPECT_THAT(r.err, HasSubstr("3 bad, 1 unknown kind"));
  // The good records are all used: the same report as the clean log's.
  Outcome c = run("replay --topology " + topo() + " --telemetry " + path("log.jsonl") + " --json");
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_THAT(c.err, HasSubstr(" 0 bad"));
  auto bad_report = nlohmann::json::parse(r.out), clean_report = nlohmann::json::parse(c.out);
  EXPECT_EQ(bad_report["ingest"]["bad"], 3);
  EXPECT_EQ(bad_report["ingest"]["unknown_kind"], 1);
  bad_report.erase("ingest");
  clean_report.erase("ingest");
  EXPECT_EQ(bad_report, clean_report);

  // Bad lines read from stdin are numbered the same way.
  const std::string bin = NETDIAG_BIN;
  bash(bin + " replay --topology " + topo() + " --telemetry - <" + path("bad.jsonl") + " >" +
       path("o") + " 2>" + path("e"));
  EXPECT_THAT(slurp(path("e")), HasSubstr(":5: bad record"));
}

TEST_F(ReplayCliTest, ImplausibleAndOverlongLinesAreReportedWithTheirNumbers) {
  simulate("baseline.yaml", 60);
  std::vector<std::string> log = lines(slurp(path("log.jsonl")));
  ASSERT_GT(log.size(), 10u);
  // Line 3: more probes than any prober sends (kept, warned); line 6: a
  // line over the 1 MiB limit (bad, skipped).
  log.insert(log.begin() + 2,
             R"({"t": 1.0, "kind": "probe", "src": "host1:eth0", "dst": "host9:eth0", )"
             R"("flow": 1, "sent": 4294967295, "lost": 0})");
  log.insert(log.begin() + 5, R"({"t": 1.0, "kind": "lldp", "port": "host1:eth0", "neighbor": ")" +
                                  std::string(2 << 20, 'x') + "\"}");
  std::string text;
  for (const auto& l : log) text += l + "\n";
  write("odd.jsonl", text);
  Outcome r = run("replay --topology " + topo() + " --telemetry " + path("odd.jsonl") + " --json");
  EXPECT_THAT(r.err, HasSubstr(path("odd.jsonl") + ":3: warning: implausible record: probe: "
                                                   "'sent' 4294967295 is more than"));
  EXPECT_THAT(r.err, HasSubstr(path("odd.jsonl") + ":6: bad record: line longer than 1048576"));
  EXPECT_THAT(r.err, HasSubstr("1 bad,"));
  EXPECT_THAT(r.err, HasSubstr(", 1 implausible)"));
  auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["ingest"]["implausible"], 1);
  EXPECT_EQ(report["ingest"]["bad"], 1);
}

TEST_F(ReplayCliTest, StrictStopsAtTheFirstBadLineWithExit2) {
  simulate("gray_loss.yaml", 60);
  std::vector<std::string> log = lines(slurp(path("log.jsonl")));
  log.insert(log.begin() + 2, "not json at all");              // line 3
  log.insert(log.begin() + 5, R"({"t": 2, "kind": "lldp"})");  // line 6: no port
  std::string text;
  for (const auto& l : log) text += l + "\n";
  write("bad.jsonl", text);
  Outcome r =
      run("replay --strict --json --topology " + topo() + " --telemetry " + path("bad.jsonl"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(path("bad.jsonl") + ":3: bad record"));
  EXPECT_THAT(r.err, Not(HasSubstr(":6:")));
  EXPECT_THAT(r.err, HasSubstr("--strict"));
  EXPECT_EQ(r.out, "");
  // Without --strict the same file replays, skipping both.
  Outcome lenient = run("replay --json --topology " + topo() + " --telemetry " + path("bad.jsonl"));
  EXPECT_EQ(lenient.code, 0) << lenient.err;  // the fault starts at 120: not yet
  EXPECT_THAT(lenient.err, HasSubstr(":6: bad record"));
  EXPECT_THAT(lenient.err, HasSubstr("2 bad"));
}

// Issue #15: one record stamped t=4000 (or 1e300) in a 240 s log moved the
// log's clock there, every later record became too_late and the fault went
// unfound, with exit 0 and "0 late". Records far beyond the newest t are
// now skipped and counted as future (--strict: fatal, naming the line);
// old records stay accepted and counted as too late (formats.md §2).
TEST_F(ReplayCliTest, ARecordFromTheFutureIsSkippedAndCountedNotFollowed) {
  simulate("gray_loss.yaml", 240);
  std::vector<std::string> log = lines(slurp(path("log.jsonl")));
  ASSERT_GT(log.size(), 1000u);
  const size_t at = log.size() / 3;  // about t=80, before the fault's onset at 120
  log.insert(log.begin() + at,
             R"({"t": 4000, "kind": "port", "port": "leaf1:swp1", "oper_up": true})");
  log.insert(log.begin() + 2 * at,
             R"({"t": 1e300, "kind": "lldp", "port": "leaf1:swp1", "neighbor": "x"})");
  log.push_back(R"({"t": 10, "kind": "port", "port": "leaf1:swp1", "rx_packets": 5})");
  std::string text;
  for (const auto& l : log) text += l + "\n";
  write("future.jsonl", text);

  Outcome r =
      run("replay --topology " + topo() + " --telemetry " + path("future.jsonl") + " --json");
  EXPECT_EQ(r.code, 1) << r.err;  // the fault is still open at 240
  const std::string file = path("future.jsonl");
  EXPECT_THAT(r.err, HasSubstr(file + ":" + std::to_string(at + 1) +
                               ": record from the future: port: 't' 4000 is "));
  EXPECT_THAT(r.err, HasSubstr(file + ":" + std::to_string(2 * at + 1) +
                               ": record from the future: lldp: 't' 1e+300 is "));
  EXPECT_THAT(r.err, HasSubstr("0 bad, 0 unknown kind, 2 future, 0 late, 1 too late)"));
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["ingest"]["future"], 2);
  EXPECT_EQ(report["ingest"]["too_late"], 1);
  EXPECT_EQ(report["ingest"]["records"], log.size() - 2);
  EXPECT_EQ(report["generated_at"], 240.0);
  write("report.json", r.out);
  Outcome score = run("score --truth " + path("truth.json") + " --report " + path("report.json") +
                      " --topology " + topo() + " --min-precision 1 --min-recall 1");
  EXPECT_EQ(score.code, 0) << score.out << score.err;

  // The table form says the same on stderr; --strict stops at the first one.
  Outcome table = run("replay --topology " + topo() + " --telemetry " + file);
  EXPECT_THAT(table.err, HasSubstr("2 future, 0 late, 1 too late)"));
  Outcome strict = run("replay --strict --json --topology " + topo() + " --telemetry " + file);
  EXPECT_EQ(strict.code, 2);
  EXPECT_EQ(strict.out, "");
  EXPECT_THAT(strict.err, HasSubstr("stopped at " + file + ":" + std::to_string(at + 1)));
  EXPECT_THAT(strict.err, Not(HasSubstr(":" + std::to_string(2 * at + 1) + ":")));
}

TEST_F(ReplayCliTest, ExitCodeIs0OnTheBaselineAnd1WhileAFaultIsOpen) {
  simulate("baseline.yaml", 240);
  Outcome base =
      run("replay --topology " + topo() + " --telemetry " + path("log.jsonl") + " --json");
  EXPECT_EQ(base.code, 0) << base.err << base.out;
  auto j = nlohmann::json::parse(base.out);
  for (const auto& i : j["incidents"]) EXPECT_TRUE(i["localized_at"].is_null()) << i.dump();
  write("report.json", base.out);
  EXPECT_EQ(run("score --truth " + path("truth.json") + " --report " + path("report.json") +
                " --min-precision 1 --min-recall 1")
                .code,
            0);
  // The table form has the same exit code.
  EXPECT_EQ(run("replay --topology " + topo() + " --telemetry " + path("log.jsonl")).code, 0);

  simulate("dead_responder.yaml", 240);
  Outcome dead = run("replay --topology " + topo() + " --telemetry " + path("log.jsonl"));
  EXPECT_EQ(dead.code, 1) << dead.err << dead.out;
  EXPECT_THAT(dead.out, HasSubstr("host_unreachable"));

  // Bad usage is 2.
  EXPECT_EQ(run("replay --telemetry " + path("log.jsonl")).code, 2);
  EXPECT_EQ(run("replay --topology " + topo() + " --telemetry " + path("missing.jsonl")).code, 2);
}

// The false-page budget sets the evidence a page needs: a tighter budget
// pages later (never sooner) on the same log, one beyond what the fault
// gives never pages, and nonsense is refused.
TEST_F(ReplayCliTest, TheFalsePageBudgetSetsTheEvidenceAPageNeeds) {
  simulate("gray_loss.yaml", 240);
  const std::string log = " --topology " + topo() + " --telemetry " + path("log.jsonl");
  for (const char* bad : {"0", "1", "-1e-8", "nan"}) {
    Outcome r = run("replay" + log + " --false-page-budget " + bad);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("false-page budget")) << bad;
  }
  for (const char* bad : {"-1", "nan", "inf"}) {
    Outcome r = run("replay" + log + " --busy-host-max=" + bad);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("busy-host-max")) << bad;
  }
  auto firstPage = [&](const std::string& budget) {
    Outcome r = run("replay" + log + " --json --false-page-budget " + budget);
    EXPECT_NE(r.code, 2) << r.err;  // 1 while a fault is open, 0 when none paged
    double first = INFINITY;
    const auto report = nlohmann::json::parse(r.out);
    for (const auto& i : report["incidents"]) {
      if (i.value("kind", "") == "link_loss" && !i["localized_at"].is_null()) {
        first = std::min(first, i["localized_at"].get<double>());
      }
    }
    return first;
  };
  // 1e-300 needs ln(720e300) ~ 698 nats, more than this log's fault gives.
  const double loose = firstPage("1e-4"), usual = firstPage("1e-8"), tight = firstPage("1e-300");
  ASSERT_TRUE(std::isfinite(loose));
  EXPECT_LE(loose, usual);
  EXPECT_LT(usual, tight);
}

// The horizons are settings, checked before any work; a localized loss
// incident states a 90 % interval around its estimate.
TEST_F(ReplayCliTest, HorizonsAreSettingsAndLossComesWithAnInterval) {
  simulate("gray_loss.yaml", 240);
  const std::string log = " --topology " + topo() + " --telemetry " + path("log.jsonl");
  Outcome bad = run("replay" + log + " --horizon 7");
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("horizon must be"));
  bad = run("replay" + log + " --horizon 60 --short-horizon 90");
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("short horizon"));
  EXPECT_EQ(run("replay" + log + " --resolve-after nan").code, 2);

  Outcome r = run("replay" + log + " --json --horizon 120 --short-horizon 20");
  ASSERT_EQ(r.code, 1) << r.err;  // the fault is still on at the end
  int with_interval = 0;
  const auto report = nlohmann::json::parse(r.out);
  for (const auto& i : report["incidents"]) {
    if (i.value("kind", "") != "link_loss" || i["localized_at"].is_null()) continue;
    ASSERT_TRUE(i.contains("loss_interval")) << i.dump();
    const double lo = i["loss_interval"][0], hi = i["loss_interval"][1];
    const double x = i["loss_ratio"];
    EXPECT_LE(lo, x);
    EXPECT_GE(hi, x);
    EXPECT_LT(lo, hi);
    ++with_interval;
  }
  EXPECT_GE(with_interval, 1) << r.out;
}

}  // namespace
