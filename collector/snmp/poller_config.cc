#include "collector/snmp/poller_config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include "topology/display_text.h"

namespace netdiag::collector::snmp {
namespace {

std::string quoted(const std::string& s) { return "\"" + topology::escapeForDisplay(s) + "\""; }

const std::set<std::string> kAuthProtocols = {"MD5",     "SHA",     "SHA-224",
                                              "SHA-256", "SHA-384", "SHA-512"};
const std::set<std::string> kPrivProtocols = {"AES", "DES"};
constexpr size_t kMaxSecretBytes = 4096;

class Parser {
 public:
  Parser(std::string source, std::string base_dir, std::vector<std::string>* warnings)
      : source_(std::move(source)), base_dir_(std::move(base_dir)), warnings_(warnings) {}

  std::vector<std::string> errors;

  std::string at(const YAML::Node& n) const {
    return source_ + ":" + std::to_string(n.Mark().line + 1) + ": ";
  }
  void error(const YAML::Node& n, const std::string& what) { errors.push_back(at(n) + what); }
  void warn(const YAML::Node& n, const std::string& what) {
    if (warnings_) warnings_->push_back(at(n) + what);
  }

  bool scalar(const YAML::Node& v, const std::string& key, std::string* out) {
    if (!v.IsScalar()) {
      error(v, key + ": expected a single value");
      return false;
    }
    *out = v.Scalar();
    return true;
  }
  void text(const YAML::Node& v, const std::string& key, std::string* out) { scalar(v, key, out); }
  void number(const YAML::Node& v, const std::string& key, double lo, double hi, double* out) {
    std::string s;
    if (!scalar(v, key, &s)) return;
    char* end = nullptr;
    errno = 0;
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || errno != 0 || end != s.c_str() + s.size() || !std::isfinite(d) || d < lo ||
        d > hi) {
      std::ostringstream range;
      range << "expected a number in [" << lo << ", " << hi << "], got " << quoted(s);
      error(v, key + ": " + range.str());
      return;
    }
    *out = d;
  }
  template <typename Int>
  void integer(const YAML::Node& v, const std::string& key, double lo, double hi, Int* out) {
    double d = static_cast<double>(*out);
    const size_t before = errors.size();
    number(v, key, lo, hi, &d);
    if (errors.size() != before) return;
    if (d != std::floor(d)) {
      error(v, key + ": expected a whole number");
      return;
    }
    *out = static_cast<Int>(d);
  }

  // A secret from a file: at most 4 KiB, trailing whitespace dropped.
  void secret(const YAML::Node& v, const std::string& key, std::string* out) {
    std::string path;
    if (!scalar(v, key, &path)) return;
    if (!path.empty() && path[0] != '/' && !base_dir_.empty()) path = base_dir_ + "/" + path;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      error(v, key + ": cannot read " + quoted(path) + " (not a regular file)");
      return;
    }
    if (st.st_size > static_cast<off_t>(kMaxSecretBytes)) {
      error(v, key + ": " + quoted(path) + " is larger than 4 KiB; not a passphrase");
      return;
    }
    if ((st.st_mode & 077) != 0) {
      warn(v, key + ": " + quoted(path) +
                  " is readable by group or others; make it 0600 (it holds a secret)");
    }
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in && !in.eof()) {
      error(v, key + ": cannot read " + quoted(path));
      return;
    }
    std::string s = ss.str();
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    *out = s;
  }

  bool checkMap(const YAML::Node& n, const std::string& what) {
    if (!n.IsMap()) {
      error(n, what + ": expected a map (key: value)");
      return false;
    }
    return true;
  }

  // One target's keys over `t` (the defaults first, then the target's own).
  void targetKeys(const YAML::Node& n, const std::string& what, SnmpTarget* t) {
    if (!checkMap(n, what)) return;
    for (const auto& kv : n) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      const YAML::Node& v = kv.second;
      const std::string k = what + ": " + key;
      if (key == "node") {
        text(v, k, &t->node);
      } else if (key == "address") {
        text(v, k, &t->address);
      } else if (key == "version") {
        std::string s;
        if (!scalar(v, k, &s)) continue;
        if (s == "2c" || s == "2") {
          t->version = 2;
        } else if (s == "3") {
          t->version = 3;
        } else {
          error(v, k + ": expected 2c or 3, got " + quoted(s));
        }
      } else if (key == "community") {
        text(v, k, &t->community);
      } else if (key == "community_file") {
        secret(v, k, &t->community);
      } else if (key == "user") {
        text(v, k, &t->user);
      } else if (key == "auth") {
        text(v, k, &t->auth);
        if (!t->auth.empty() && kAuthProtocols.count(t->auth) == 0)
          error(v, k + ": unknown protocol " + quoted(t->auth) +
                       " (MD5, SHA, SHA-224, SHA-256, SHA-384, SHA-512)");
      } else if (key == "priv") {
        text(v, k, &t->priv);
        if (!t->priv.empty() && kPrivProtocols.count(t->priv) == 0)
          error(v, k + ": unknown protocol " + quoted(t->priv) + " (AES, DES)");
      } else if (key == "auth_key_file") {
        secret(v, k, &t->auth_key);
      } else if (key == "priv_key_file") {
        secret(v, k, &t->priv_key);
      } else if (key == "auth_key" || key == "priv_key") {
        error(kv.first, k + ": passphrases only from files (" + key + "_file), never inline");
      } else if (key == "port_map") {
        if (!checkMap(v, k)) continue;
        for (const auto& m : v) {
          if (!m.first.IsScalar() || !m.second.IsScalar()) {
            error(m.first, k + ": expected ifName: port");
            continue;
          }
          t->port_map[m.first.Scalar()] = m.second.Scalar();
        }
      } else {
        error(kv.first, what + ": unknown key " + quoted(key));
      }
    }
  }

  void checkTarget(const YAML::Node& n, const std::string& what, const SnmpTarget& t) {
    if (t.node.empty()) error(n, what + ": node is required");
    if (t.address.empty()) error(n, what + ": address is required");
    if (t.version == 2 && t.community.empty())
      error(n, what + ": SNMPv2c needs community or community_file");
    if (t.version == 3) {
      if (t.user.empty()) error(n, what + ": SNMPv3 needs user");
      if (!t.priv.empty() && t.auth.empty()) error(n, what + ": priv needs auth (authPriv)");
      if (!t.auth.empty() && t.auth_key.size() < 8)
        error(n, what + ": auth needs auth_key_file holding at least 8 characters (RFC 3414)");
      if (!t.priv.empty() && t.priv_key.size() < 8)
        error(n, what + ": priv needs priv_key_file holding at least 8 characters (RFC 3414)");
    }
  }

 private:
  std::string source_, base_dir_;
  std::vector<std::string>* warnings_;
};

}  // namespace

