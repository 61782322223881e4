#include "server/authority.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "topology/display_text.h"

namespace netdiag::server {

std::vector<uint32_t> simAgentGroups(const topology::Topology& topo, size_t n) {
  n = std::max<size_t>(n, 1);
  std::vector<uint32_t> group(topo.nodeCount(), 0);
  size_t hosts = 0;
  for (topology::NodeId node = 0; node < topo.nodeCount(); ++node) {
    group[node] = static_cast<uint32_t>(topo.node(node).isHost() ? hosts++ % n : node % n);
  }
  return group;
}
namespace {

constexpr uint32_t kNoCollector = std::numeric_limits<uint32_t>::max();
constexpr size_t kMaxCollectorsFileBytes = 16u << 20;

std::string shown(const std::string& s) { return "\"" + topology::escapeForDisplay(s) + "\""; }

bool validName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

uint32_t lineOf(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.line >= 0 ? static_cast<uint32_t>(m.line + 1) : 0;
}

}  // namespace

CollectorsLoad loadCollectors(std::istream& in, std::string_view source_name,
                              const topology::Topology& topo) {
  CollectorsLoad out;
  const std::string file(source_name);
  auto error = [&](uint32_t line, std::string message) {
    out.errors.push_back({file, line, std::move(message)});
  };
  std::string text;
  {
    std::ostringstream ss;
    char buf[65536];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      ss.write(buf, in.gcount());
      if (static_cast<size_t>(ss.tellp()) > kMaxCollectorsFileBytes) {
        error(0, "larger than 16 MiB: not a collectors file");
        return out;
      }
    }
    text = ss.str();
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    error(e.mark.line >= 0 ? static_cast<uint32_t>(e.mark.line + 1) : 0,
          "not valid YAML: " + e.msg);
    return out;
  }
  if (!root.IsMap()) {
    error(root.IsDefined() && !root.IsNull() ? lineOf(root) : 0,
          "expected a map with the key 'collectors'");
    return out;
  }
  YAML::Node list;
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (key == "collectors") {
      list = kv.second;
    } else {
      error(lineOf(kv.first), "unknown key " + shown(key) + " (expected 'collectors')");
    }
  }
  if (!list.IsDefined()) {
    error(0, "no 'collectors' map");
    return out;
  }
  if (list.IsNull()) return out;  // declared, empty
  if (!list.IsMap()) {
    error(lineOf(list), "'collectors' must map each collector name to {nodes: [...]}");
    return out;
  }
  std::map<std::string, uint32_t> collector_line;
  std::map<topology::NodeId, std::pair<std::string, uint32_t>> assigned;  // node -> collector, line
  for (const auto& kv : list) {
    const uint32_t line = lineOf(kv.first);
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    bool usable = true;
    if (!validName(name)) {
      error(line, "collector name " + shown(name) +
                      " must be 1-253 characters of A-Z, a-z, 0-9, '.', '_' and '-'");
      usable = false;
    } else if (auto it = collector_line.find(name); it != collector_line.end()) {
      error(line, "duplicate collector " + shown(name) + " (first declared at line " +
                      std::to_string(it->second) + ")");
      usable = false;
    } else if (topo.findNode(name)) {
      error(line, "collector " + shown(name) +
                      " is named like a node of the topology: a collector identity must not be "
                      "mistaken for the node's own agent");
      usable = false;
    }
    if (usable) collector_line[name] = line;
    const YAML::Node& body = kv.second;
    if (!body.IsMap()) {
      error(line, "collector " + shown(name) + ": expected {nodes: [...]}");
      continue;
    }
    YAML::Node nodes;
    for (const auto& field : body) {
      const std::string key = field.first.Scalar();
      if (key == "nodes") {
        nodes = field.second;
      } else {
        error(lineOf(field.first),
              "collector " + shown(name) + ": unknown key " + shown(key) + " (expected 'nodes')");
      }
    }
    if (!nodes.IsDefined() || !nodes.IsSequence()) {
      error(nodes.IsDefined() ? lineOf(nodes) : line,
            "collector " + shown(name) + ": 'nodes' must be a list of node names");
      continue;
    }
    CollectorIdentity c;
    c.name = name;
    std::map<topology::NodeId, uint32_t> mine;
    for (const auto& n : nodes) {
      const uint32_t nline = lineOf(n);
      const std::string node_name = n.IsScalar() ? n.Scalar() : std::string();
      auto id = topo.findNode(node_name);
      if (!id) {
        error(nline, "collector " + shown(name) + ": unknown node " + shown(node_name) +
                         " (not in topology " + topo.name + ")");
        continue;
      }
      if (auto it = mine.find(*id); it != mine.end()) {
        error(nline, "collector " + shown(name) + ": node " + shown(node_name) +
                         " listed twice (first at line " + std::to_string(it->second) + ")");
        continue;
      }
      mine[*id] = nline;
      if (auto it = assigned.find(*id); it != assigned.end()) {
        error(nline, "node " + shown(node_name) + " is assigned to collectors " +
                         shown(it->second.first) + " (line " + std::to_string(it->second.second) +
                         ") and " + shown(name) + ": one collector speaks for a node");
        continue;
      }
      assigned[*id] = {name, nline};
      c.nodes.push_back(*id);
    }
    if (usable) out.collectors.push_back(std::move(c));
  }
  if (!out.ok()) out.collectors.clear();
  return out;
}

