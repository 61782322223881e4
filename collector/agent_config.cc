#include "collector/agent_config.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include <yaml-cpp/yaml.h>

#include "actuator/webhook_executor.h"
#include "topology/display_text.h"

namespace netdiag::collector {
namespace {

// Values and keys echoed in errors come from a file or flag: escaped for display.
std::string quoted(const std::string& s) { return "\"" + topology::escapeForDisplay(s) + "\""; }

bool parseDouble(const std::string& s, double* out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parseBytes(const std::string& s, uint64_t* out) {
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  if (digits == 0 || digits > 19) return false;
  const uint64_t v = std::stoull(s.substr(0, digits));
  const std::string suffix = s.substr(digits);
  uint64_t mult = 1;
  if (suffix.empty()) {
    mult = 1;
  } else if (suffix == "K" || suffix == "KB") {
    mult = 1000;
  } else if (suffix == "M" || suffix == "MB") {
    mult = 1000 * 1000;
  } else if (suffix == "G" || suffix == "GB") {
    mult = 1000 * 1000 * 1000;
  } else if (suffix == "Ki" || suffix == "KiB") {
    mult = 1ull << 10;
  } else if (suffix == "Mi" || suffix == "MiB") {
    mult = 1ull << 20;
  } else if (suffix == "Gi" || suffix == "GiB") {
    mult = 1ull << 30;
  } else {
    return false;
  }
  if (v > UINT64_MAX / mult) return false;
  *out = v * mult;
  return true;
}

bool parseBool(const std::string& s, bool* out) {
  for (const char* t : {"true", "yes", "on", "1"}) {
    if (s == t) {
      *out = true;
      return true;
    }
  }
  for (const char* f : {"false", "no", "off", "0"}) {
    if (s == f) {
      *out = false;
      return true;
    }
  }
  return false;
}

bool validHostPort(const std::string& s, bool allow_zero = false) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) return false;
  const std::string port = s.substr(colon + 1);
  if (port.size() > 5) return false;
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  const long p = std::strtol(port.c_str(), nullptr, 10);
  return (p > 0 || allow_zero) && p <= 65535;
}

}  // namespace

std::string AgentConfigKey::flag() const {
  std::string f = "--" + key;
  for (char& c : f) {
    if (c == '_') c = '-';
  }
  return f;
}

