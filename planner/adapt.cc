// adaptPlan: add flows where path discovery saw too few flows on a link;
// focusPlan: add flows across suspects the analyzer cannot yet tell apart.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "planner/fabric_index.h"
#include "planner/plan.h"

namespace netdiag::planner {
namespace {

using topology::kNone;
using topology::Topology;

class Adapter {
 public:
  Adapter(const FabricIndex& idx, const Plan& plan, const AdaptOptions& o)
      : idx_(idx), topo_(idx.topology()), o_(o), port_slot_(topo_.portCount(), kNone) {
    result_.plan = plan;
    result_.plan.version = plan.version + 1;
    for (size_t i = 0; i < result_.plan.ports.size(); ++i) {
      PortId p = result_.plan.ports[i].src;
      if (p < port_slot_.size() && idx_.edgeOfPort(p) != kNone)
        port_slot_[p] = static_cast<uint32_t>(i);
    }
    added_.assign(result_.plan.ports.size(), 0);
    max_flows_ =
        static_cast<size_t>(std::floor(plan.budget.probes_per_second / kMinProbesPerSecondPerFlow));
    mass_.assign(idx_.switchCount(), 0);
    stamp_.assign(idx_.switchCount(), kNone);
  }

  void run(std::span<const uint32_t> observed) {
    const int want = static_cast<int>(std::ceil(o_.min_flows * o_.safety));
    for (DirLinkId d = 0; d < topo_.dirLinkCount(); ++d) {
      const uint32_t seen = d < observed.size() ? observed[d] : 0;
      if (seen >= static_cast<uint32_t>(std::max(o_.min_flows, 0))) continue;
      if (!idx_.linkUp(Topology::linkOf(d))) continue;
      const NodeId a = topo_.dirSrcNode(d), b = topo_.dirDstNode(d);
      const bool ha = topo_.node(a).isHost(), hb = topo_.node(b).isHost();
      if (ha && hb) continue;
      const double need = want - static_cast<double>(seen);
      if (ha != hb) {
        PortId hp = ha ? topo_.dirSrcPort(d) : topo_.dirDstPort(d);
        if (idx_.edgeOfPort(hp) == kNone) continue;  // absent: nothing to cover
        result_.thin.push_back(d);
        if (!fixAccess(hp, need)) result_.unfixable.push_back(d);
      } else {
        result_.thin.push_back(d);
        const bool fixed =
            o_.existing_peers_only ? fixSwitchLinkByPeers(d, need) : fixSwitchLink(d, need);
        if (!fixed) result_.unfixable.push_back(d);
      }
    }
    for (size_t i = 0; i < result_.plan.ports.size(); ++i) {
      if (added_[i] == 0) continue;
      PortPlan& pp = result_.plan.ports[i];
      pp.probes_per_second_per_flow =
          result_.plan.budget.probes_per_second / static_cast<double>(pp.flows.size());
    }
  }

  AdaptResult take() { return std::move(result_); }

 private:
  bool hasRoom(uint32_t slot) const {
    return slot != kNone && added_[slot] < o_.max_added_flows_per_port &&
           result_.plan.ports[slot].flows.size() < max_flows_;
  }

  // Round-robin over `pairs` (each with the expected `share` of a flow that
  // crosses the link), `add` adding one flow for a pair (false: it could
  // not), until the expected new crossing flows reach `need` or no pair can
  // add any more. True when any flow was added.
  template <typename Pairs, typename Add>
  static bool roundRobin(const Pairs& pairs, double need, Add add) {
    double expected = 0;
    for (bool progress = true; expected < need && progress;) {
      progress = false;
      for (const auto& pr : pairs) {
        if (expected >= need) break;
        if (!add(pr)) continue;
        expected += pr.share;
        progress = true;
      }
    }
    return expected > 0;
  }

  // Adds one flow from plan slot `slot` to `dst`, on the next free source
  // port of that pair. False when the UDP port space runs out.
  bool addFlow(uint32_t slot, PortId dst) {
    PortPlan& pp = result_.plan.ports[slot];
    uint32_t next = result_.plan.budget.first_source_port;
    for (const Flow& f : pp.flows) {
      if (f.dst == dst) next = std::max<uint32_t>(next, f.source_port + 1u);
    }
    if (next > UINT16_MAX) return false;
    pp.flows.push_back({dst, static_cast<uint16_t>(next)});
    ++added_[slot];
    ++result_.flows_added;
    return true;
  }

