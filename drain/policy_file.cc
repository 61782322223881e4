#include "drain/policy_file.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace netdiag::drain {
namespace {

constexpr size_t kMaxFileBytes = 1 << 20;

struct Reader {
  std::string origin;
  std::string* error;

  bool fail(const YAML::Node& at, const std::string& what) {
    if (error) {
      *error = origin + ":" + std::to_string(at.Mark().line + 1) + ": " + what;
    }
    return false;
  }

  bool number(const YAML::Node& v, const std::string& key, double lo, double hi, double* out) {
    double x = 0;
    try {
      if (!v.IsScalar()) return fail(v, key + ": expected a number");
      x = v.as<double>();
    } catch (const YAML::Exception&) {
      return fail(v, key + ": \"" + v.Scalar() + "\" is not a number");
    }
    if (!std::isfinite(x) || x < lo || x > hi) {
      std::ostringstream s;
      s << key << ": " << v.Scalar() << " is out of range [" << lo << ", " << hi << "]";
      return fail(v, s.str());
    }
    *out = x;
    return true;
  }

  bool integer(const YAML::Node& v, const std::string& key, int lo, int hi, int* out) {
    double x = 0;
    if (!number(v, key, lo, hi, &x)) return false;
    if (x != std::floor(x)) return fail(v, key + ": " + v.Scalar() + " is not a whole number");
    *out = static_cast<int>(x);
    return true;
  }

  // One key of a policy (the analyzer's or a scope's).
  bool key(const std::string& k, const YAML::Node& v, bool scope, Policy& p) {
    if (k == "mode") {
      const std::string m = v.IsScalar() ? v.Scalar() : "";
      if (m == "advise") {
        p.mode = Mode::kAdvise;
      } else if (m == "approve") {
        p.mode = Mode::kApprove;
      } else if (m == "auto") {
        p.mode = Mode::kAuto;
      } else {
        return fail(v, "mode: \"" + m + "\" is not advise, approve or auto");
      }
      return true;
    }
    if (k == "min_confidence") return number(v, k, 0.5, 1, &p.min_confidence);
    if (k == "hold_passes") return integer(v, k, 0, 10000, &p.hold_passes);
    if (k == "min_width_share") return number(v, k, 0, 1, &p.min_width_share);
    if (k == "max_drained_per_scope") return integer(v, k, 0, 100000, &p.max_drained_per_scope);
    if (!scope) {
      if (k == "max_drains_per_hour") return integer(v, k, 0, 100000, &p.max_drains_per_hour);
      if (k == "max_open_incidents") return integer(v, k, 0, 100000, &p.max_open_incidents);
      if (k == "restore_clean_s") return number(v, k, 0, 3600, &p.restore_clean_s);
    } else if (k == "max_drains_per_hour" || k == "max_open_incidents" || k == "restore_clean_s") {
      return fail(v, k + " is analyzer-wide: set it outside scopes");
    }
    return fail(v, "unknown key \"" + k + "\"");
  }
};

}  // namespace

std::optional<PolicySet> parsePolicy(const std::string& text, const std::string& origin,
                                     std::string* error) {
  Reader r{origin, error};
  PolicySet out;
  try {
    const YAML::Node root = YAML::Load(text);
    if (root.IsNull()) return out;  // an empty file: the defaults
    if (!root.IsMap()) {
      r.fail(root, "expected a mapping of policy keys");
      return std::nullopt;
    }
    const YAML::Node scopes = root["scopes"];
    for (const auto& kv : root) {
      const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
      if (k == "scopes") continue;
      if (!r.key(k, kv.second, false, out.all)) return std::nullopt;
    }
    if (scopes && !scopes.IsNull()) {
      if (!scopes.IsMap()) {
        r.fail(scopes, "scopes: expected a mapping of scope name to policy keys");
        return std::nullopt;
      }
      for (const auto& s : scopes) {
        const std::string name = s.first.IsScalar() ? s.first.Scalar() : "";
        if (name.empty() || name.size() > 128) {
          r.fail(s.first, "scopes: a scope name is a pod (\"pod 3\") or a tier pair");
          return std::nullopt;
        }
        if (!s.second.IsMap()) {
          r.fail(s.second, "scopes: \"" + name + "\": expected a mapping of policy keys");
          return std::nullopt;
        }
        Policy p = out.all;  // (the analyzer-wide keys are read by now)
        for (const auto& kv : s.second) {
          const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
          if (!r.key(k, kv.second, true, p)) {
            if (error) *error += " (in scope \"" + name + "\")";
            return std::nullopt;
          }
        }
        out.scopes[name] = p;
      }
    }
  } catch (const YAML::Exception& e) {
    if (error) *error = origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg;
    return std::nullopt;
  }
  return out;
}

std::optional<PolicySet> loadPolicyFile(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (error) *error = path + ": cannot read the drain policy file";
    return std::nullopt;
  }
  std::string text(kMaxFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxFileBytes) {
    if (error) *error = path + ": larger than 1 MiB: not a drain policy file";
    return std::nullopt;
  }
  return parsePolicy(text, path, error);
}

std::string unknownScopes(const PolicySet& policies, const topology::Topology& topo) {
  std::set<std::string> pods, roles;
  for (topology::NodeId n = 0; n < topo.nodeCount(); ++n) {
    const topology::Node& node = topo.node(n);
    if (node.pod) pods.insert("pod " + std::to_string(*node.pod));
    if (node.role != topology::Role::kOther)
      roles.insert(std::string(topology::roleName(node.role)));
  }
  std::string out;
  for (const auto& [name, p] : policies.scopes) {
    bool known = pods.count(name) > 0;
    for (const std::string& a : roles) {
      for (const std::string& b : roles) known = known || name == a + "-" + b;
    }
    if (!known) out += (out.empty() ? "\"" : ", \"") + name + "\"";
  }
  if (out.empty()) return out;
  return "no link of the topology is in scope " + out +
         ": a scope is a pod (\"pod N\") or a tier pair as decisions name it (leaf-spine, "
         "spine-superspine)";
}

}  // namespace netdiag::drain
