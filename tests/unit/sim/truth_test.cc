#include "sim/truth.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace netdiag::sim {
namespace {

using nlohmann::json;

Truth sample() {
  Truth t;
  t.seed = 1;
  t.ecmp_seed = 18446744073709551615ULL;  // full 64-bit range survives
  t.fabric = "rail";
  t.start = 0;
  t.end = 600;
  TruthItem f1;
  f1.id = "f1";
  f1.kind = "link_loss";
  f1.link = "leaf1:swp49->spine2:swp1";
  f1.onset = 120;
  f1.end = 480.5;
  f1.loss = 0.01;
  f1.note = "uplink of leaf1";
  TruthItem f2;
  f2.id = "f2";
  f2.kind = "link_latency";
  f2.link = "spine2:swp3->leaf3:swp50";
  f2.onset = 200;
  f2.latency_us = 250;  // end stays null: past the end of the run
  t.faults = {f1, f2};
  TruthItem t1;
  t1.id = "t1";
  t1.kind = "congestion";
  t1.link = "leaf2:swp49->spine1:swp2";
  t1.onset = 10;
  t1.end = 20;
  TruthItem t2;
  t2.id = "t2";
  t2.kind = "host_unreachable";
  t2.node = "h3";
  t2.cause = "reboot";
  t2.onset = 30;
  t2.end = 90;
  TruthItem t3;
  t3.id = "t3";
  t3.kind = "miscabling";
  t3.ports = {"leaf1:swp1", "leaf1:swp2"};
  t3.onset = 0;
  t.traps = {t1, t2, t3};
  return t;
}

void expectSameItem(const TruthItem& a, const TruthItem& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.link, b.link);
  EXPECT_EQ(a.node, b.node);
  EXPECT_EQ(a.ports, b.ports);
  EXPECT_EQ(a.cause, b.cause);
  EXPECT_EQ(a.onset, b.onset);
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.latency_us, b.latency_us);
  EXPECT_EQ(a.note, b.note);
}

TEST(TruthJson, RoundTrip) {
  Truth in = sample();
  std::string text = truthToJson(in);
  std::string error;
  auto out = truthFromJson(text, error);
  ASSERT_TRUE(out) << error;
  EXPECT_EQ(out->seed, in.seed);
  EXPECT_EQ(out->ecmp_seed, in.ecmp_seed);
  EXPECT_EQ(out->fabric, in.fabric);
  EXPECT_EQ(out->start, in.start);
  EXPECT_EQ(out->end, in.end);
  ASSERT_EQ(out->faults.size(), 2u);
  ASSERT_EQ(out->traps.size(), 3u);
  for (size_t i = 0; i < 2; ++i) expectSameItem(out->faults[i], in.faults[i]);
  for (size_t i = 0; i < 3; ++i) expectSameItem(out->traps[i], in.traps[i]);
  // Writing it again gives the same text: nothing is lost or reordered.
  EXPECT_EQ(truthToJson(*out), text);
}

TEST(TruthJson, WritesNullEndAndTheDocumentedShape) {
  json j = json::parse(truthToJson(sample()));
  EXPECT_TRUE(j["faults"][1]["end"].is_null());
  EXPECT_EQ(j["faults"][0]["link"], "leaf1:swp49->spine2:swp1");
  EXPECT_EQ(j["traps"][1]["cause"], "reboot");
  EXPECT_EQ(j["traps"][2]["ports"].size(), 2u);
  EXPECT_FALSE(j["traps"][2].contains("link"));
}

TEST(TruthJson, EmptyRunParses) {
  std::string error;
  auto t = truthFromJson(R"({"start": 0, "end": 60, "faults": [], "traps": []})", error);
  ASSERT_TRUE(t) << error;
  EXPECT_TRUE(t->faults.empty());
  EXPECT_EQ(t->seed, 0u);
  EXPECT_FALSE(t->traps.size());
}

// Each malformed truth fails with a message that names the field.
struct Malformed {
  const char* text;
  const char* expected;  // substring of the error
};

class TruthMalformed : public ::testing::TestWithParam<Malformed> {};