  // Every flow of a port crosses both directions of its access link: add
  // flows to the port's existing peers (or its edge switch's other ports).
  bool fixAccess(PortId hp, double need) {
    uint32_t slot = port_slot_[hp];
    if (slot == kNone) return false;
    std::vector<PortId> peers;
    for (const Flow& f : result_.plan.ports[slot].flows) {
      if (std::find(peers.begin(), peers.end(), f.dst) == peers.end()) peers.push_back(f.dst);
    }
    if (peers.empty() && o_.existing_peers_only) return false;
    if (peers.empty()) {
      for (PortId q : idx_.portsAt(idx_.edgeOfPort(hp))) {
        if (q != hp) peers.push_back(q);
      }
      // Else any plannable port of another edge switch.
      for (PortId q : idx_.hostPorts()) {
        if (!peers.empty()) break;
        if (q != hp) peers.push_back(q);
      }
    }
    if (peers.empty()) return false;
    size_t added = 0;
    for (size_t i = 0; added < need && hasRoom(slot); ++i) {
      if (!addFlow(slot, peers[i % peers.size()])) break;
      ++added;
    }
    return added > 0;
  }

  // Share of directed link `d` on the per-hop ECMP paths from switch `from`
  // to edge switch `target` (mass pushed in order of decreasing distance).
  double pairShare(uint32_t from, uint32_t target, DirLinkId d) {
    const auto row = idx_.distanceRow(target);
    ++epoch_;
    std::vector<std::vector<uint32_t>> levels(row[from] + 1u);
    auto touch = [&](uint32_t sw) {
      if (stamp_[sw] == epoch_) return;
      stamp_[sw] = epoch_;
      mass_[sw] = 0;
      levels[row[sw]].push_back(sw);
    };
    touch(from);
    mass_[from] = 1;
    double share = 0;
    std::vector<FabricIndex::Hop> next;
    for (size_t level = row[from]; level >= 1; --level) {
      for (uint32_t u : levels[level]) {
        next.clear();
        for (const FabricIndex::Hop& h : idx_.hops(u)) {
          if (row[h.to] + 1u == level) next.push_back(h);
        }
        if (next.empty()) continue;
        double each = mass_[u] / static_cast<double>(next.size());
        for (const FabricIndex::Hop& h : next) {
          if (h.link == d) share += each;
          touch(h.to);
          mass_[h.to] += each;
        }
      }
    }
    return share;
  }

  // Finds (source edge, destination edge) pairs whose shortest paths may
  // cross u->v, in an order hashed from (seed, link), and adds flows between
  // their ports until the expected number of new crossing flows reaches
  // `need`.
  bool fixSwitchLink(DirLinkId d, double need) {
    const uint32_t su = idx_.switchIndex(topo_.dirSrcNode(d));
    const uint32_t sv = idx_.switchIndex(topo_.dirDstNode(d));
    const uint64_t base = hashCombine(result_.plan.seed, d);
    std::vector<std::pair<uint64_t, uint32_t>> dests;
    for (uint32_t e = 0; e < idx_.edgeCount(); ++e) {
      if (idx_.portsAt(e).empty()) continue;
      uint8_t du = idx_.distance(e, su), dv = idx_.distance(e, sv);
      if (du == FabricIndex::kUnreachable || dv + 1u != du) continue;
      dests.push_back({hashCombine(base, e), e});
    }
    std::sort(dests.begin(), dests.end());
    if (dests.size() > 8) dests.resize(8);
    struct Pair {
      uint32_t src_edge, dst_edge;
      double share;
    };
    std::vector<Pair> pairs;
    for (auto [h, de] : dests) {
      const auto row = idx_.distanceRow(de);
      std::vector<std::pair<uint64_t, uint32_t>> srcs;
      for (uint32_t e = 0; e < idx_.edgeCount(); ++e) {
        if (e == de || idx_.portsAt(e).empty()) continue;
        uint8_t to_u = idx_.distance(e, su);
        uint32_t se = idx_.edgeSwitch(e);
        if (to_u == FabricIndex::kUnreachable || row[se] == FabricIndex::kUnreachable) continue;
        if (to_u + row[su] != row[se]) continue;
        srcs.push_back({hashCombine(h, e), e});
      }
      std::sort(srcs.begin(), srcs.end());
      if (srcs.size() > 4) srcs.resize(4);
      for (auto [hs, se] : srcs) {
        double q = pairShare(idx_.edgeSwitch(se), de, d);
        if (q > 0) pairs.push_back({se, de, q});
      }
    }
    return roundRobin(pairs, need, [&](const Pair& pr) {
      // The source port with the fewest added flows, then the peer it
      // already has at the destination edge switch, if any.
      uint32_t slot = kNone;
      for (PortId p : idx_.portsAt(pr.src_edge)) {
        uint32_t s = port_slot_[p];
        if (hasRoom(s) && (slot == kNone || added_[s] < added_[slot])) slot = s;
      }
      if (slot == kNone) return false;
      PortId dst = kNone;
      for (const Flow& f : result_.plan.ports[slot].flows) {
        if (idx_.edgeOfPort(f.dst) == pr.dst_edge) {
          dst = f.dst;
          break;
        }
      }
      if (dst == kNone) {
        auto ports = idx_.portsAt(pr.dst_edge);
        uint64_t key = idx_.portKey(result_.plan.ports[slot].src);
        uint64_t best = 0;
        for (PortId q : ports) {
          uint64_t s = hashCombine(hashCombine(result_.plan.seed, key), idx_.portKey(q));
          if (dst == kNone || s > best) {
            dst = q;
            best = s;
          }
        }
      }
      return addFlow(slot, dst);
    });
  }

