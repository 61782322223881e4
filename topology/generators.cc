#include "topology/generators.h"

// Conventions shared by all generators (tests and docs rely on them):
//
// - Numbering: every count in a name is 1-based (spine1, su2-host7, pod 1);
//   only rails are 0-based, because rail i is the plane of NIC eth<i>.
//   Node::pod carries the same number as the name (fat-tree pod, rail SU).
// - Nodes are added top-down (core, spine, leaf, host), each tier in name order.
//   leaf-spine: spine<s>, leaf<l>, host<h> (hosts numbered across leaves);
//               roles spine / leaf / host; no pod.
//   fat-tree:   core<c>, agg<p>-<j>, edge<p>-<e>, host<p>-<e>-<h>; roles core,
//               spine (agg), leaf (edge), host; pod p on agg, edge and host.
//   rail:       core<c>; spine<s> without cores, rail<r>-spine<s> (plane r)
//               with cores; su<u>-rail<r> (the rail-r leaf of SU u);
//               su<u>-host<h>; roles core, spine, leaf, host; pod u on SU
//               leaves and hosts.
// - Ports: host NIC i is eth<i>; switch ports are swp1.. with down-ports
//   first, then up-ports, each group in the order of the links below, so a
//   node's ports are also created in number order.
// - Links, in id order: access (host-leaf) host by host and NIC by NIC, then
//   leaf-spine (edge-agg), then spine-core (agg-core). Side a is the host
//   port on access links and the lower tier on switch-switch links. Ports are
//   created as links are added, as the loader does, so writing a generated
//   fabric and loading it back yields the same ids.
// - Addresses (params.addresses): each link is a /31, addr_a even and addr_b
//   odd, handed out in link order: access links from 10.128.0.0, fabric links
//   from 10.0.0.0. validate() caps each range at 2^22 links (a /9), so the two
//   never meet. A host's Node::addr is its eth0 address.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

namespace netdiag::topology {
namespace {

// /31s in a /9: 10.0.0.0/9 for fabric links, 10.128.0.0/9 for access links.
constexpr uint64_t kMaxLinksPerRange = uint64_t{1} << 22;
constexpr uint32_t kFabricBase = (10u << 24);
constexpr uint32_t kAccessBase = (10u << 24) | (128u << 16);
constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();

// Saturating product so validate() can size absurd params without overflow.
uint64_t mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > kSaturated / a) return kSaturated;
  return a * b;
}
uint64_t add(uint64_t a, uint64_t b) { return a > kSaturated - b ? kSaturated : a + b; }

void requirePositive(std::vector<std::string>& problems, std::string_view field, int value) {
  if (value < 1) {
    problems.push_back(std::string(field) + " must be >= 1, got " + std::to_string(value));
  }
}

void requireSpeed(std::vector<std::string>& problems, std::string_view field, double value) {
  if (!std::isfinite(value) || value <= 0) {
    problems.push_back(std::string(field) + " must be a positive number, got " +
                       std::to_string(value));
  }
}

void requireBudget(std::vector<std::string>& problems, std::string_view what, uint64_t count) {
  if (count > kMaxLinksPerRange) {
    problems.push_back("too many " + std::string(what) + " links: " +
                       (count == kSaturated ? std::string("overflow") : std::to_string(count)) +
                       ", at most " + std::to_string(kMaxLinksPerRange));
  }
}

std::string dottedQuad(uint32_t a) {
  char buf[16];
  char* p = buf;
  for (int shift = 24; shift >= 0; shift -= 8) {
    p = std::to_chars(p, buf + sizeof(buf), (a >> shift) & 0xFFu).ptr;
    if (shift != 0) *p++ = '.';
  }
  return std::string(buf, p);
}

std::string ethName(int i) { return "eth" + std::to_string(i); }
std::string swpName(int64_t n) { return "swp" + std::to_string(n); }

// Adds nodes and links with the conventions above; holds only two address
// cursors, so memory is what Topology itself keeps.
class Builder {
 public:
  explicit Builder(bool addresses) : addresses_(addresses) {}

  NodeId node(std::string name, Role role, std::optional<int64_t> pod = std::nullopt) {
    Node n;
    n.name = std::move(name);
    n.role = role;
    n.role_name = std::string(roleName(role));
    n.pod = pod;
    return topo_.addNode(std::move(n));
  }