TEST_P(TruthMalformed, ErrorNamesTheField) {
  std::string error;
  auto t = truthFromJson(GetParam().text, error);
  EXPECT_FALSE(t);
  EXPECT_NE(error.find(GetParam().expected), std::string::npos) << "error was: " << error;
}

#define HEAD R"("start": 0, "end": 600, )"
#define FAULT(extra) R"({"id": "f1", "kind": "link_loss", "link": "a:p->b:q", "onset": 1)" extra "}"

INSTANTIATE_TEST_SUITE_P(
    Cases, TruthMalformed,
    ::testing::Values(
        Malformed{"{", "not valid JSON"}, Malformed{"[]", "expected a JSON object"},
        Malformed{R"({"end": 600, "faults": [], "traps": []})", "start: missing"},
        Malformed{R"({"start": "0", "end": 600, "faults": [], "traps": []})",
                  "start: expected a number, got string"},
        Malformed{R"({"start": 0, "end": 600, "traps": []})", "faults: missing"},
        Malformed{"{" HEAD R"("faults": {}, "traps": []})", "faults: expected an array"},
        Malformed{"{" HEAD R"("seed": -1, "faults": [], "traps": []})",
                  "seed: expected a non-negative"},
        Malformed{"{" HEAD R"("faults": [)" FAULT("") "," FAULT(
                      R"(, "id": "f2", "onset": "x")") R"(], "traps": []})",
                  "faults[1].onset: expected a number, got string"},
        Malformed{"{" HEAD
                  R"("faults": [{"id": "f1", "kind": "link_loss", "onset": 1}], "traps": []})",
                  "faults[0].link: missing"},
        Malformed{
            "{" HEAD
            R"("faults": [{"id": "f1", "kind": "link_loss", "link": "a:p-b:q", "onset": 1}], "traps": []})",
            "faults[0].link: 'a:p-b:q' is not a directed link"},
        Malformed{
            "{" HEAD
            R"("faults": [{"id": "f1", "kind": "congestion", "link": "a:p->b:q", "onset": 1}], "traps": []})",
            "faults[0].kind: 'congestion' is not a link fault kind"},
        Malformed{
            "{" HEAD
            R"("faults": [{"kind": "link_loss", "link": "a:p->b:q", "onset": 1}], "traps": []})",
            "faults[0].id: missing"},
        Malformed{"{" HEAD R"("faults": [)" FAULT(R"(, "end": 0.5)") R"(], "traps": []})",
                  "faults[0].end: ends (0.5) before its onset (1.0)"},
        Malformed{
            "{" HEAD R"("faults": [)" FAULT(
                "") R"(], "traps": [{"id": "f1", "kind": "congestion", "link": "a:p->b:q", "onset": 1}]})",
            "traps[0].id: duplicate id 'f1'"},
        Malformed{
            "{" HEAD
            R"("faults": [], "traps": [{"id": "t1", "kind": "host_unreachable", "onset": 1}]})",
            "traps[0].node: missing"},
        Malformed{"{" HEAD
                  R"("faults": [], "traps": [{"id": "t1", "kind": "congestion", "onset": 1}]})",
                  "traps[0].link: missing"},
        Malformed{
            "{" HEAD
            R"("faults": [], "traps": [{"id": "t1", "kind": "miscabling", "ports": [], "onset": 1}]})",
            "traps[0].ports: missing or empty"},
        Malformed{
            "{" HEAD
            R"("faults": [], "traps": [{"id": "t1", "kind": "miscabling", "ports": ["a:p", 3], "onset": 1}]})",
            "traps[0].ports[1]: expected a port ref"},
        Malformed{
            "{" HEAD
            R"("faults": [], "traps": [{"id": "t1", "kind": "miscabling", "ports": ["a:p", "b"], "onset": 1}]})",
            "traps[0].ports[1]: 'b' is not a port ref"},
        Malformed{
            "{" HEAD
            R"("faults": [], "traps": [{"id": "t1", "kind": "host_unreachable", "node": "h1", "cause": 7, "onset": 1}]})",
            "traps[0].cause: expected a string, got number"}));

#undef HEAD
#undef FAULT

}  // namespace
}  // namespace netdiag::sim
