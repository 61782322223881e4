#pragma once

// The agent's settings: one typed struct, one table of keys shared by the
// YAML config file and the command line (every key `a_b` is also the flag
// `--a-b`), parsing and validation in one place. Later sources override
// earlier ones: defaults, then the file, then flags.

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace netdiag::collector {

struct AgentConfig {
  std::string node;      // this agent's node in the topology (required)
  std::string analyzer;  // host:port of the analyzer's gRPC listener (required without bus)
  // A NATS JetStream bus instead (nats://HOST:PORT): batches go to the
  // stream, the plan comes by request/reply (collector/bus_uplink.h).
  std::string bus;
  std::string bus_fabric = "default";          // the fabric's token in the subjects
  std::string bus_subject_prefix = "netdiag";  // bus/subjects.h
  std::string bus_creds;                       // NATS credentials file (JWT and nkey)
  std::string spool_dir;                       // on-disk spool; empty: in memory, lost on exit
  uint64_t spool_max_bytes = 256ull << 20;
  std::string metrics_address = "127.0.0.1:9700";  // own /metrics; empty: none
  double batch_interval = 1;                       // seconds between batches to the uplink
  double counters_interval = 5;                    // seconds between counter reads
  std::string sysfs_root = "/sys";
  double path_refresh = 60;  // seconds between path rediscoveries of a flow; 0: once
  std::string tls_ca, tls_cert, tls_key;
  // Beyond the agreed flags:
  std::string plan_file;     // a fixed plan (v1::AgentPlan as JSON) instead of GetPlan
  double plan_refresh = 30;  // seconds between asking the analyzer for a newer plan
  double probe_timeout =
      1;  // seconds after a window's end before its unanswered probes count as lost
  std::string responder_address = "0.0.0.0";
  double responder_rate_limit = 20000;  // replies per second per source address
  // Replies per second to all sources together; 0: sized to the plan,
  // max(kMinGlobalRateLimit, 4 x its inbound_probes_per_second).
  double responder_global_rate_limit = 0;
  bool lldp = true;  // capture LLDP on monitored ports (needs CAP_NET_RAW)
  // Drain actions from the analyzer (actuator/): off unless an executor and
  // the drain key are both given.
  std::string drain_executor;  // "" (refuse every action), "frr" or "webhook"
  std::string drain_key_file;  // the key shared with the analyzer (mode 600)
  std::string drain_vtysh = "vtysh";
  std::string drain_vty_socket;   // vtysh --vty_socket; empty: FRR's default
  bool drain_admin_down = false;  // frr: also shut the interface
  // frr: seconds of RFC 8326 graceful shutdown before the session is shut
  // (and after it is back, on a restore); 0: shut at once.
  double drain_graceful_s = 0;
  std::string drain_webhook_url;  // webhook: http(s)://HOST[:PORT]/PATH
};

// The floor of the responder's global rate limit sized to the plan, and
// its margin over the plan's inbound probe rate (path discovery, late
// re-sends and a peer's plan ahead of ours fit under it).
inline constexpr double kMinGlobalRateLimit = 20000;
inline constexpr double kGlobalRateMargin = 4;

// One settable key: its YAML name, help text and the member it sets.
struct AgentConfigKey {
  std::string key;  // YAML key; the flag is "--" + key with '_' -> '-'
  std::string help;
  std::variant<std::string AgentConfig::*, double AgentConfig::*, uint64_t AgentConfig::*,
               bool AgentConfig::*>
      member;
  std::string flag() const;
};

const std::vector<AgentConfigKey>& agentConfigKeys();

// Sets `key` from its text form (numbers: plain decimals; spool_max_bytes
// also with a K/M/G/Ki/Mi/Gi suffix; booleans: true/false/yes/no/on/off/1/0).
// Returns "" or what is wrong ("expected a number, got \"abc\"").
std::string setAgentConfigValue(AgentConfig& config, const std::string& key,
                                const std::string& text);

// Applies a YAML document (a map of the keys above) to `config`. Returns
// one message per problem, each naming the source, line and key
// ("agent.yaml:4: batch_interval: expected a number, got \"fast\"");
// unknown keys are errors (a typo must not silently do nothing).
std::vector<std::string> applyAgentConfigYaml(AgentConfig& config, const std::string& yaml,
                                              const std::string& source);
// Reads `path` and applies it as above. A file larger than
// kMaxAgentConfigBytes is an error, found without reading past the bound
// (a real config is a few hundred bytes; docs/operations.md).
inline constexpr size_t kMaxAgentConfigBytes = size_t{1} << 20;
std::vector<std::string> applyAgentConfigFile(AgentConfig& config, const std::string& path);

// Checks the finished config; one message per problem, naming the key.
std::vector<std::string> validateAgentConfig(const AgentConfig& config);

}  // namespace netdiag::collector