  // Host NIC to leaf port; the host port is side a.
  void access(NodeId host, int nic, NodeId leaf, int64_t leaf_port, double speed) {
    LinkId l = connect(host, ethName(nic), leaf, swpName(leaf_port), speed, access_next_);
    if (nic == 0 && addresses_) {
      topo_.mutableNode(host).addr = topo_.port(topo_.link(l).a).addr;
    }
  }

  // Lower-tier switch port (side a) to upper-tier switch port.
  void fabric(NodeId lower, int64_t lower_port, NodeId upper, int64_t upper_port, double speed) {
    connect(lower, swpName(lower_port), upper, swpName(upper_port), speed, fabric_next_);
  }

  Topology finish(std::string name) {
    topo_.name = std::move(name);
    topo_.finalize();
    return std::move(topo_);
  }

 private:
  LinkId connect(NodeId a, const std::string& pa, NodeId b, const std::string& pb, double speed,
                 uint32_t& next_addr) {
    PortId port_a = topo_.addPort(a, pa);
    PortId port_b = topo_.addPort(b, pb);
    LinkId l = topo_.addLink(port_a, port_b, speed);
    if (addresses_) {
      topo_.mutablePort(port_a).addr = dottedQuad(next_addr);
      topo_.mutablePort(port_b).addr = dottedQuad(next_addr + 1);
      next_addr += 2;
    }
    return l;
  }

  Topology topo_;
  bool addresses_;
  uint32_t access_next_ = kAccessBase;
  uint32_t fabric_next_ = kFabricBase;
};

std::string numbered(std::string_view prefix, int64_t n) {
  std::string s(prefix);
  s += std::to_string(n);
  return s;
}

}  // namespace

std::vector<std::string> validate(const LeafSpineParams& p) {
  std::vector<std::string> problems;
  requirePositive(problems, "spines", p.spines);
  requirePositive(problems, "leaves", p.leaves);
  requirePositive(problems, "hosts_per_leaf", p.hosts_per_leaf);
  requirePositive(problems, "nics_per_host", p.nics_per_host);
  requirePositive(problems, "parallel", p.parallel);
  if (p.parallel_max != 0 && p.parallel_max < p.parallel) {
    problems.push_back("parallel_max must be 0 or >= parallel (" + std::to_string(p.parallel) +
                       "), got " + std::to_string(p.parallel_max));
  }
  requireSpeed(problems, "host_speed_gbps", p.host_speed_gbps);
  requireSpeed(problems, "fabric_speed_gbps", p.fabric_speed_gbps);
  if (!problems.empty()) return problems;
  auto u = [](int v) { return static_cast<uint64_t>(v); };
  requireBudget(problems, "access", mul(mul(u(p.leaves), u(p.hosts_per_leaf)), u(p.nics_per_host)));
  requireBudget(problems, "fabric",
                mul(mul(u(p.leaves), u(p.spines)), u(std::max(p.parallel, p.parallel_max))));
  return problems;
}

int leafSpineParallel(const LeafSpineParams& p, int leaf, int spine) {
  if (p.parallel_max <= p.parallel) return p.parallel;
  return p.parallel + (leaf + spine) % (p.parallel_max - p.parallel + 1);
}

std::vector<std::string> validate(const FatTreeParams& p) {
  std::vector<std::string> problems;
  if (p.k < 2 || p.k % 2 != 0) {
    problems.push_back("k must be even and >= 2, got " + std::to_string(p.k));
  } else {
    // k^3/4 access links and k^3/2 fabric links; the fabric range binds first.
    auto k = static_cast<uint64_t>(p.k);
    requireBudget(problems, "fabric", mul(mul(k, k), k) / 2);
  }
  requireSpeed(problems, "speed_gbps", p.speed_gbps);
  return problems;
}

