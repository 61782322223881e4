#include "sim/score.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace netdiag::sim {
namespace {

using nlohmann::json;

constexpr const char* kUplink = "leaf1:swp49->spine2:swp1";
constexpr const char* kUplinkRev = "spine2:swp1->leaf1:swp49";
constexpr const char* kOther = "leaf2:swp49->spine1:swp2";
constexpr const char* kHealthy = "leaf3:swp50->spine1:swp3";
constexpr const char* kH3Access = "h3:eth0->leaf1:swp3";
constexpr const char* kH3AccessRev = "leaf1:swp3->h3:eth0";

TruthItem fault(const std::string& id, const std::string& link, double onset,
                std::optional<double> end = std::nullopt, const std::string& kind = "link_loss") {
  TruthItem f;
  f.id = id;
  f.kind = kind;
  f.link = link;
  f.onset = onset;
  f.end = end;
  return f;
}

TruthItem congestion(const std::string& id, const std::string& link, double onset) {
  TruthItem t;
  t.id = id;
  t.kind = "congestion";
  t.link = link;
  t.onset = onset;
  return t;
}

TruthItem unreachable(const std::string& id, const std::string& node, const std::string& cause,
                      double onset) {
  TruthItem t;
  t.id = id;
  t.kind = "host_unreachable";
  t.node = node;
  t.cause = cause;
  t.onset = onset;
  return t;
}

TruthItem miscabling(const std::string& id, std::vector<std::string> ports, double onset) {
  TruthItem t;
  t.id = id;
  t.kind = "miscabling";
  t.ports = std::move(ports);
  t.onset = onset;
  return t;
}

Truth truthOf(std::vector<TruthItem> faults, std::vector<TruthItem> traps = {}) {
  Truth t;
  t.end = 600;
  t.faults = std::move(faults);
  t.traps = std::move(traps);
  return t;
}

// Incidents are written as JSON and parsed, so every test also exercises
// the report parser on the contract's shape.
json inc(const std::string& id, const std::string& kind, const std::string& link,
         std::optional<double> localized, double opened = -1) {
  json j = {{"id", id},
            {"kind", kind},
            {"opened_at", opened >= 0 ? opened : (localized ? *localized - 5 : 0.0)},
            {"localized_at", localized ? json(*localized) : json(nullptr)},
            {"resolved_at", nullptr},
            {"confidence", 0.9},
            {"loss_ratio", 0.01},
            {"evidence", json::object()}};
  if (!link.empty()) j["link"] = link;
  return j;
}

json nodeInc(const std::string& id, const std::string& node, double localized) {
  json j = inc(id, "host_unreachable", "", localized);
  j["node"] = node;
  return j;
}

json portsInc(const std::string& id, std::vector<std::string> ports, double localized) {
  json j = inc(id, "miscabling", "", localized);
  j["ports"] = ports;
  return j;
}

IncidentReport reportOf(std::vector<json> incidents) {
  json root = {{"generated_at", 600.0}, {"incidents", incidents}};
  std::string error;
  auto r = reportFromJson(root.dump(), error);
  EXPECT_TRUE(r) << error;
  return r.value_or(IncidentReport{});
}

ScoreResult score(const Truth& truth, std::vector<json> incidents,
                  const topology::Topology* topo = nullptr) {
  return scoreReport(truth, reportOf(std::move(incidents)), topo);
}

// ---- link faults -------------------------------------------------------------

TEST(Score, ExactLinkIsFoundWithTheRightDirection) {
  auto r = score(truthOf({fault("f1", kUplink, 100)}), {inc("i1", "link_loss", kUplink, 130, 110)});
  ASSERT_EQ(r.items.size(), 1u);
  const ItemScore& row = r.items[0];
  EXPECT_TRUE(row.found);
  EXPECT_EQ(row.found_by, "i1");
  EXPECT_EQ(row.direction, Direction::kExact);
  EXPECT_DOUBLE_EQ(*row.time_to_localize, 30);
  EXPECT_DOUBLE_EQ(*row.open_delay, 10);
  EXPECT_EQ(r.found, 1u);
  EXPECT_TRUE(r.false_positives.empty());
  EXPECT_DOUBLE_EQ(r.precision, 1);
  EXPECT_DOUBLE_EQ(r.recall, 1);
  EXPECT_DOUBLE_EQ(r.f1, 1);
  EXPECT_DOUBLE_EQ(*r.direction.accuracy(), 1);
  EXPECT_DOUBLE_EQ(*r.time_to_localize.median, 30);
}

TEST(Score, AnyLinkKindFindsAnyLinkFault) {
  auto r = score(truthOf({fault("f1", kUplink, 100, std::nullopt, "link_corruption")}),
                 {inc("i1", "link_loss", kUplink, 130)});
  EXPECT_TRUE(r.items[0].found);
  EXPECT_EQ(r.items[0].found_by_kind, "link_loss");
}

TEST(Score, ReversedDirectionIsFoundButDirectionIsWrong) {
  auto r = score(truthOf({fault("f1", kUplink, 100)}), {inc("i1", "link_loss", kUplinkRev, 130)});
  EXPECT_TRUE(r.items[0].found);
  EXPECT_EQ(r.items[0].direction, Direction::kReversed);
  EXPECT_DOUBLE_EQ(r.precision, 1);
  EXPECT_DOUBLE_EQ(r.recall, 1);
  EXPECT_EQ(r.direction.reversed, 1u);
  EXPECT_DOUBLE_EQ(*r.direction.accuracy(), 0);
}

TEST(Score, BothDirectionsIsCreditedButCountedApart) {
  json i1 = inc("i1", "link_loss", kUplinkRev, 130);
  i1["both_directions"] = true;
  json i2 = inc("i2", "link_loss", kOther, 140);
  auto r = score(truthOf({fault("f1", kUplink, 100), fault("f2", kOther, 100)}), {i1, i2});
  EXPECT_EQ(r.items[0].direction, Direction::kBoth);
  EXPECT_EQ(r.items[1].direction, Direction::kExact);
  EXPECT_EQ(r.direction.found, 2u);
  EXPECT_EQ(r.direction.both, 1u);
  EXPECT_EQ(r.direction.exact, 1u);
  EXPECT_DOUBLE_EQ(*r.direction.accuracy(), 1.0);
  EXPECT_DOUBLE_EQ(*r.direction.strictAccuracy(), 0.5);
}

TEST(Score, BeforeOnsetIsAFalsePositive) {
  auto r = score(truthOf({fault("f1", kUplink, 100)}), {inc("i1", "link_loss", kUplink, 99.5)});
  EXPECT_FALSE(r.items[0].found);
  ASSERT_EQ(r.false_positives.size(), 1u);
  EXPECT_EQ(r.false_positives[0].incident_id, "i1");
  EXPECT_NE(r.false_positives[0].reason.find("before the onset"), std::string::npos);
  EXPECT_DOUBLE_EQ(r.precision, 0);
  EXPECT_DOUBLE_EQ(r.recall, 0);
  EXPECT_DOUBLE_EQ(r.f1, 0);
}

TEST(Score, AtOnsetFinds) {
  auto r = score(truthOf({fault("f1", kUplink, 100)}), {inc("i1", "link_loss", kUplink, 100)});
  EXPECT_TRUE(r.items[0].found);
  EXPECT_DOUBLE_EQ(*r.items[0].time_to_localize, 0);
}

TEST(Score, AfterTheEndStillFindsAndIsMarked) {
  auto r = score(truthOf({fault("f1", kUplink, 100, 200)}), {inc("i1", "link_down", kUplink, 250)});
  EXPECT_TRUE(r.items[0].found);
  EXPECT_TRUE(r.items[0].after_end);
  EXPECT_TRUE(r.false_positives.empty());
}

TEST(Score, HealthyLinkIsAFalsePositive) {
  auto r = score(truthOf({fault("f1", kUplink, 100)}),
                 {inc("i1", "link_loss", kUplink, 130), inc("i2", "link_loss", kHealthy, 130)});
  ASSERT_EQ(r.false_positives.size(), 1u);
  EXPECT_EQ(r.false_positives[0].incident_id, "i2");
  EXPECT_EQ(r.false_positives[0].target, kHealthy);
  EXPECT_NE(r.false_positives[0].reason.find("healthy link"), std::string::npos);
  EXPECT_DOUBLE_EQ(r.precision, 0.5);
  EXPECT_DOUBLE_EQ(r.recall, 1);
  EXPECT_NEAR(r.f1, 2 * 0.5 / 1.5, 1e-12);
}

TEST(Score, LinkIncidentOnATrapLinkIsAFalsePositive) {
  auto r = score(truthOf({}, {congestion("t1", kOther, 50)}), {inc("i1", "link_loss", kOther, 60)});
  EXPECT_FALSE(r.items[0].found);
  ASSERT_EQ(r.false_positives.size(), 1u);
  EXPECT_NE(r.false_positives[0].reason.find("trap t1"), std::string::npos);
}

// ---- traps --------------------------------------------------------------------

TEST(Score, CongestionTrapFoundOnItsLinkEitherDirection) {
  json reversed = inc("i1", "congestion", "spine1:swp2->leaf2:swp49", 60);
  auto r = score(truthOf({}, {congestion("t1", kOther, 50)}), {reversed});
  EXPECT_TRUE(r.items[0].found);
  EXPECT_EQ(r.items[0].direction, Direction::kNotApplicable);
  EXPECT_EQ(r.traps_found, 1u);
  EXPECT_DOUBLE_EQ(r.trap_recall, 1);
}

TEST(Score, CongestionOnAnotherLinkIsFalseWithoutALinkMatches) {
  auto r = score(truthOf({}, {congestion("t1", kOther, 50)}),
                 {inc("i1", "congestion", kHealthy, 60), inc("i2", "congestion", "", 70)});
  ASSERT_EQ(r.false_positives.size(), 1u);
  EXPECT_EQ(r.false_positives[0].incident_id, "i1");
  EXPECT_EQ(r.items[0].found_by, "i2");
}

TEST(Score, HostUnreachableFoundByNode) {
  auto r = score(truthOf({}, {unreachable("t1", "h3", "dead_responder", 50)}),
                 {nodeInc("i1", "h4", 60), nodeInc("i2", "h3", 61)});
  EXPECT_TRUE(r.items[0].found);
  EXPECT_EQ(r.items[0].found_by, "i2");
  ASSERT_EQ(r.false_positives.size(), 1u);
  EXPECT_NE(r.false_positives[0].reason.find("h4"), std::string::npos);
}

TEST(Score, RebootFoundByLinkDownOnItsAccessLink) {
  auto r = score(truthOf({}, {unreachable("t1", "h3", "reboot", 50)}),
                 {inc("i1", "link_down", kH3AccessRev, 55)});
  EXPECT_TRUE(r.items[0].found);
  EXPECT_EQ(r.items[0].found_by_kind, "link_down");
  EXPECT_TRUE(r.false_positives.empty());
  EXPECT_EQ(r.direction.found, 0u);  // direction is for link faults only
}

TEST(Score, RebootIsNotFoundByOtherLinkKinds) {
  auto r = score(truthOf({}, {unreachable("t1", "h3", "reboot", 50)}),
                 {inc("i1", "link_loss", kH3Access, 55)});
  EXPECT_FALSE(r.items[0].found);
  ASSERT_EQ(r.false_positives.size(), 1u);
  EXPECT_NE(r.false_positives[0].reason.find("only link_down"), std::string::npos);
}

TEST(Score, DeadResponderIsNotFoundByLinkDownOnItsAccessLink) {
  auto r = score(truthOf({}, {unreachable("t1", "h3", "dead_responder", 50)}),
                 {inc("i1", "link_down", kH3Access, 55)});
  EXPECT_FALSE(r.items[0].found);
  ASSERT_EQ(r.false_positives.size(), 1u);
  EXPECT_NE(r.false_positives[0].reason.find("dead_responder"), std::string::npos);
  EXPECT_DOUBLE_EQ(r.precision, 0);
}

TEST(Score, MiscablingFoundViaOnePort) {
  auto r =
      score(truthOf({}, {miscabling("t1", {"leaf1:swp1", "leaf1:swp2"}, 0)}),
            {portsInc("i1", {"leaf9:swp7"}, 20), portsInc("i2", {"leaf9:swp7", "leaf1:swp2"}, 30)});
  EXPECT_TRUE(r.items[0].found);
  EXPECT_EQ(r.items[0].found_by, "i2");
  ASSERT_EQ(r.false_positives.size(), 1u);
  EXPECT_EQ(r.false_positives[0].incident_id, "i1");
}

TEST(Score, TrapsHaveNoTimeCondition) {
  // The contract puts an onset condition on link faults only.
  auto r =
      score(truthOf({}, {congestion("t1", kOther, 50)}), {inc("i1", "congestion", kOther, 40)});
  EXPECT_TRUE(r.items[0].found);
  EXPECT_DOUBLE_EQ(*r.items[0].time_to_localize, -10);
}

TEST(Score, KindWithNothingInTheTruthIsAFalsePositive) {
  auto r = score(truthOf({fault("f1", kUplink, 100)}),
                 {inc("i1", "link_loss", kUplink, 130), inc("i2", "brownout", kUplink, 130)});
  ASSERT_EQ(r.false_positives.size(), 1u);
  EXPECT_NE(r.false_positives[0].reason.find("brownout"), std::string::npos);
}

// ---- duplicates, ordering, several faults ---------------------------------------

TEST(Score, DuplicatesAreNeitherFoundNorFalse) {
  json dup_rev = inc("i3", "link_flap", kUplinkRev, 125);
  auto r =
      score(truthOf({fault("f1", kUplink, 100)}),
            {inc("i2", "link_loss", kUplink, 140), inc("i1", "link_loss", kUplink, 130), dup_rev});
  // The first decision wins even though it is listed last.
  EXPECT_EQ(r.items[0].found_by, "i3");
  EXPECT_EQ(r.items[0].direction, Direction::kReversed);
  EXPECT_DOUBLE_EQ(*r.items[0].time_to_localize, 25);
  EXPECT_EQ(r.items[0].duplicates, 2u);
  EXPECT_EQ(r.duplicates, 2u);
  EXPECT_EQ(r.found, 1u);
  EXPECT_TRUE(r.false_positives.empty());
  EXPECT_DOUBLE_EQ(r.precision, 1);
}

TEST(Score, NonLocalizedIncidentsAreIgnored) {
  auto r =
      score(truthOf({fault("f1", kUplink, 100)}), {inc("i1", "link_loss", kHealthy, std::nullopt),
                                                   inc("i2", "link_loss", kUplink, std::nullopt)});
  EXPECT_EQ(r.incidents, 2u);
  EXPECT_EQ(r.positives, 0u);
  EXPECT_EQ(r.not_localized, 2u);
  EXPECT_TRUE(r.false_positives.empty());
  EXPECT_FALSE(r.items[0].found);
}

TEST(Score, SeveralFaultsOnOneLinkAtDifferentTimes) {
  Truth t = truthOf({fault("f1", kUplink, 100, 200), fault("f2", kUplink, 300, 400)});
  // 150 -> f1; 250 -> f1 again (latest onset <= 250); 350 -> f2; 360 -> f2 dup.
  auto r =
      score(t, {inc("i1", "link_loss", kUplink, 150), inc("i2", "link_loss", kUplink, 250),
                inc("i3", "link_down", kUplinkRev, 350), inc("i4", "link_loss", kUplink, 360)});
  EXPECT_EQ(r.items[0].found_by, "i1");
  EXPECT_EQ(r.items[0].duplicates, 1u);
  EXPECT_EQ(r.items[1].found_by, "i3");
  EXPECT_EQ(r.items[1].duplicates, 1u);
  EXPECT_DOUBLE_EQ(*r.items[1].time_to_localize, 50);
  EXPECT_DOUBLE_EQ(r.recall, 1);
  EXPECT_DOUBLE_EQ(r.precision, 1);
}

TEST(Score, LateIncidentDoesNotClaimAnOlderUnfoundFault) {
  Truth t = truthOf({fault("f1", kUplink, 100, 200), fault("f2", kUplink, 300, 400)});
  auto r = score(t, {inc("i1", "link_loss", kUplink, 350), inc("i2", "link_loss", kUplink, 360)});
  EXPECT_FALSE(r.items[0].found);
  EXPECT_EQ(r.items[1].duplicates, 1u);
  EXPECT_DOUBLE_EQ(r.recall, 0.5);
}

TEST(Score, RebootAccessLinkAlsoCarryingAFaultPrefersTheLatestOnset) {
  Truth t = truthOf({fault("f1", kH3Access, 10)}, {unreachable("t1", "h3", "reboot", 50)});
  auto r = score(t, {inc("i1", "link_down", kH3Access, 30), inc("i2", "link_down", kH3Access, 60)});
  EXPECT_EQ(r.items[0].found_by, "i1");
  EXPECT_EQ(r.items[1].found_by, "i2");
}

// ---- summary numbers ------------------------------------------------------------

TEST(Score, EmptyReportHasPrecisionOne) {
  auto r = score(truthOf({fault("f1", kUplink, 100)}, {congestion("t1", kOther, 5)}), {});
  EXPECT_DOUBLE_EQ(r.precision, 1.0);
  EXPECT_DOUBLE_EQ(r.recall, 0.0);
  EXPECT_DOUBLE_EQ(r.f1, 0.0);
  EXPECT_FALSE(r.direction.accuracy());
  EXPECT_EQ(r.time_to_localize.count, 0u);
  EXPECT_FALSE(r.time_to_localize.median);
}

TEST(Score, EmptyReportOnAHealthyRunIsPerfect) {
  auto r = score(truthOf({}), {});
  EXPECT_DOUBLE_EQ(r.precision, 1.0);
  EXPECT_DOUBLE_EQ(r.recall, 1.0);
  EXPECT_DOUBLE_EQ(r.f1, 1.0);
}

TEST(Score, RecallIsSplitAndTimesAreSummarized) {
  Truth t = truthOf({fault("f1", "a:1->b:1", 0), fault("f2", "a:2->b:2", 0),
                     fault("f3", "a:3->b:3", 0), fault("f4", "a:4->b:4", 0)},
                    {congestion("t1", kOther, 0), unreachable("t2", "h3", "reboot", 0)});
  auto r = score(t, {inc("i1", "link_loss", "a:1->b:1", 10), inc("i2", "link_loss", "a:2->b:2", 20),
                     inc("i3", "link_loss", "a:3->b:3", 40), nodeInc("i4", "h3", 5)});
  EXPECT_EQ(r.faults_found, 3u);
  EXPECT_EQ(r.traps_found, 1u);
  EXPECT_DOUBLE_EQ(r.fault_recall, 0.75);
  EXPECT_DOUBLE_EQ(r.trap_recall, 0.5);
  EXPECT_NEAR(r.recall, 4.0 / 6.0, 1e-12);
  EXPECT_EQ(r.time_to_localize.count, 3u);  // link faults only
  EXPECT_DOUBLE_EQ(*r.time_to_localize.median, 20);
  EXPECT_DOUBLE_EQ(*r.time_to_localize.p90, 36);  // 20 + 0.8 * (40 - 20)
  EXPECT_DOUBLE_EQ(*r.time_to_localize.max, 40);
}

TEST(Score, OpenDelayIsRawAndMayBeNegative) {
  auto r = score(truthOf({fault("f1", kUplink, 100)}), {inc("i1", "link_loss", kUplink, 130, 90)});
  EXPECT_DOUBLE_EQ(*r.items[0].open_delay, -10);
  EXPECT_DOUBLE_EQ(*r.open_delay.median, -10);
}

topology::Node makeNode(const std::string& name, topology::Role role) {
  topology::Node n;
  n.name = name;
  n.role = role;
  n.role_name = std::string(topology::roleName(role));
  return n;
}

TEST(Score, TopologySplitsDirectionByLinkClass) {
  using topology::Role;
  topology::Topology topo;
  auto h3 = topo.addNode(makeNode("h3", Role::kHost));
  auto leaf1 = topo.addNode(makeNode("leaf1", Role::kLeaf));
  auto spine2 = topo.addNode(makeNode("spine2", Role::kSpine));
  topo.addLink(topo.addPort(h3, "eth0"), topo.addPort(leaf1, "swp3"));
  topo.addLink(topo.addPort(leaf1, "swp49"), topo.addPort(spine2, "swp1"));
  topo.finalize();

  Truth t = truthOf(
      {fault("f1", kUplink, 0), fault("f2", kH3Access, 0), fault("f3", "ghost:p->leaf1:swp9", 0)});
  std::vector<json> incidents = {inc("i1", "link_loss", kUplink, 10),
                                 inc("i2", "link_loss", kH3AccessRev, 10),
                                 inc("i3", "link_loss", "ghost:p->leaf1:swp9", 10)};
  auto r = score(t, incidents, &topo);
  EXPECT_TRUE(r.classified);
  EXPECT_EQ(r.items[0].link_class, LinkClass::kFabric);
  EXPECT_EQ(r.items[1].link_class, LinkClass::kAccess);
  EXPECT_EQ(r.items[2].link_class, LinkClass::kUnknown);
  EXPECT_EQ(r.direction.found, 3u);
  EXPECT_EQ(r.direction_fabric.found, 1u);
  EXPECT_DOUBLE_EQ(*r.direction_fabric.accuracy(), 1);
  EXPECT_EQ(r.direction_access.found, 1u);
  EXPECT_DOUBLE_EQ(*r.direction_access.accuracy(), 0);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("ghost"), std::string::npos);

