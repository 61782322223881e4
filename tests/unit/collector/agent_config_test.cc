// The agent's settings: YAML keys, flag values, and the errors bad config
// gets (naming the file, line and key).

#include "collector/agent_config.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <gtest/gtest.h>

namespace netdiag::collector {
namespace {

bool anyContains(const std::vector<std::string>& v, const std::string& needle) {
  for (const auto& s : v) {
    if (s.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(AgentConfig, EveryKeyIsAFlagAndSettable) {
  std::set<std::string> flags;
  for (const AgentConfigKey& k : agentConfigKeys()) {
    EXPECT_EQ(k.key.find('-'), std::string::npos) << k.key;
    EXPECT_EQ(k.flag().find('_'), std::string::npos) << k.flag();
    EXPECT_TRUE(flags.insert(k.flag()).second) << k.flag();
  }
  for (const char* f : {"--node", "--analyzer", "--spool-dir", "--spool-max-bytes",
                        "--metrics-address", "--batch-interval", "--counters-interval",
                        "--sysfs-root", "--path-refresh", "--tls-ca", "--tls-cert", "--tls-key"}) {
    EXPECT_TRUE(flags.count(f)) << f << " (agreed in interfaces.md)";
  }
}

TEST(AgentConfig, YamlSetsEveryKind) {
  AgentConfig c;
  const auto errors = applyAgentConfigYaml(c,
                                           "node: host3\n"
                                           "analyzer: 10.0.0.1:7600\n"
                                           "spool_max_bytes: 64Mi\n"
                                           "batch_interval: 0.5\n"
                                           "lldp: no\n"
                                           "tls_ca: /etc/netdiag/ca.pem\n"
                                           "metrics_address:\n",
                                           "agent.yaml");
  EXPECT_TRUE(errors.empty()) << errors[0];
  EXPECT_EQ(c.node, "host3");
  EXPECT_EQ(c.analyzer, "10.0.0.1:7600");
  EXPECT_EQ(c.spool_max_bytes, 64u << 20);
  EXPECT_DOUBLE_EQ(c.batch_interval, 0.5);
  EXPECT_FALSE(c.lldp);
  EXPECT_EQ(c.tls_ca, "/etc/netdiag/ca.pem");
  EXPECT_EQ(c.metrics_address, "");          // `key:` with nothing: off
  EXPECT_DOUBLE_EQ(c.counters_interval, 5);  // untouched default
  EXPECT_TRUE(validateAgentConfig(c).empty());
}

TEST(AgentConfig, BadValuesNameFileLineAndKey) {
  AgentConfig c;
  const auto errors = applyAgentConfigYaml(c,
                                           "node: host3\n"
                                           "batch_interval: fast\n"
                                           "batch-interval: 1\n"
                                           "spool_max_bytes: 12XB\n"
                                           "lldp: maybe\n"
                                           "counters_interval: [1, 2]\n"
                                           "path_refresh: nan\n"
                                           "colour: blue\n",
                                           "agent.yaml");
  ASSERT_EQ(errors.size(), 7u);
  EXPECT_EQ(errors[0], "agent.yaml:2: batch_interval: expected a number, got \"fast\"");
  EXPECT_EQ(errors[1], "agent.yaml:3: unknown key \"batch-interval\" (keys use '_', not '-')");
  EXPECT_NE(errors[2].find("agent.yaml:4: spool_max_bytes:"), std::string::npos) << errors[2];
  EXPECT_NE(errors[3].find("agent.yaml:5: lldp: expected true or false"), std::string::npos);
  EXPECT_NE(errors[4].find("agent.yaml:6: counters_interval: expected a single value"),
            std::string::npos);
  EXPECT_NE(errors[5].find("agent.yaml:7: path_refresh"), std::string::npos);
  EXPECT_EQ(errors[6], "agent.yaml:8: unknown key \"colour\"");
}

TEST(AgentConfig, ErrorsEscapeControlAndBidiCharacters) {
  AgentConfig c;
  const auto errors = applyAgentConfigYaml(c,
                                           "\"col\\e[2Jour\": blue\n"
                                           "batch_interval: \"1\\u202E5\"\n",
                                           "agent.yaml");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0], "agent.yaml:1: unknown key \"col\\x1b[2Jour\"");
  EXPECT_EQ(errors[1], "agent.yaml:2: batch_interval: expected a number, got \"1\\u202e5\"");
}

TEST(AgentConfig, NotYamlOrNotAMap) {
  AgentConfig c;
  auto errors = applyAgentConfigYaml(c, "node: [unclosed\n", "a.yaml");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("a.yaml:"), std::string::npos);
  EXPECT_NE(errors[0].find("not valid YAML"), std::string::npos);
  errors = applyAgentConfigYaml(c, "- node\n- analyzer\n", "b.yaml");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "b.yaml:1: expected a map of settings (key: value)");
  EXPECT_TRUE(applyAgentConfigYaml(c, "", "empty.yaml").empty());
  EXPECT_TRUE(applyAgentConfigYaml(c, "# only a comment\n", "c.yaml").empty());
}

TEST(AgentConfig, ValidationNamesTheKeys) {
  AgentConfig c;
  c.batch_interval = 0;
  c.metrics_address = "localhost";
  c.tls_cert = "c.pem";
  auto errors = validateAgentConfig(c);
  EXPECT_TRUE(anyContains(errors, "node: required"));
  EXPECT_TRUE(anyContains(errors, "analyzer: required"));
  EXPECT_TRUE(anyContains(errors, "batch_interval: must be > 0"));
  EXPECT_TRUE(anyContains(errors, "metrics_address: expected HOST:PORT"));
  EXPECT_TRUE(anyContains(errors, "tls_cert and tls_key"));
  c = AgentConfig{};
  c.node = "h";
  c.analyzer = "a:99999";
  EXPECT_TRUE(anyContains(validateAgentConfig(c), "analyzer: expected HOST:PORT"));
  c.analyzer = "[::1]:7600";
  EXPECT_TRUE(validateAgentConfig(c).empty());
}

TEST(AgentConfig, DrainActionsNeedAKnownExecutorAndTheKey) {
  AgentConfig c;
  c.node = "leaf0";
  c.analyzer = "127.0.0.1:7600";
  c.drain_executor = "ssh";
  auto errors = validateAgentConfig(c);
  EXPECT_TRUE(anyContains(errors, "drain_executor: \"ssh\" is not frr or webhook"));
  EXPECT_TRUE(anyContains(errors, "drain_executor: needs drain_key_file"));
  c.drain_executor = "webhook";
  c.drain_key_file = "/etc/netdiag/drain.key";
  c.drain_webhook_url = "ftp://x";
  EXPECT_TRUE(anyContains(validateAgentConfig(c), "drain_webhook_url: webhook url"));
  c.drain_webhook_url = "https://automation:8443/drain";
  EXPECT_TRUE(validateAgentConfig(c).empty());
  c.bus = "nats://127.0.0.1:4222";
  EXPECT_TRUE(anyContains(validateAgentConfig(c), "not the bus"));
  c = AgentConfig{};
  c.node = "leaf0";
  c.analyzer = "127.0.0.1:7600";
  c.drain_executor = "frr";
  c.drain_key_file = "k";
  EXPECT_TRUE(validateAgentConfig(c).empty());
}

TEST(AgentConfig, FlagTextUsesTheSameParser) {
  AgentConfig c;
  EXPECT_EQ(setAgentConfigValue(c, "spool_max_bytes", "1G"), "");
  EXPECT_EQ(c.spool_max_bytes, 1000000000u);
  EXPECT_NE(setAgentConfigValue(c, "spool_max_bytes", "-1"), "");
  EXPECT_NE(setAgentConfigValue(c, "spool_max_bytes", "99999999999999999999"), "");
  EXPECT_NE(setAgentConfigValue(c, "spool_max_bytes", "20000000000Gi"), "");  // overflows
  EXPECT_NE(setAgentConfigValue(c, "batch_interval", " 1"), "");
  EXPECT_NE(setAgentConfigValue(c, "batch_interval", "1s"), "");
  EXPECT_NE(setAgentConfigValue(c, "batch_interval", "inf"), "");
  EXPECT_EQ(setAgentConfigValue(c, "nope", "1"), "unknown key");
}

TEST(AgentConfig, FileSizeIsBounded) {
  // An endless file is an error found after kMaxAgentConfigBytes + 1 bytes,
  // not bad_alloc.
  AgentConfig c;
  auto errors = applyAgentConfigFile(c, "/dev/zero");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "/dev/zero: config file is larger than 1048576 bytes (1 MiB, netdiag's "
            "limit); is it the right file?");
  // Exactly at the bound is read; one byte more is not.
  const auto path = std::filesystem::temp_directory_path() / "netdiag_agent_config_size_test.yaml";
  const std::string body = "node: leaf1\n#";
  std::string text = body + std::string(kMaxAgentConfigBytes - body.size(), 'x');
  std::ofstream(path, std::ios::binary) << text;
  EXPECT_TRUE(applyAgentConfigFile(c, path.string()).empty());
  EXPECT_EQ(c.node, "leaf1");
  std::ofstream(path, std::ios::binary) << text << 'x';
  errors = applyAgentConfigFile(c, path.string());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("larger than 1048576 bytes"), std::string::npos) << errors[0];
  std::filesystem::remove(path);
}

TEST(AgentConfig, FileErrorsAndRandomInputNeverCrash) {
  AgentConfig c;
  auto errors = applyAgentConfigFile(c, "/nonexistent/agent.yaml");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("/nonexistent/agent.yaml"), std::string::npos);

  const auto path = std::filesystem::temp_directory_path() / "netdiag_agent_config_test.yaml";
  std::ofstream(path) << "node: leaf1\nanalyzer: 127.0.0.1:7600\n";
  EXPECT_TRUE(applyAgentConfigFile(c, path.string()).empty());
  EXPECT_EQ(c.node, "leaf1");
  std::filesystem::remove(path);

  // Mutated config text: any outcome but a crash or an exception.
  const std::string base = "node: h\nanalyzer: 1.2.3.4:5\nbatch_interval: 1\nlldp: true\n";
  const std::string alphabet = ":-[]{}\n #&*!|>'\"%@`,?0aZ\t";
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string s = base;
    for (int k = 0; k < 4; ++k) {
      s[rng() % s.size()] = alphabet[rng() % alphabet.size()];
    }
    AgentConfig d;
    EXPECT_NO_THROW(applyAgentConfigYaml(d, s, "fuzz.yaml"));
  }
}

}  // namespace
}  // namespace netdiag::collector
