// `netdiag drain-plan` on generated fabrics: a leaf uplink of a leaf-spine
// fabric is safe (exit 0) and says how many uplinks remain; a host's only
// access link is unsafe (exit 1) and names the host; --down accounts for
// links already out, and so do the links the analyzer's open incidents
// report down (--db); bad links exit 2.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

namespace {

using netdiag::testing::CliTest;
using netdiag::testing::Outcome;
using nlohmann::json;
using ::testing::HasSubstr;

class DrainCliTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_EQ(
        run("topo generate leaf-spine --spines 8 --leaves 4 --hosts-per-leaf 2 -o " + topo()).code,
        0);
  }
  std::string topo() const { return path("fabric.yaml"); }
};

TEST_F(DrainCliTest, LeafUplinkIsSafeWithSevenOfEightLeft) {
  Outcome r = run("drain-plan --topology " + topo() + " leaf3:swp3");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("safe: leaf3 keeps 7 of 8 uplinks to the spine tier"));
  r = run("drain-plan --topology " + topo() + " leaf3:swp3 --json");
  ASSERT_EQ(r.code, 0);
  json j = json::parse(r.out);
  EXPECT_EQ(j["safe"], true);
  EXPECT_EQ(j["lower"], "leaf3");
  EXPECT_EQ(j["ecmp_width_before"], 8);
  EXPECT_EQ(j["ecmp_width_after"], 7);
  EXPECT_TRUE(j["stranded_hosts"].empty());
  // The directed form names the same link in either direction.
  const std::string link = j["link"];
  const std::string a = link.substr(0, link.find("<->")), b = link.substr(link.find("<->") + 3);
  EXPECT_EQ(run("drain-plan --topology " + topo() + " " + b + "-\\>" + a).code, 0);
}

TEST_F(DrainCliTest, SingleAccessLinkIsUnsafe) {
  Outcome r = run("drain-plan --topology " + topo() + " host1:eth0 --json");
  EXPECT_EQ(r.code, 1) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["safe"], false);
  EXPECT_EQ(j["ecmp_width_after"], 0);
  EXPECT_EQ(j["stranded_hosts"], json::array({"host1"}));
  r = run("drain-plan --topology " + topo() + " host1:eth0");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("unsafe: host1 keeps 0 of 1 links"));
}

TEST_F(DrainCliTest, LinksAlreadyDownCount) {
  // leaf3 with 7 uplinks down: draining the eighth cuts its hosts off.
  std::string args = "drain-plan --topology " + topo() + " leaf3:swp3";
  for (int p = 4; p <= 10; ++p) args += " --down leaf3:swp" + std::to_string(p);
  Outcome r = run(args + " --json");
  EXPECT_EQ(r.code, 1) << r.err << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["ecmp_width_before"], 1);
  EXPECT_EQ(j["ecmp_width_after"], 0);
  EXPECT_EQ(j["stranded_hosts"].size(), 2u);
}

// The links the analyzer's open incidents report down count as out, the
// way the analyzer's own drain advice (HTTP, /metrics) counts them: with
// leaf3's swp4 uplink down, draining swp3 leaves 6 of 7, not 7 of 8.
TEST_F(DrainCliTest, TheDatabasesLinksDownCountOutAsTheAnalyzerCountsThem) {
  auto directed = [&](const std::string& port) {
    const std::string link =
        json::parse(run("drain-plan --json --topology " + topo() + " " + port).out)["link"];
    return link.substr(0, link.find("<->")) + "->" + link.substr(link.find("<->") + 3);
  };
  const std::string down = directed("leaf3:swp4"), gray = directed("leaf3:swp3");
  write("two.yaml",
        "name: two\nduration_s: 300\nwindow_s: 5\n"
        "noise: {background_loss: 1.0e-5}\nfaults:\n"
        "  - {kind: link_down, link: \"" +
            down +
            "\", onset: 30}\n"
            "  - {kind: link_loss, link: \"" +
            gray + "\", loss: 0.03, onset: 30}\n");
  ASSERT_EQ(run("simulate --scenario " + path("two.yaml") + " --topology " + topo() +
                " --seed 3 -o " + path("log.jsonl"))
                .code,
            0);
  Outcome r = run("replay --topology " + topo() + " --telemetry " + path("log.jsonl") + " --db " +
                  path("nd.db") + " --json");
  ASSERT_NE(r.code, 2) << r.err;
  std::string gray_id;
  const json report = json::parse(r.out);
  for (const json& i : report["incidents"]) {
    if (i["link"] == gray && !i["localized_at"].is_null()) gray_id = i["id"];
  }
  ASSERT_FALSE(gray_id.empty()) << r.out;

  r = run("drain-plan --topology " + topo() + " leaf3:swp3 --json --db " + path("nd.db"));
  EXPECT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["ecmp_width_before"], 7);
  EXPECT_EQ(j["ecmp_width_after"], 6);
  ASSERT_EQ(j["out_of_service"].size(), 1u) << j.dump();
  EXPECT_EQ(j["out_of_service"][0]["why"], "reported_down");
  const std::string out_name = j["out_of_service"][0]["link"];
  EXPECT_EQ(out_name.substr(0, out_name.find("<->")), "leaf3:swp4");
  // Without the database only the topology counts.
  j = json::parse(run("drain-plan --topology " + topo() + " leaf3:swp3 --json").out);
  EXPECT_EQ(j["ecmp_width_before"], 8);
  EXPECT_TRUE(j["out_of_service"].empty());

  // explain gives the same advice for the incident.
  r = run("explain " + gray_id + " --db " + path("nd.db") + " --topology " + topo());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Drain: safe: leaf3 keeps 6 of 7 uplinks"));
  EXPECT_THAT(r.out, HasSubstr("counted out of service: " + out_name + " (reported_down)"));
  r = run("explain " + gray_id + " --db " + path("nd.db") + " --topology " + topo() + " --json");
  EXPECT_EQ(json::parse(r.out)["drain"]["ecmp_width_after"], 6) << r.out;
}

TEST_F(DrainCliTest, BadLinksExitTwo) {
  Outcome r = run("drain-plan --topology " + topo() + " leaf3:swp99");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("no port leaf3:swp99"));
  r = run("drain-plan --topology " + topo() + " leaf1:swp1-\\>spine9:swp1");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("no link"));
  r = run("drain-plan --topology " + path("missing.yaml") + " leaf3:swp3");
  EXPECT_EQ(r.code, 2);
}

}  // namespace