  auto unsplit = score(t, incidents);
  EXPECT_FALSE(unsplit.classified);
  EXPECT_EQ(unsplit.items[0].link_class, LinkClass::kUnknown);
}

TEST(Score, JsonOutputHasSummaryItemsAndFalsePositives) {
  auto r = score(truthOf({fault("f1", kUplink, 100)}),
                 {inc("i1", "link_loss", kUplink, 130), inc("i2", "link_loss", kHealthy, 130)});
  json j = json::parse(scoreToJson(r));
  EXPECT_DOUBLE_EQ(j["summary"]["precision"].get<double>(), 0.5);
  EXPECT_EQ(j["summary"]["faults"]["found"], 1);
  EXPECT_EQ(j["summary"]["direction"]["exact"], 1);
  EXPECT_EQ(j["items"][0]["found_by"], "i1");
  EXPECT_EQ(j["items"][0]["direction"], "exact");
  EXPECT_EQ(j["false_positives"][0]["incident"], "i2");
  EXPECT_FALSE(j["summary"]["direction"].contains("access"));
}

// ---- malformed reports ----------------------------------------------------------

struct BadReport {
  std::string text;
  std::string expected;
};

class ReportMalformed : public ::testing::TestWithParam<BadReport> {};

TEST_P(ReportMalformed, ErrorNamesTheField) {
  std::string error;
  EXPECT_FALSE(reportFromJson(GetParam().text, error));
  EXPECT_NE(error.find(GetParam().expected), std::string::npos) << "error was: " << error;
}

