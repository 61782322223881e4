#pragma once

// The fabric graph of formats.md §1: nodes, ports, links, and the directed
// links the analyzer blames. Ids are dense integers in file order, so they are
// stable for a given file and cheap to use as array indices at 100k+ scale.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace netdiag::topology {

using NodeId = uint32_t;
using PortId = uint32_t;
using LinkId = uint32_t;
// Directed link id: 2 * link for a->b, 2 * link + 1 for b->a.
using DirLinkId = uint32_t;
inline constexpr uint32_t kNone = UINT32_MAX;

// Known roles get an enum so hot paths never compare strings; any other word
// is kept verbatim in Node::role_name and treated as a switch.
enum class Role : uint8_t { kHost, kLeaf, kSpine, kSuperspine, kCore, kOther };

Role roleFromName(std::string_view name);
std::string_view roleName(Role role);

struct Node {
  std::string name;
  Role role = Role::kOther;
  std::string role_name;  // as written in the file
  std::optional<int64_t> pod;
  std::string addr;   // empty when absent
  uint32_t line = 0;  // source line, 0 when built in memory

  bool isHost() const { return role == Role::kHost; }
};

struct Port {
  NodeId node = kNone;
  std::string name;
  LinkId link = kNone;  // kNone: declared by no link
  std::string addr;     // interface address, empty when absent
};

struct Link {
  PortId a = kNone;
  PortId b = kNone;
  double speed_gbps = 0;  // 0: unknown
  uint32_t line = 0;
};

// Hash that lets unordered_map<std::string, T> be probed with a string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename T>
using StringMap = std::unordered_map<std::string, T, StringHash, std::equal_to<>>;

// An immutable-after-finalize() fabric graph. Building does no validation:
// the loader checks the contract's rules before it adds anything, and the
// generators produce valid fabrics by construction.
//
// Thread-safety: const methods may be called concurrently after finalize().
class Topology {
 public:
  std::string name;

  // Builders. addNode returns kNone when the name is already taken.
  NodeId addNode(Node node);
  // Returns the existing port when node:port is already known.
  PortId addPort(NodeId node, std::string_view port_name);
  // Both ports must exist and be unlinked; returns the new link's id.
  LinkId addLink(PortId a, PortId b, double speed_gbps = 0, uint32_t line = 0);
  // Pre-sizes storage when the final counts are known (generators, store).
  void reserve(size_t nodes, size_t ports, size_t links);
  // Builds the adjacency index; call once after the last add.
  void finalize();

  size_t nodeCount() const { return nodes_.size(); }
  size_t portCount() const { return ports_.size(); }
  size_t linkCount() const { return links_.size(); }
  size_t dirLinkCount() const { return 2 * links_.size(); }

  const Node& node(NodeId id) const { return nodes_[id]; }
  Node& mutableNode(NodeId id) { return nodes_[id]; }
  const Port& port(PortId id) const { return ports_[id]; }
  Port& mutablePort(PortId id) { return ports_[id]; }
  const Link& link(LinkId id) const { return links_[id]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Port>& ports() const { return ports_; }
  const std::vector<Link>& links() const { return links_; }

  std::optional<NodeId> findNode(std::string_view node_name) const;
  // ref is "node:port".
  std::optional<PortId> findPort(std::string_view ref) const;
  // name is "X:p->Y:q".
  std::optional<DirLinkId> findDirLink(std::string_view dir_name) const;

  std::string portRef(PortId id) const;  // "node:port"
  std::string dirLinkName(DirLinkId id) const;

  static LinkId linkOf(DirLinkId d) { return d / 2; }
  static DirLinkId reverse(DirLinkId d) { return d ^ 1u; }
  PortId dirSrcPort(DirLinkId d) const { return d & 1u ? links_[d / 2].b : links_[d / 2].a; }
  PortId dirDstPort(DirLinkId d) const { return d & 1u ? links_[d / 2].a : links_[d / 2].b; }
  NodeId dirSrcNode(DirLinkId d) const { return ports_[dirSrcPort(d)].node; }
  NodeId dirDstNode(DirLinkId d) const { return ports_[dirDstPort(d)].node; }
  // The directed link that leaves through port p, kNone if p is unlinked.
  DirLinkId egressOf(PortId p) const;
  // The directed link that arrives at port p, kNone if p is unlinked.
  DirLinkId ingressOf(PortId p) const;
  // The node at the other end of port p's link, kNone if p is unlinked.
  NodeId peerNode(PortId p) const;

  // Directed links leaving a node, in link-id order (valid after finalize()).
  std::span<const DirLinkId> outLinks(NodeId n) const {
    return {out_links_.data() + out_begin_[n], out_begin_[n + 1] - out_begin_[n]};
  }
  // Ports of a node in declaration order (valid after finalize()).
  std::span<const PortId> portsOf(NodeId n) const {
    return {node_ports_.data() + port_begin_[n], port_begin_[n + 1] - port_begin_[n]};
  }

 private:
  std::vector<Node> nodes_;
  std::vector<Port> ports_;
  std::vector<Link> links_;
  StringMap<NodeId> node_index_;
  StringMap<PortId> port_index_;  // key "node:port"
  // CSR adjacency, built by finalize().
  std::vector<uint32_t> out_begin_;
  std::vector<DirLinkId> out_links_;
  std::vector<uint32_t> port_begin_;
  std::vector<PortId> node_ports_;
};

// Name checks of the contract: node [A-Za-z0-9._-]+, port [A-Za-z0-9._/-]+.
bool isValidNodeName(std::string_view s);
bool isValidPortName(std::string_view s);
// Splits "node:port" at its single colon; nullopt when malformed.
std::optional<std::pair<std::string_view, std::string_view>> splitPortRef(std::string_view ref);

}  // namespace netdiag::topology