std::vector<std::string> validate(const RailParams& p) {
  std::vector<std::string> problems;
  requirePositive(problems, "sus", p.sus);
  requirePositive(problems, "hosts_per_su", p.hosts_per_su);
  requirePositive(problems, "rails", p.rails);
  requirePositive(problems, "spines", p.spines);
  requirePositive(problems, "leaf_uplinks", p.leaf_uplinks);
  if (p.cores < 0) problems.push_back("cores must be >= 0, got " + std::to_string(p.cores));
  requireSpeed(problems, "speed_gbps", p.speed_gbps);
  if (!problems.empty()) return problems;
  if (p.leaf_uplinks % p.spines != 0) {
    problems.push_back("leaf_uplinks must be a multiple of the " + std::to_string(p.spines) +
                       " spines a leaf connects to, got " + std::to_string(p.leaf_uplinks));
  }
  auto u = [](int v) { return static_cast<uint64_t>(v); };
  uint64_t leaves = mul(u(p.sus), u(p.rails));
  requireBudget(problems, "access", mul(leaves, u(p.hosts_per_su)));
  uint64_t leaf_spine = mul(leaves, u(p.leaf_uplinks));
  uint64_t spine_core = mul(mul(u(p.spines), u(p.rails)), u(p.cores));
  requireBudget(problems, "fabric", add(leaf_spine, spine_core));
  return problems;
}

Topology generateLeafSpine(const LeafSpineParams& p) {
  Builder b(p.addresses);
  std::vector<NodeId> spines;
  std::vector<NodeId> leaves;
  spines.reserve(static_cast<size_t>(p.spines));
  leaves.reserve(static_cast<size_t>(p.leaves));
  for (int s = 0; s < p.spines; ++s)
    spines.push_back(b.node(numbered("spine", s + 1), Role::kSpine));
  for (int l = 0; l < p.leaves; ++l) leaves.push_back(b.node(numbered("leaf", l + 1), Role::kLeaf));
  const int64_t down = int64_t{p.hosts_per_leaf} * p.nics_per_host;
  int64_t host_number = 1;
  for (int l = 0; l < p.leaves; ++l) {
    for (int h = 0; h < p.hosts_per_leaf; ++h) {
      NodeId host = b.node(numbered("host", host_number++), Role::kHost);
      for (int i = 0; i < p.nics_per_host; ++i) {
        b.access(host, i, leaves[l], int64_t{h} * p.nics_per_host + i + 1, p.host_speed_gbps);
      }
    }
  }
  // Up-ports of a leaf and down-ports of a spine are numbered in link order;
  // with equal counts this is leaf port down + s * parallel + k + 1 and spine
  // port l * parallel + k + 1.
  std::vector<int64_t> spine_next(static_cast<size_t>(p.spines), 1);
  for (int l = 0; l < p.leaves; ++l) {
    int64_t leaf_next = down + 1;
    for (int s = 0; s < p.spines; ++s) {
      const int n = leafSpineParallel(p, l, s);
      for (int k = 0; k < n; ++k) {
        b.fabric(leaves[l], leaf_next++, spines[s], spine_next[static_cast<size_t>(s)]++,
                 p.fabric_speed_gbps);
      }
    }
  }
  return b.finish("leaf-spine");
}

Topology generateFatTree(const FatTreeParams& p) {
  Builder b(p.addresses);
  const int k = p.k;
  const int half = k / 2;
  std::vector<NodeId> cores;
  std::vector<NodeId> aggs;   // pod-major: aggs[pod * half + j]
  std::vector<NodeId> edges;  // pod-major: edges[pod * half + e]
  cores.reserve(static_cast<size_t>(half * half));
  aggs.reserve(static_cast<size_t>(k * half));
  edges.reserve(static_cast<size_t>(k * half));
  for (int c = 0; c < half * half; ++c)
    cores.push_back(b.node(numbered("core", c + 1), Role::kCore));
  for (int pod = 0; pod < k; ++pod) {
    std::string prefix = "agg" + std::to_string(pod + 1) + "-";
    for (int j = 0; j < half; ++j)
      aggs.push_back(b.node(numbered(prefix, j + 1), Role::kSpine, pod + 1));
  }
  for (int pod = 0; pod < k; ++pod) {
    std::string prefix = "edge" + std::to_string(pod + 1) + "-";
    for (int e = 0; e < half; ++e)
      edges.push_back(b.node(numbered(prefix, e + 1), Role::kLeaf, pod + 1));
  }
  for (int pod = 0; pod < k; ++pod) {
    for (int e = 0; e < half; ++e) {
      std::string prefix = "host" + std::to_string(pod + 1) + "-" + std::to_string(e + 1) + "-";
      for (int h = 0; h < half; ++h) {
        NodeId host = b.node(numbered(prefix, h + 1), Role::kHost, pod + 1);
        b.access(host, 0, edges[static_cast<size_t>(pod * half + e)], h + 1, p.speed_gbps);
      }
    }
  }
  for (int pod = 0; pod < k; ++pod) {
    for (int e = 0; e < half; ++e) {
      for (int j = 0; j < half; ++j) {
        b.fabric(edges[static_cast<size_t>(pod * half + e)], half + j + 1,
                 aggs[static_cast<size_t>(pod * half + j)], e + 1, p.speed_gbps);
      }
    }
  }
  for (int pod = 0; pod < k; ++pod) {
    for (int j = 0; j < half; ++j) {
      for (int c = 0; c < half; ++c) {
        b.fabric(aggs[static_cast<size_t>(pod * half + j)], half + c + 1,
                 cores[static_cast<size_t>(j * half + c)], pod + 1, p.speed_gbps);
      }
    }
  }
  return b.finish("fat-tree-k" + std::to_string(k));
}

