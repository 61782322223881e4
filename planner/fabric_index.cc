#include "planner/fabric_index.h"

#include <algorithm>
#include <bit>
#include <string_view>

namespace netdiag::planner {

using topology::kNone;
using topology::Topology;

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

namespace {

uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

FabricIndex::FabricIndex(const Topology& topo, const Constraints& constraints)
    : topo_(topo),
      drained_(topo.linkCount(), false),
      absent_(topo.nodeCount(), false),
      port_edge_(topo.portCount(), kNone),
      port_key_(topo.portCount(), 0),
      switch_index_(topo.nodeCount(), kNone) {
  for (LinkId l : constraints.drained_links) {
    if (l < drained_.size()) drained_[l] = true;
  }
  for (NodeId n : constraints.absent_hosts) {
    if (n < absent_.size()) absent_[n] = true;
  }
  for (NodeId n = 0; n < topo.nodeCount(); ++n) {
    if (!topo.node(n).isHost()) {
      switch_index_[n] = static_cast<uint32_t>(switch_nodes_.size());
      switch_nodes_.push_back(n);
    }
  }
  const uint32_t s_count = switchCount();
  hop_begin_.reserve(s_count + 1);
  hop_begin_.push_back(0);
  for (uint32_t s = 0; s < s_count; ++s) {
    for (DirLinkId d : topo.outLinks(switch_nodes_[s])) {
      uint32_t to = switch_index_[topo.dirDstNode(d)];
      if (to != kNone && !drained_[Topology::linkOf(d)]) hops_.push_back({d, to});
    }
    hop_begin_.push_back(static_cast<uint32_t>(hops_.size()));
  }

  // Edge switches: any switch with a host port cabled to it.
  switch_edge_.assign(s_count, kNone);
  std::vector<uint32_t> count;
  for (PortId p = 0; p < topo.portCount(); ++p) {
    const topology::Port& port = topo.port(p);
    if (!topo.node(port.node).isHost() || port.link == kNone) continue;
    NodeId peer = topo.peerNode(p);
    uint32_t sw = switch_index_[peer];
    if (sw == kNone) continue;  // a host-to-host cable: not planned
    if (switch_edge_[sw] == kNone) {
      switch_edge_[sw] = 0;  // mark; numbered below in switch order
    }
  }
  for (uint32_t s = 0; s < s_count; ++s) {
    if (switch_edge_[s] != kNone) {
      switch_edge_[s] = static_cast<uint32_t>(edge_switch_.size());
      edge_switch_.push_back(s);
    }
  }
  count.assign(edge_switch_.size() + 1, 0);
  for (PortId p = 0; p < topo.portCount(); ++p) {
    const topology::Port& port = topo.port(p);
    if (!topo.node(port.node).isHost() || port.link == kNone) continue;
    port_key_[p] = mix64(fnv1a(port.name, fnv1a(":", fnv1a(topo.node(port.node).name))));
    uint32_t sw = switch_index_[topo.peerNode(p)];
    if (sw == kNone || drained_[port.link] || absent_[port.node]) continue;
    port_edge_[p] = switch_edge_[sw];
    host_ports_.push_back(p);
    ++count[port_edge_[p] + 1];
  }
  for (size_t e = 0; e < edge_switch_.size(); ++e) count[e + 1] += count[e];
  edge_port_begin_ = count;
  edge_ports_.resize(host_ports_.size());
  for (PortId p : host_ports_) edge_ports_[count[port_edge_[p]]++] = p;
  computeDistances();
}

void FabricIndex::computeDistances() {
  const uint32_t s_count = switchCount();
  const uint32_t e_count = edgeCount();
  dist_.assign(static_cast<size_t>(e_count) * s_count, kUnreachable);
  std::vector<uint64_t> visited(s_count), frontier(s_count), next(s_count);
  for (uint32_t base = 0; base < e_count; base += 64) {
    const uint32_t batch = std::min<uint32_t>(64, e_count - base);
    std::fill(visited.begin(), visited.end(), 0);
    std::fill(frontier.begin(), frontier.end(), 0);
    for (uint32_t j = 0; j < batch; ++j) {
      uint32_t s = edge_switch_[base + j];
      frontier[s] |= uint64_t{1} << j;
      visited[s] |= uint64_t{1} << j;
      dist_[static_cast<size_t>(base + j) * s_count + s] = 0;
    }
    for (uint32_t level = 1; level < kUnreachable; ++level) {
      std::fill(next.begin(), next.end(), 0);
      bool any = false;
      for (uint32_t u = 0; u < s_count; ++u) {
        uint64_t f = frontier[u];
        if (f == 0) continue;
        for (const Hop& h : hops(u)) next[h.to] |= f;
      }
      for (uint32_t v = 0; v < s_count; ++v) {
        uint64_t n = next[v] & ~visited[v];
        frontier[v] = n;
        if (n == 0) continue;
        any = true;
        visited[v] |= n;
        while (n != 0) {
          int j = std::countr_zero(n);
          dist_[static_cast<size_t>(base + static_cast<uint32_t>(j)) * s_count + v] =
              static_cast<uint8_t>(level);
          n &= n - 1;
        }
      }
      if (!any) break;
    }
  }
}

}  // namespace netdiag::planner
