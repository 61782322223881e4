#include "topology/model.h"

#include <algorithm>
#include <array>

namespace netdiag::topology {
namespace {

constexpr std::array<std::string_view, 5> kRoleNames = {"host", "leaf", "spine", "superspine",
                                                        "core"};

bool isNameChar(char c, bool allow_slash) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || (allow_slash && c == '/');
}

bool allNameChars(std::string_view s, bool allow_slash) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [&](char c) { return isNameChar(c, allow_slash); });
}

}  // namespace

Role roleFromName(std::string_view name) {
  for (size_t i = 0; i < kRoleNames.size(); ++i) {
    if (kRoleNames[i] == name) return static_cast<Role>(i);
  }
  return Role::kOther;
}

std::string_view roleName(Role role) {
  auto i = static_cast<size_t>(role);
  return i < kRoleNames.size() ? kRoleNames[i] : std::string_view("other");
}

bool isValidNodeName(std::string_view s) { return allNameChars(s, false); }
bool isValidPortName(std::string_view s) { return allNameChars(s, true); }

std::optional<std::pair<std::string_view, std::string_view>> splitPortRef(std::string_view ref) {
  auto colon = ref.find(':');
  if (colon == std::string_view::npos || ref.find(':', colon + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  auto node = ref.substr(0, colon);
  auto port = ref.substr(colon + 1);
  if (!isValidNodeName(node) || !isValidPortName(port)) return std::nullopt;
  return std::make_pair(node, port);
}

NodeId Topology::addNode(Node node) {
  auto id = static_cast<NodeId>(nodes_.size());
  if (!node_index_.emplace(node.name, id).second) return kNone;
  nodes_.push_back(std::move(node));
  return id;
}

PortId Topology::addPort(NodeId node, std::string_view port_name) {
  std::string ref = nodes_[node].name;
  ref += ':';
  ref += port_name;
  auto id = static_cast<PortId>(ports_.size());
  auto [it, inserted] = port_index_.emplace(std::move(ref), id);
  if (!inserted) return it->second;
  ports_.push_back(Port{node, std::string(port_name), kNone, {}});
  return id;
}

LinkId Topology::addLink(PortId a, PortId b, double speed_gbps, uint32_t line) {
  auto id = static_cast<LinkId>(links_.size());
  links_.push_back(Link{a, b, speed_gbps, line});
  ports_[a].link = id;
  ports_[b].link = id;
  return id;
}

void Topology::reserve(size_t nodes, size_t ports, size_t links) {
  nodes_.reserve(nodes);
  ports_.reserve(ports);
  links_.reserve(links);
  node_index_.reserve(nodes);
  port_index_.reserve(ports);
}

void Topology::finalize() {
  const size_t n = nodes_.size();
  out_begin_.assign(n + 1, 0);
  port_begin_.assign(n + 1, 0);
  for (const auto& l : links_) {
    ++out_begin_[ports_[l.a].node + 1];
    ++out_begin_[ports_[l.b].node + 1];
  }
  for (const auto& p : ports_) ++port_begin_[p.node + 1];
  for (size_t i = 0; i < n; ++i) {
    out_begin_[i + 1] += out_begin_[i];
    port_begin_[i + 1] += port_begin_[i];
  }
  out_links_.assign(out_begin_[n], kNone);
  node_ports_.assign(port_begin_[n], kNone);
  std::vector<uint32_t> fill(out_begin_.begin(), out_begin_.end() - 1);
  for (LinkId l = 0; l < links_.size(); ++l) {
    out_links_[fill[ports_[links_[l].a].node]++] = 2 * l;
    out_links_[fill[ports_[links_[l].b].node]++] = 2 * l + 1;
  }
  fill.assign(port_begin_.begin(), port_begin_.end() - 1);
  for (PortId p = 0; p < ports_.size(); ++p) node_ports_[fill[ports_[p].node]++] = p;
}

std::optional<NodeId> Topology::findNode(std::string_view node_name) const {
  auto it = node_index_.find(node_name);
  if (it == node_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<PortId> Topology::findPort(std::string_view ref) const {
  auto it = port_index_.find(ref);
  if (it == port_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<DirLinkId> Topology::findDirLink(std::string_view dir_name) const {
  auto arrow = dir_name.find("->");
  if (arrow == std::string_view::npos) return std::nullopt;
  auto src = findPort(dir_name.substr(0, arrow));
  auto dst = findPort(dir_name.substr(arrow + 2));
  if (!src || !dst) return std::nullopt;
  DirLinkId d = egressOf(*src);
  if (d == kNone || dirDstPort(d) != *dst) return std::nullopt;
  return d;
}

std::string Topology::portRef(PortId id) const {
  const Port& p = ports_[id];
  std::string ref = nodes_[p.node].name;
  ref += ':';
  ref += p.name;
  return ref;
}

std::string Topology::dirLinkName(DirLinkId id) const {
  return portRef(dirSrcPort(id)) + "->" + portRef(dirDstPort(id));
}

DirLinkId Topology::egressOf(PortId p) const {
  LinkId l = ports_[p].link;
  if (l == kNone) return kNone;
  return links_[l].a == p ? 2 * l : 2 * l + 1;
}

DirLinkId Topology::ingressOf(PortId p) const {
  DirLinkId d = egressOf(p);
  return d == kNone ? kNone : reverse(d);
}

NodeId Topology::peerNode(PortId p) const {
  DirLinkId d = egressOf(p);
  return d == kNone ? kNone : dirDstNode(d);
}

}  // namespace netdiag::topology
