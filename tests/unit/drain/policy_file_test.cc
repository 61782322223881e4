// The drain policy file: every key read, scopes inherit the analyzer-wide
// values, and bad input is an error naming the file, line and key.

#include "drain/policy_file.h"

#include <gtest/gtest.h>

#include "topology/generators.h"

namespace netdiag::drain {
namespace {

std::optional<PolicySet> parse(const std::string& text, std::string* error) {
  return parsePolicy(text, "policy.yaml", error);
}

TEST(PolicyFile, ReadsEveryKeyAndScopesInherit) {
  std::string error;
  auto p = parse(R"(
scopes:
  "pod 3": {mode: approve, max_drained_per_scope: 2}
  spine-superspine:
    mode: advise
mode: auto
min_confidence: 0.9999
hold_passes: 5
min_width_share: 0.75
max_drained_per_scope: 1
max_drains_per_hour: 2
max_open_incidents: 4
restore_clean_s: 120
)",
                 &error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->all.mode, Mode::kAuto);
  EXPECT_DOUBLE_EQ(p->all.min_confidence, 0.9999);
  EXPECT_EQ(p->all.hold_passes, 5);
  EXPECT_DOUBLE_EQ(p->all.min_width_share, 0.75);
  EXPECT_EQ(p->all.max_drains_per_hour, 2);
  EXPECT_EQ(p->all.max_open_incidents, 4);
  EXPECT_DOUBLE_EQ(p->all.restore_clean_s, 120);
  ASSERT_EQ(p->scopes.size(), 2u);
  const Policy pod = p->of("pod 3");
  EXPECT_EQ(pod.mode, Mode::kApprove);
  EXPECT_EQ(pod.max_drained_per_scope, 2);
  EXPECT_EQ(pod.hold_passes, 5) << "written after scopes, inherited all the same";
  EXPECT_EQ(p->of("spine-superspine").mode, Mode::kAdvise);
  EXPECT_EQ(p->of("pod 4").mode, Mode::kAuto);
  EXPECT_TRUE(p->acts());
}

TEST(PolicyFile, AnEmptyFileIsTheDefaults) {
  std::string error;
  auto p = parse("# nothing\n", &error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->all.mode, Mode::kAdvise);
  EXPECT_FALSE(p->acts());
}

TEST(PolicyFile, AScopeThatActsMakesTheSetAct) {
  std::string error;
  auto p = parse("scopes:\n  pod 1: {mode: auto}\n", &error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->all.mode, Mode::kAdvise);
  EXPECT_TRUE(p->acts());
}

TEST(PolicyFile, BadInputNamesTheLineAndKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"mode: sometimes\n", "policy.yaml:1: mode: \"sometimes\" is not advise"},
      {"\nmin_confidence: 2\n", "policy.yaml:2: min_confidence: 2 is out of range"},
      {"min_confidence: .nan\n", "min_confidence"},
      {"hold_passes: 2.5\n", "hold_passes: 2.5 is not a whole number"},
      {"hold_passes: three\n", "hold_passes: \"three\" is not a number"},
      {"min_width_share: [1]\n", "min_width_share: expected a number"},
      {"drain_everything: true\n", "unknown key \"drain_everything\""},
      {"scopes:\n  pod 1: {max_drains_per_hour: 9}\n", "analyzer-wide"},
      {"scopes:\n  pod 1: {restore_clean_s: 9}\n", "analyzer-wide"},
      {"restore_clean_s: -1\n", "restore_clean_s: -1 is out of range"},
      {"scopes:\n  pod 1: auto\n", "expected a mapping"},
      {"scopes: [pod 1]\n", "scopes: expected a mapping"},
      {"- mode\n", "expected a mapping of policy keys"},
      {"mode: [\n", "policy.yaml:"},
  };
  for (const auto& [text, want] : cases) {
    std::string error;
    EXPECT_FALSE(parse(text, &error)) << text;
    EXPECT_NE(error.find(want), std::string::npos) << text << " -> " << error;
  }
}

TEST(PolicyFile, ScopesTheTopologyLacksAreNamed) {
  topology::LeafSpineParams lp;
  lp.spines = 2;
  lp.leaves = 2;
  lp.hosts_per_leaf = 1;
  const topology::Topology topo = topology::generateLeafSpine(lp);
  std::string error;
  auto p = parse("scopes:\n  leaf-spine: {mode: approve}\n  pod 7: {mode: auto}\n", &error);
  ASSERT_TRUE(p) << error;
  const std::string unknown = unknownScopes(*p, topo);
  EXPECT_NE(unknown.find("\"pod 7\""), std::string::npos) << unknown;
  EXPECT_EQ(unknown.find("\"leaf-spine\""), std::string::npos) << unknown;
}

}  // namespace
}  // namespace netdiag::drain