const std::vector<AgentConfigKey>& agentConfigKeys() {
  static const std::vector<AgentConfigKey> keys = {
      {"node", "this agent's node name in the topology (required)", &AgentConfig::node},
      {"analyzer", "the analyzer's gRPC address HOST:PORT (required unless bus is set)",
       &AgentConfig::analyzer},
      {"bus", "a NATS JetStream bus nats://HOST:PORT to send batches through instead",
       &AgentConfig::bus},
      {"bus_fabric", "the fabric's name in the bus subjects", &AgentConfig::bus_fabric},
      {"bus_subject_prefix", "the first tokens of the bus subjects",
       &AgentConfig::bus_subject_prefix},
      {"bus_creds", "NATS credentials file for the bus (JWT and nkey seed)",
       &AgentConfig::bus_creds},
      {"spool_dir", "directory of the on-disk spool (default: in memory)", &AgentConfig::spool_dir},
      {"spool_max_bytes", "spool bound in bytes (suffixes K M G Ki Mi Gi)",
       &AgentConfig::spool_max_bytes},
      {"metrics_address", "HOST:PORT of the agent's own /metrics (empty: off)",
       &AgentConfig::metrics_address},
      {"batch_interval", "seconds between batches sent to the analyzer",
       &AgentConfig::batch_interval},
      {"counters_interval", "seconds between port counter reads", &AgentConfig::counters_interval},
      {"sysfs_root", "root of sysfs", &AgentConfig::sysfs_root},
      {"path_refresh", "seconds between path rediscoveries of a flow (0: once)",
       &AgentConfig::path_refresh},
      {"tls_ca", "CA certificate to verify the analyzer (PEM)", &AgentConfig::tls_ca},
      {"tls_cert", "client certificate for mutual TLS (PEM)", &AgentConfig::tls_cert},
      {"tls_key", "client key for mutual TLS (PEM)", &AgentConfig::tls_key},
      {"plan_file", "a fixed probe plan (AgentPlan as JSON) instead of the analyzer's",
       &AgentConfig::plan_file},
      {"plan_refresh", "seconds between checks for a newer plan", &AgentConfig::plan_refresh},
      {"probe_timeout", "seconds after a window's end before unanswered probes are lost",
       &AgentConfig::probe_timeout},
      {"responder_address", "address the responder binds", &AgentConfig::responder_address},
      {"responder_rate_limit", "replies per second per source address",
       &AgentConfig::responder_rate_limit},
      {"responder_global_rate_limit",
       "replies per second to all sources together (0: the larger of 20000 and 4x the plan's "
       "inbound probe rate)",
       &AgentConfig::responder_global_rate_limit},
      {"lldp", "capture LLDP on monitored ports (needs CAP_NET_RAW)", &AgentConfig::lldp},
      {"drain_executor",
       "how to carry out the analyzer's drain actions: frr or webhook (empty: refuse them)",
       &AgentConfig::drain_executor},
      {"drain_key_file", "the drain key shared with the analyzer (mode 600)",
       &AgentConfig::drain_key_file},
      {"drain_vtysh", "frr executor: the vtysh program", &AgentConfig::drain_vtysh},
      {"drain_vty_socket", "frr executor: vtysh --vty_socket directory (empty: FRR's default)",
       &AgentConfig::drain_vty_socket},
      {"drain_admin_down", "frr executor: also shut the interface, not only its BGP session",
       &AgentConfig::drain_admin_down},
      {"drain_graceful_s",
       "frr executor: seconds the session's routes are marked GRACEFUL_SHUTDOWN (RFC 8326) "
       "before it is shut, and after it is back on a restore (0: shut at once; at most 30)",
       &AgentConfig::drain_graceful_s},
      {"drain_webhook_url", "webhook executor: http(s)://HOST[:PORT]/PATH to POST actions to",
       &AgentConfig::drain_webhook_url},
  };
  return keys;
}

std::string setAgentConfigValue(AgentConfig& config, const std::string& key,
                                const std::string& text) {
  for (const AgentConfigKey& k : agentConfigKeys()) {
    if (k.key != key) continue;
    if (auto m = std::get_if<std::string AgentConfig::*>(&k.member)) {
      config.*(*m) = text;
    } else if (auto d = std::get_if<double AgentConfig::*>(&k.member)) {
      if (!parseDouble(text, &(config.*(*d)))) return "expected a number, got " + quoted(text);
    } else if (auto u = std::get_if<uint64_t AgentConfig::*>(&k.member)) {
      if (!parseBytes(text, &(config.*(*u)))) {
        return "expected a byte count (e.g. 1048576 or 256Mi), got " + quoted(text);
      }
    } else if (auto b = std::get_if<bool AgentConfig::*>(&k.member)) {
      if (!parseBool(text, &(config.*(*b)))) return "expected true or false, got " + quoted(text);
    }
    return "";
  }
  return "unknown key";
}

std::vector<std::string> applyAgentConfigYaml(AgentConfig& config, const std::string& yaml,
                                              const std::string& source) {
  std::vector<std::string> errors;
  auto at = [&](const YAML::Mark& m) { return source + ":" + std::to_string(m.line + 1) + ": "; };
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    errors.push_back(at(e.mark) + "not valid YAML: " + e.msg);
    return errors;
  }
  if (root.IsNull()) return errors;  // an empty file sets nothing
  if (!root.IsMap()) {
    errors.push_back(at(root.Mark()) + "expected a map of settings (key: value)");
    return errors;
  }
  for (const auto& kv : root) {
    const YAML::Node& k = kv.first;
    const YAML::Node& v = kv.second;
    if (!k.IsScalar()) {
      errors.push_back(at(k.Mark()) + "a key must be a plain name");
      continue;
    }
    const std::string key = k.Scalar();
    bool known = false;
    for (const AgentConfigKey& ak : agentConfigKeys()) known |= ak.key == key;
    if (!known) {
      std::string hint;
      if (key.find('-') != std::string::npos) hint = " (keys use '_', not '-')";
      errors.push_back(at(k.Mark()) + "unknown key " + quoted(key) + hint);
      continue;
    }
    if (v.IsNull()) {
      // `key:` with nothing: the empty string for text keys, an error otherwise.
      std::string err = setAgentConfigValue(config, key, "");
      if (!err.empty()) errors.push_back(at(k.Mark()) + key + ": no value");
      continue;
    }
    if (!v.IsScalar()) {
      errors.push_back(at(v.Mark()) + key + ": expected a single value, not a list or map");
      continue;
    }
    std::string err = setAgentConfigValue(config, key, v.Scalar());
    if (!err.empty()) errors.push_back(at(v.Mark()) + key + ": " + err);
  }
  return errors;
}