std::string withIncident(json incident, const char* drop = nullptr) {
  if (drop) incident.erase(drop);
  json good = inc("ok", "link_loss", kUplink, 10);
  return json{{"generated_at", 1.0}, {"incidents", {good, incident}}}.dump();
}

json with(json j, const std::string& key, json value) {
  j[key] = std::move(value);
  return j;
}

const json kGood = inc("i9", "link_loss", kUplink, 10);

INSTANTIATE_TEST_SUITE_P(
    Cases, ReportMalformed,
    ::testing::Values(
        BadReport{"not json", "not valid JSON"}, BadReport{"[1]", "expected a JSON object"},
        BadReport{R"({"incidents": []})", "generated_at: missing"},
        BadReport{R"({"generated_at": 1})", "incidents: missing"},
        BadReport{R"({"generated_at": 1, "incidents": {}})", "incidents: expected an array"},
        BadReport{withIncident(kGood, "id"), "incidents[1].id: missing"},
        BadReport{withIncident(with(kGood, "id", 5)), "incidents[1].id: expected a string"},
        BadReport{withIncident(kGood, "kind"), "incidents[1] (id i9).kind: missing"},
        BadReport{withIncident(kGood, "opened_at"), "incidents[1] (id i9).opened_at: missing"},
        BadReport{withIncident(kGood, "localized_at"),
                  "incidents[1] (id i9).localized_at: missing"},
        BadReport{withIncident(with(kGood, "localized_at", "58")),
                  "incidents[1] (id i9).localized_at: expected a number or null, got string"},
        BadReport{withIncident(with(kGood, "resolved_at", true)),
                  "incidents[1] (id i9).resolved_at: expected a number or null"},
        BadReport{withIncident(with(kGood, "confidence", "high")),
                  "incidents[1] (id i9).confidence"},
        BadReport{withIncident(kGood, "link"), "incidents[1] (id i9).link: missing"},
        BadReport{withIncident(with(kGood, "link", "leaf1:swp49-spine2:swp1")),
                  "incidents[1] (id i9).link: 'leaf1:swp49-spine2:swp1' is not a directed link"},
        BadReport{withIncident(with(kGood, "both_directions", "yes")),
                  "incidents[1] (id i9).both_directions: expected true or false"},
        BadReport{withIncident(with(kGood, "id", "ok")), "incidents[1].id: duplicate id 'ok'"},
        BadReport{withIncident(inc("i9", "host_unreachable", "", 10)),
                  "incidents[1] (id i9).node: missing"},
        BadReport{withIncident(inc("i9", "miscabling", "", 10)),
                  "incidents[1] (id i9).ports: missing or empty"},
        BadReport{withIncident(with(inc("i9", "miscabling", "", 10), "ports",
                                    json::array({"a:p", "nope"}))),
                  "incidents[1] (id i9).ports[1]: expected a port ref"}));

TEST(ReportJson, ParsesTheContractExample) {
  std::string error;
  auto r = reportFromJson(R"({"generated_at": 600.0,
 "incidents": [
   {"id": "inc-17", "kind": "link_loss", "link": "leaf1:swp49->spine2:swp1",
    "opened_at": 41.0, "localized_at": 58.0, "resolved_at": null,
    "confidence": 0.97, "loss_ratio": 0.012, "evidence": {}}
 ]})",
                          error);
  ASSERT_TRUE(r) << error;
  ASSERT_EQ(r->incidents.size(), 1u);
  const Incident& i = r->incidents[0];
  EXPECT_EQ(i.id, "inc-17");
  EXPECT_EQ(*i.localized_at, 58.0);
  EXPECT_FALSE(i.resolved_at);
  EXPECT_EQ(*i.confidence, 0.97);
  EXPECT_FALSE(i.both_directions);
  EXPECT_DOUBLE_EQ(r->generated_at, 600);
}

}  // namespace
}  // namespace netdiag::sim
