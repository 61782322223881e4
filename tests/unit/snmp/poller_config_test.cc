#include "collector/snmp/poller_config.h"

#include <fstream>

#include <gtest/gtest.h>
#include <sys/stat.h>

namespace netdiag::collector::snmp {
namespace {

std::string tempDir() {
  char tmpl[] = "/tmp/netdiag-snmpcfg-XXXXXX";
  return mkdtemp(tmpl);
}

void write(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

TEST(PollerConfig, ReadsTargetsWithDefaultsAndSecretsFromFiles) {
  const std::string dir = tempDir();
  write(dir + "/auth.key", "authpass123\n", 0600);
  write(dir + "/priv.key", "privpass123\n", 0644);  // too open: a warning
  PollerConfig cfg;
  std::vector<std::string> warnings;
  const auto errors = parsePollerConfig(R"(identity: snmp-poller-1
interval: 5
defaults: {version: 2c, community: public}
targets:
  - {node: leaf1, address: 10.0.0.1:161, port_map: {"Ethernet1/1": swp1}}
  - node: spine1
    address: 10.0.0.2
    version: 3
    user: netdiag
    auth: SHA-256
    auth_key_file: auth.key
    priv: AES
    priv_key_file: priv.key
)",
                                        "p.yaml", dir, &cfg, &warnings);
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(cfg.targets.size(), 2u);
  EXPECT_EQ(cfg.targets[0].community, "public");
  EXPECT_EQ(cfg.targets[0].port_map.at("Ethernet1/1"), "swp1");
  EXPECT_EQ(cfg.targets[1].version, 3);
  EXPECT_EQ(cfg.targets[1].auth_key, "authpass123");  // trailing newline dropped
  EXPECT_EQ(cfg.targets[1].where, "p.yaml:6");
  EXPECT_DOUBLE_EQ(cfg.interval, 5);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("readable by group or others"), std::string::npos) << warnings[0];
}

TEST(PollerConfig, ErrorsNameTheLineAndNeverAcceptInlinePassphrases) {
  auto errorsOf = [](const std::string& yaml) {
    PollerConfig cfg;
    return parsePollerConfig(yaml, "p.yaml", "/nonexistent", &cfg, nullptr);
  };
  auto has = [](const std::vector<std::string>& es, const std::string& what) {
    for (const auto& e : es)
      if (e.find(what) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has(errorsOf("identity: p\ntargets:\n  - {node: a, address: x, version: 3, user: "
                           "u, auth: SHA, auth_key: secret123}\n"),
                  "p.yaml:3: targets[0]: auth_key: passphrases only from files"));
  EXPECT_TRUE(has(errorsOf("identity: p\ntargets:\n  - {node: a, address: x, version: 1}\n"),
                  "version: expected 2c or 3"));
  EXPECT_TRUE(has(errorsOf("identity: p\ntargets:\n  - {node: a, address: x}\n"),
                  "SNMPv2c needs community"));
  EXPECT_TRUE(has(errorsOf("identity: p\ndefaults: {community: c}\ntargets:\n  - {node: a, "
                           "address: x}\n  - {node: a, address: y}\n"),
                  "polled twice"));
  EXPECT_TRUE(has(errorsOf("identity: p\ntargets:\n  - {node: a, address: x, version: 3, user: "
                           "u, priv: AES}\n"),
                  "priv needs auth"));
  EXPECT_TRUE(has(errorsOf("targets: []\n"), "identity is required"));
  EXPECT_TRUE(has(errorsOf("identity: p\ninterval: -1\ntargets: []\n"), "p.yaml:2: interval"));
  EXPECT_TRUE(has(errorsOf("identity: [p\n"), "not YAML"));
  EXPECT_TRUE(has(errorsOf("identity: p\ntypo: 1\ntargets: []\n"), "unknown key \"typo\""));
}

}  // namespace
}  // namespace netdiag::collector::snmp