std::vector<std::string> applyAgentConfigFile(AgentConfig& config, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {path + ": cannot open config file"};
  // Read at most one byte past the bound: /dev/zero or a mistaken log file
  // would otherwise be read whole, until bad_alloc.
  std::string text(kMaxAgentConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return {path + ": cannot read config file"};
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxAgentConfigBytes) {
    return {path + ": config file is larger than " + std::to_string(kMaxAgentConfigBytes) +
            " bytes (1 MiB, netdiag's limit); is it the right file?"};
  }
  return applyAgentConfigYaml(config, text, path);
}

std::vector<std::string> validateAgentConfig(const AgentConfig& c) {
  std::vector<std::string> errors;
  auto positive = [&](const char* key, double v) {
    if (!(v > 0)) errors.push_back(std::string(key) + ": must be > 0");
  };
  if (c.node.empty()) errors.push_back("node: required (this agent's node in the topology)");
  if (c.analyzer.empty() && c.bus.empty()) {
    errors.push_back("analyzer: required (HOST:PORT of the analyzer's gRPC listener), or bus");
  } else if (!c.analyzer.empty() && !c.bus.empty()) {
    errors.push_back("analyzer and bus: give one (the bus carries batches and plans)");
  } else if (!c.analyzer.empty() && !validHostPort(c.analyzer)) {
    errors.push_back("analyzer: expected HOST:PORT, got " + quoted(c.analyzer));
  }
  if (!c.metrics_address.empty() && !validHostPort(c.metrics_address, true)) {  // 0: any free port
    errors.push_back("metrics_address: expected HOST:PORT, got " + quoted(c.metrics_address));
  }
  positive("batch_interval", c.batch_interval);
  positive("counters_interval", c.counters_interval);
  positive("plan_refresh", c.plan_refresh);
  positive("probe_timeout", c.probe_timeout);
  positive("responder_rate_limit", c.responder_rate_limit);
  if (!(c.responder_global_rate_limit >= 0) || !std::isfinite(c.responder_global_rate_limit)) {
    errors.push_back("responder_global_rate_limit: must be a number >= 0 (0: sized to the plan)");
  }
  if (c.path_refresh < 0) errors.push_back("path_refresh: must be >= 0");
  if (c.spool_max_bytes == 0) errors.push_back("spool_max_bytes: must be > 0");
  if (c.sysfs_root.empty()) errors.push_back("sysfs_root: must not be empty");
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    errors.push_back("tls_cert and tls_key: give both for mutual TLS, or neither");
  }
  if (!c.tls_cert.empty() && c.tls_ca.empty()) {
    errors.push_back("tls_cert: mutual TLS also needs tls_ca (to verify the analyzer)");
  }
  if (!c.drain_executor.empty()) {
    if (c.drain_executor != "frr" && c.drain_executor != "webhook") {
      errors.push_back("drain_executor: \"" + c.drain_executor + "\" is not frr or webhook");
    }
    if (c.drain_key_file.empty()) {
      errors.push_back("drain_executor: needs drain_key_file (actions are signed with it)");
    }
    if (c.drain_executor == "webhook") {
      const std::string bad = actuator::checkWebhookUrl(c.drain_webhook_url);
      if (!bad.empty()) errors.push_back("drain_webhook_url: " + bad);
    }
    if (!(c.drain_graceful_s >= 0 && c.drain_graceful_s <= 30)) {
      errors.push_back("drain_graceful_s: must be 0 to 30 (seconds)");
    }
    if (!c.bus.empty()) {
      errors.push_back(
          "drain_executor: drain actions come on the analyzer's gRPC stream, not "
          "the bus");
    }
  }
  return errors;
}

}  // namespace netdiag::collector