Topology generateRail(const RailParams& p) {
  Builder b(p.addresses);
  const bool planes = p.cores > 0;
  const int per_spine = p.leaf_uplinks / p.spines;  // parallel links per leaf-spine pair
  const size_t spine_count = static_cast<size_t>(p.spines) * (planes ? p.rails : 1);
  std::vector<NodeId> cores;
  std::vector<NodeId> spines;  // with planes: spines[rail * p.spines + s]
  std::vector<NodeId> leaves;  // leaves[su * p.rails + rail]
  cores.reserve(static_cast<size_t>(p.cores));
  spines.reserve(spine_count);
  leaves.reserve(static_cast<size_t>(p.sus) * static_cast<size_t>(p.rails));
  for (int c = 0; c < p.cores; ++c) cores.push_back(b.node(numbered("core", c + 1), Role::kCore));
  if (planes) {
    for (int r = 0; r < p.rails; ++r) {
      std::string prefix = "rail" + std::to_string(r) + "-spine";
      for (int s = 0; s < p.spines; ++s)
        spines.push_back(b.node(numbered(prefix, s + 1), Role::kSpine));
    }
  } else {
    for (int s = 0; s < p.spines; ++s)
      spines.push_back(b.node(numbered("spine", s + 1), Role::kSpine));
  }
  for (int u = 0; u < p.sus; ++u) {
    std::string prefix = "su" + std::to_string(u + 1) + "-rail";
    for (int r = 0; r < p.rails; ++r)
      leaves.push_back(b.node(numbered(prefix, r), Role::kLeaf, u + 1));
  }
  for (int u = 0; u < p.sus; ++u) {
    std::string prefix = "su" + std::to_string(u + 1) + "-host";
    const size_t su_leaves = static_cast<size_t>(u) * static_cast<size_t>(p.rails);
    for (int h = 0; h < p.hosts_per_su; ++h) {
      NodeId host = b.node(numbered(prefix, h + 1), Role::kHost, u + 1);
      for (int r = 0; r < p.rails; ++r)
        b.access(host, r, leaves[su_leaves + static_cast<size_t>(r)], h + 1, p.speed_gbps);
    }
  }
  // A spine's down-ports are numbered by the leaves that reach it, in link order:
  // every leaf without planes, the plane's leaves (one per SU) with them.
  for (int u = 0; u < p.sus; ++u) {
    for (int r = 0; r < p.rails; ++r) {
      NodeId leaf =
          leaves[static_cast<size_t>(u) * static_cast<size_t>(p.rails) + static_cast<size_t>(r)];
      int64_t spine_slot = planes ? u : int64_t{u} * p.rails + r;
      size_t plane_base = planes ? static_cast<size_t>(r) * static_cast<size_t>(p.spines) : 0;
      for (int s = 0; s < p.spines; ++s) {
        for (int k = 0; k < per_spine; ++k) {
          b.fabric(leaf, int64_t{p.hosts_per_su} + int64_t{s} * per_spine + k + 1,
                   spines[plane_base + static_cast<size_t>(s)], spine_slot * per_spine + k + 1,
                   p.speed_gbps);
        }
      }
    }
  }
  if (planes) {
    const int64_t spine_down = int64_t{p.sus} * per_spine;
    for (size_t s = 0; s < spines.size(); ++s) {
      for (int c = 0; c < p.cores; ++c) {
        b.fabric(spines[s], spine_down + c + 1, cores[static_cast<size_t>(c)],
                 static_cast<int64_t>(s) + 1, p.speed_gbps);
      }
    }
  }
  return b.finish("rail-" + std::to_string(p.sus) + "su");
}

}  // namespace netdiag::topology