std::vector<std::string> parsePollerConfig(const std::string& yaml, const std::string& source,
                                           const std::string& base_dir, PollerConfig* cfg,
                                           std::vector<std::string>* warnings) {
  Parser p(source, base_dir, warnings);
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return {source + ":" + std::to_string(e.mark.line + 1) + ": not YAML: " + e.msg};
  }
  if (!p.checkMap(root, "the file")) return p.errors;
  YAML::Node defaults, targets;
  std::set<std::string> seen_keys;
  for (const auto& kv : root) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    const YAML::Node& v = kv.second;
    if (!seen_keys.insert(key).second) p.warn(kv.first, "duplicate key " + quoted(key));
    if (key == "identity") {
      p.text(v, key, &cfg->identity);
    } else if (key == "analyzer") {
      p.text(v, key, &cfg->analyzer);
    } else if (key == "topology") {
      p.text(v, key, &cfg->topology);
    } else if (key == "spool_dir") {
      p.text(v, key, &cfg->spool_dir);
    } else if (key == "spool_max_bytes") {
      p.integer(v, key, 1 << 20, 1e12, &cfg->spool_max_bytes);
    } else if (key == "metrics_address") {
      p.text(v, key, &cfg->metrics_address);
    } else if (key == "tls_ca") {
      p.text(v, key, &cfg->tls_ca);
    } else if (key == "tls_cert") {
      p.text(v, key, &cfg->tls_cert);
    } else if (key == "tls_key") {
      p.text(v, key, &cfg->tls_key);
    } else if (key == "batch_interval") {
      p.number(v, key, 0.05, 60, &cfg->batch_interval);
    } else if (key == "interval") {
      p.number(v, key, 0.1, 3600, &cfg->interval);
    } else if (key == "lldp_interval") {
      p.number(v, key, 0, 3600, &cfg->lldp_interval);
    } else if (key == "timeout") {
      p.number(v, key, 0.01, 60, &cfg->timeout);
    } else if (key == "retries") {
      p.integer(v, key, 0, 10, &cfg->retries);
    } else if (key == "max_repetitions") {
      p.integer(v, key, 1, 1000, &cfg->max_repetitions);
    } else if (key == "max_varbinds") {
      p.integer(v, key, 1, 10000, &cfg->max_varbinds);
    } else if (key == "max_rows") {
      p.integer(v, key, 1, 1e7, &cfg->max_rows);
    } else if (key == "max_in_flight") {
      p.integer(v, key, 1, 100000, &cfg->max_in_flight);
    } else if (key == "defaults") {
      defaults = v;
    } else if (key == "targets") {
      targets = v;
    } else {
      p.error(kv.first, "unknown key " + quoted(key));
    }
  }
  if (cfg->identity.empty()) p.error(root, "identity is required (the name the poller streams as)");
  if (!targets || !targets.IsSequence() || targets.size() == 0) {
    p.error(targets ? targets : root, "targets: expected a list of switches");
    return p.errors;
  }
  if (targets.size() > kMaxTargets) {
    p.error(targets, "targets: " + std::to_string(targets.size()) + " targets; at most " +
                         std::to_string(kMaxTargets) + " per poller");
    return p.errors;
  }
  SnmpTarget base;
  if (defaults) p.targetKeys(defaults, "defaults", &base);
  if (!base.node.empty() || !base.address.empty())
    p.error(defaults, "defaults: node and address belong to each target");
  std::set<std::string> nodes;
  for (size_t i = 0; i < targets.size(); ++i) {
    const YAML::Node& n = targets[i];
    const std::string what = "targets[" + std::to_string(i) + "]";
    SnmpTarget t = base;
    t.node.clear();
    t.address.clear();
    const size_t before = p.errors.size();
    p.targetKeys(n, what, &t);
    if (p.errors.size() != before) continue;
    p.checkTarget(n, what, t);
    if (!t.node.empty() && !nodes.insert(t.node).second)
      p.error(n, what + ": node " + quoted(t.node) + " is polled twice");
    t.where = p.at(n).substr(0, p.at(n).size() - 2);
    cfg->targets.push_back(std::move(t));
  }
  return p.errors;
}

std::vector<std::string> loadPollerConfig(const std::string& path, PollerConfig* config,
                                          std::vector<std::string>* warnings) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return {path + ": cannot read (not a regular file)"};
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxPollerConfigBytes) {
    return {path + ": larger than 16 MiB; not a poller config"};
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return parsePollerConfig(ss.str(), path, dir, config, warnings);
}

}  // namespace netdiag::collector::snmp
