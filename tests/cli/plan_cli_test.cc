// `netdiag plan`: the default plan meets the coverage target, raising the
// rate within the cap where the fabric needs it, and says so.

#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

namespace netdiag::testing {
namespace {

using nlohmann::json;

class PlanCliTest : public CliTest {
 protected:
  // The small fabric of issue #11: 3 spines x 4 leaves, 2 parallel links per
  // pair, 2 hosts per leaf (64 directed links).
  std::string issueFabric() {
    std::string file = path("ls.yaml");
    Outcome g =
        run("topo generate leaf-spine --spines 3 --leaves 4 --hosts-per-leaf 2 "
            "--parallel 2 -o " +
            file);
    EXPECT_EQ(g.code, 0) << g.err;
    return file;
  }
};

TEST_F(PlanCliTest, DefaultPlanRaisesTheRateWithinTheCapAndMeetsTheTarget) {
  Outcome r = run("plan " + issueFabric() + " --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["coverage"]["directed_links"], 64);
  EXPECT_EQ(j["coverage"]["below_target"], 0);
  EXPECT_EQ(j["sizing"]["raised"], true);
  EXPECT_EQ(j["sizing"]["capped"], false);
  EXPECT_GT(j["sizing"]["below_target_at_base"].get<int>(), 0);
  const double served = j["sizing"]["served_probes_per_second"];
  EXPECT_GT(served, 100);
  EXPECT_LE(served, j["sizing"]["max_probes_per_second"].get<double>());
  EXPECT_EQ(j["budget"]["probes_per_second"].get<double>(), served);
  EXPECT_EQ(j["budget"]["base_probes_per_second"], 100);

  Outcome text = run("plan " + issueFabric());
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("coverage ok"), std::string::npos) << text.out;
}

TEST_F(PlanCliTest, BelowTheNeededRateTheCapIsReportedAndTheRunIsAFinding) {
  Outcome r = run("plan " + issueFabric() + " --json --max-probes-per-second 120");
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["sizing"]["capped"], true);
  EXPECT_EQ(j["sizing"]["served_probes_per_second"], 120);
  EXPECT_GT(j["sizing"]["needed_probes_per_second"].get<double>(), 120);
  EXPECT_GT(j["coverage"]["below_target"].get<int>(), 0);
}

TEST_F(PlanCliTest, ACapAtTheRatePlansAtExactlyThatRate) {
  Outcome r = run("plan " + issueFabric() + " --json --max-probes-per-second 100");
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["sizing"]["raised"], false);
  EXPECT_EQ(j["budget"]["probes_per_second"], 100);
  EXPECT_EQ(j["coverage"]["below_target"], j["sizing"]["below_target_at_base"]);
}

TEST_F(PlanCliTest, TheE2eFabricMeetsTheTargetAtTheBaseRate) {
  Outcome r = run("plan " + std::string(NETDIAG_SOURCE_DIR) + "/tests/e2e/fabric.yaml --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["sizing"]["raised"], false);
  EXPECT_EQ(j["coverage"]["below_target"], 0);
}

}  // namespace
}  // namespace netdiag::testing