  // As fixSwitchLink, between pairs the plan has: source edge switches whose
  // shortest paths may reach u->v (in an order hashed from (seed, link)),
  // and those of their ports' peers that lie beyond it.
  bool fixSwitchLinkByPeers(DirLinkId d, double need) {
    const uint32_t su = idx_.switchIndex(topo_.dirSrcNode(d));
    const uint32_t sv = idx_.switchIndex(topo_.dirDstNode(d));
    const uint64_t base = hashCombine(result_.plan.seed, d);
    std::vector<std::pair<uint64_t, uint32_t>> srcs;
    for (uint32_t e = 0; e < idx_.edgeCount(); ++e) {
      if (idx_.portsAt(e).empty() || idx_.distance(e, su) == FabricIndex::kUnreachable) continue;
      srcs.push_back({hashCombine(base, e), e});
    }
    std::sort(srcs.begin(), srcs.end());
    struct Pair {
      uint32_t slot;
      PortId dst;
      double share;
    };
    std::vector<Pair> pairs;
    std::vector<std::pair<uint32_t, double>> share_of;  // (dst edge, share) from this source edge
    for (auto [h, se] : srcs) {
      if (pairs.size() >= 64) break;
      const uint8_t to_u = idx_.distance(se, su);
      share_of.clear();
      for (PortId p : idx_.portsAt(se)) {
        const uint32_t slot = port_slot_[p];
        if (slot == kNone) continue;
        PortId last = kNone;
        for (const Flow& f : result_.plan.ports[slot].flows) {
          if (f.dst == last) continue;  // flows are grouped by peer
          last = f.dst;
          const uint32_t de = idx_.edgeOfPort(f.dst);
          if (de == kNone || de == se) continue;
          const uint8_t du = idx_.distance(de, su), dv = idx_.distance(de, sv);
          const auto row = idx_.distanceRow(de);
          if (du == FabricIndex::kUnreachable || dv + 1u != du ||
              to_u + row[su] != row[idx_.edgeSwitch(se)]) {
            continue;
          }
          auto it = std::find_if(share_of.begin(), share_of.end(),
                                 [de](const auto& x) { return x.first == de; });
          if (it == share_of.end()) {
            share_of.push_back({de, pairShare(idx_.edgeSwitch(se), de, d)});
            it = share_of.end() - 1;
          }
          if (it->second > 0) pairs.push_back({slot, f.dst, it->second});
        }
      }
    }
    return roundRobin(pairs, need,
                      [&](const Pair& pr) { return hasRoom(pr.slot) && addFlow(pr.slot, pr.dst); });
  }

  const FabricIndex& idx_;
  const Topology& topo_;
  const AdaptOptions& o_;
  AdaptResult result_;
  std::vector<uint32_t> port_slot_;
  std::vector<int> added_;
  size_t max_flows_ = 0;
  std::vector<double> mass_;
  std::vector<uint32_t> stamp_;
  uint32_t epoch_ = 0;
};

}  // namespace

AdaptResult adaptPlan(const FabricIndex& index, const Plan& plan,
                      std::span<const uint32_t> observed_flows, const AdaptOptions& options) {
  Adapter a(index, plan, options);
  a.run(observed_flows);
  return a.take();
}

AdaptResult adaptPlan(const topology::Topology& topo, const Plan& plan,
                      const Constraints& constraints, std::span<const uint32_t> observed_flows,
                      const AdaptOptions& options) {
  FabricIndex idx(topo, constraints);
  return adaptPlan(idx, plan, observed_flows, options);
}

AdaptResult focusPlan(const FabricIndex& index, const Plan& plan,
                      std::span<const DirLinkId> suspects, AdaptOptions options) {
  // A suspect is a link with no flow seen on it; every other link has plenty.
  std::vector<uint32_t> observed(index.topology().dirLinkCount(), UINT32_MAX);
  for (DirLinkId d : suspects) {
    if (d < observed.size()) observed[d] = 0;
  }
  options.existing_peers_only = true;
  return adaptPlan(index, plan, observed, options);
}

AdaptResult focusPlan(const topology::Topology& topo, const Plan& plan,
                      const Constraints& constraints, std::span<const DirLinkId> suspects,
                      const AdaptOptions& options) {
  FabricIndex idx(topo, constraints);
  return focusPlan(idx, plan, suspects, options);
}

}  // namespace netdiag::planner