CollectorsLoad loadCollectorsFile(const std::string& path, const topology::Topology& topo) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    CollectorsLoad out;
    out.errors.push_back({path, 0, "cannot read the collectors file"});
    return out;
  }
  return loadCollectors(in, path, topo);
}

Authority::Authority(const topology::Topology& topo, std::vector<CollectorIdentity> collectors,
                     size_t sim_agents)
    : topo_(topo), collector_of_node_(topo.nodeCount(), kNoCollector), sim_groups_(sim_agents) {
  for (uint32_t i = 0; i < collectors.size(); ++i) {
    collector_index_.emplace(collectors[i].name, i);
    for (topology::NodeId n : collectors[i].nodes) {
      if (n < collector_of_node_.size()) collector_of_node_[n] = i;
    }
  }
  if (sim_groups_ > 0) sim_group_of_node_ = simAgentGroups(topo, sim_groups_);
}

Authority::Identity Authority::identify(std::string_view agent) const {
  if (auto n = topo_.findNode(agent)) return {Kind::kNode, static_cast<uint32_t>(*n)};
  if (auto it = collector_index_.find(std::string(agent)); it != collector_index_.end()) {
    return {Kind::kCollector, it->second};
  }
  if (sim_groups_ > 0 && agent.size() > 4 && agent.substr(0, 4) == "sim-") {
    const std::string_view digits = agent.substr(4);
    if (digits.size() <= 9 && (digits.size() == 1 || digits[0] != '0')) {
      uint64_t i = 0;
      bool ok = true;
      for (char c : digits) {
        if (c < '0' || c > '9') {
          ok = false;
          break;
        }
        i = i * 10 + static_cast<uint64_t>(c - '0');
      }
      if (ok && i < sim_groups_) return {Kind::kSim, static_cast<uint32_t>(i)};
    }
  }
  return {};
}

bool Authority::inGroup(const Identity& who, topology::NodeId node) const {
  switch (who.kind) {
    case Kind::kNode:
      return node == who.index;
    case Kind::kCollector:
      return node < collector_of_node_.size() && collector_of_node_[node] == who.index;
    case Kind::kSim:
      return node < sim_group_of_node_.size() && sim_group_of_node_[node] == who.index;
    case Kind::kUnknown:
      break;
  }
  return false;
}

bool Authority::mayProbe(const Identity& who, topology::NodeId src_node) const {
  return who.kind != Kind::kCollector && inGroup(who, src_node);
}

bool Authority::mayDescribe(const Identity& who, topology::NodeId node) const {
  return inGroup(who, node);
}

}  // namespace netdiag::server
