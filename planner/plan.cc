#include "planner/plan.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "planner/fabric_index.h"

namespace netdiag::planner {
namespace {

using topology::kNone;

// Remote peers per host port before the fabric's shape asks for more: enough
// that, with 4 flows per peer, a leaf uplink in a fabric with as many uplinks
// as host ports expects 2 x 8 x 4 = 64 crossing flows (see docs/planner.md).
constexpr int kBaseRemotePeers = 8;
constexpr int kMaxDerivedRemotePeers = 64;
// Expected distinct flows per directed link the derivation aims for; the
// coverage target (29.3 for P(>= 8) >= 1 - 1e-6) plus headroom.
constexpr double kDesignFlows = 40;

std::string fmt(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

uint64_t score(uint64_t seed, uint64_t src_key, uint64_t dst_key) {
  return hashCombine(hashCombine(seed, src_key), dst_key);
}

// One class of candidate destination edge switches: all at one distance.
struct PeerClass {
  uint8_t distance = 0;
  uint32_t begin = 0, end = 0;  // range in the edges buffer
  uint32_t valid_edges = 0;     // with at least one plannable port
  uint32_t ports = 0;
  int take = 0;
};

// What derivation gives a budget with peers == 0.
struct Derived {
  int peers = 0;         // per host port, the same-leaf peer included
  int remote_flows = 0;  // flows to remote peers per host port the fabric's shape asks for
};

class Planner {
 public:
  Planner(const FabricIndex& idx, const Budget& budget, uint64_t seed, int peers, int remote_flows)
      : idx_(idx),
        topo_(idx.topology()),
        budget_(budget),
        seed_(seed),
        peers_(peers),
        remote_flows_(remote_flows) {}

  void planEdge(uint32_t e, std::vector<PortPlan>& out) {
    auto ports = idx_.portsAt(e);
    if (ports.empty()) return;
    buildClasses(e);
    const bool same_leaf = ports.size() > 1;
    const bool local = same_leaf && peers_ > 0;
    const int remote = peers_ - (same_leaf ? 1 : 0);
    const int per_remote = remoteFlowsPerPeer(allocate(remote), local);
    std::vector<PortId> peers;
    for (PortId p : ports) {
      peers.clear();
      if (local) peers.push_back(bestPort(p, ports, p));
      for (const PeerClass& c : classes_) {
        if (c.take > 0) pickInClass(p, c, peers);
      }
      PortPlan pp;
      pp.src = p;
      pp.flows.reserve(peers.size() * static_cast<size_t>(per_remote));
      for (size_t k = 0; k < peers.size(); ++k) {
        const int n = local && k == 0 ? budget_.flows_per_peer : per_remote;
        for (int i = 0; i < n; ++i) {
          pp.flows.push_back({peers[k], static_cast<uint16_t>(budget_.first_source_port + i)});
        }
      }
      pp.probes_per_second_per_flow =
          pp.flows.empty() ? 0 : budget_.probes_per_second / static_cast<double>(pp.flows.size());
      out.push_back(std::move(pp));
    }
  }

 private:
  // Groups the other edge switches by hop distance from edge e (a counting
  // sort: distances are small), nearest class first.
  void buildClasses(uint32_t e) {
    const uint32_t sw = idx_.edgeSwitch(e);
    const uint32_t n = idx_.edgeCount();
    std::fill(bucket_count_.begin(), bucket_count_.end(), 0);
    bucket_count_.resize(257, 0);
    for (uint32_t e2 = 0; e2 < n; ++e2) {
      uint8_t d = idx_.distance(e2, sw);
      if (e2 == e || d == FabricIndex::kUnreachable) continue;
      ++bucket_count_[d + 1u];
    }
    for (size_t i = 1; i < bucket_count_.size(); ++i) bucket_count_[i] += bucket_count_[i - 1];
    edges_.resize(bucket_count_.back());
    std::vector<uint32_t> fill(bucket_count_.begin(), bucket_count_.end() - 1);
    for (uint32_t e2 = 0; e2 < n; ++e2) {
      uint8_t d = idx_.distance(e2, sw);
      if (e2 == e || d == FabricIndex::kUnreachable) continue;
      edges_[fill[d]++] = e2;
    }
    classes_.clear();
    for (uint32_t d = 0; d < 256; ++d) {
      if (bucket_count_[d + 1] == bucket_count_[d]) continue;
      PeerClass c;
      c.distance = static_cast<uint8_t>(d);
      c.begin = bucket_count_[d];
      c.end = bucket_count_[d + 1];
      for (uint32_t i = c.begin; i < c.end; ++i) {
        auto k = static_cast<uint32_t>(idx_.portsAt(edges_[i]).size());
        c.ports += k;
        c.valid_edges += k > 0 ? 1u : 0u;
      }
      if (c.valid_edges > 0) classes_.push_back(c);
    }
  }

  // Flows per remote peer. The derivation sized a port's remote flows to
  // its edge switch's uplinks; where the fabric has fewer remote ports than
  // derived peers (a small fabric), the missing peers' flows go to the peers
  // there are, on more source ports each, so the uplinks still get them.
  // Distinct 5-tuples hash independently, so for coverage a second flow to
  // one peer is worth a flow to another.
  int remoteFlowsPerPeer(int granted, bool local) const {
    const int base = budget_.flows_per_peer;
    if (granted <= 0 || granted * base >= remote_flows_) return base;
    int n = (remote_flows_ + granted - 1) / granted;
    // Keep every flow at or above the minimum rate, and room for adaptPlan's
    // source ports above the last one (validate() checks the same for base).
    const int max_flows =
        static_cast<int>(std::floor(budget_.probes_per_second / kMinProbesPerSecondPerFlow));
    const int room = UINT16_MAX + 1 - kMaxFlowsPerPeer - budget_.first_source_port;
    n = std::min({n, kMaxFlowsPerPeer, room, (max_flows - (local ? base : 0)) / granted});
    return std::max(n, base);
  }

  // Splits `remote` peers over the classes: one per class when there are
  // enough (so every tier is exercised), the rest in proportion to the
  // number of edge switches in each class (uniform over destination
  // leaves); with too few, the farthest classes first, since their paths
  // cross every tier. Returns the peers granted (at most the ports there are).
  int allocate(int remote) {
    uint64_t available = 0;
    for (const PeerClass& c : classes_) available += c.ports;
    remote =
        static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(std::max(remote, 0)), available));
    for (PeerClass& c : classes_) c.take = 0;
    if (remote == 0 || classes_.empty()) return 0;
    const int n = static_cast<int>(classes_.size());
    if (remote < n) {
      for (int i = 0; i < remote; ++i) classes_[static_cast<size_t>(n - 1 - i)].take = 1;
      return remote;
    }
    for (PeerClass& c : classes_) c.take = 1;
    int left = remote - n;
    double weight = 0;
    for (const PeerClass& c : classes_) weight += c.valid_edges;
    std::vector<std::pair<double, size_t>> remainders;
    int given = 0;
    for (size_t i = 0; i < classes_.size(); ++i) {
      double exact = left * classes_[i].valid_edges / weight;
      int whole = static_cast<int>(std::floor(exact));
      classes_[i].take += whole;
      given += whole;
      remainders.push_back({exact - whole, i});
    }
    std::stable_sort(remainders.begin(), remainders.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t i = 0; given < left; ++i, ++given)
      ++classes_[remainders[i % remainders.size()].second].take;
    // Classes with fewer ports than their share pass the overflow on, to the
    // farthest classes first.
    int overflow = 0;
    for (PeerClass& c : classes_) {
      if (c.take > static_cast<int>(c.ports)) {
        overflow += c.take - static_cast<int>(c.ports);
        c.take = static_cast<int>(c.ports);
      }
    }
    for (size_t i = classes_.size(); i-- > 0 && overflow > 0;) {
      int room = static_cast<int>(classes_[i].ports) - classes_[i].take;
      int add = std::min(room, overflow);
      classes_[i].take += add;
      overflow -= add;
    }
    return remote;
  }

  // The port at an edge switch with the highest rendezvous score for `src`,
  // ports of other hosts first; `exclude` is never chosen.
  PortId bestPort(PortId src, std::span<const PortId> ports, PortId exclude) const {
    const uint64_t key = idx_.portKey(src);
    const NodeId host = topo_.port(src).node;
    PortId best = kNone;
    std::pair<bool, uint64_t> best_score{false, 0};
    for (PortId q : ports) {
      if (q == exclude) continue;
      std::pair<bool, uint64_t> s{topo_.port(q).node != host, score(seed_, key, idx_.portKey(q))};
      if (best == kNone || s > best_score) {
        best = q;
        best_score = s;
      }
    }
    return best;
  }

  // The top `k` ports of an edge switch by rendezvous score.
  void topPorts(PortId src, std::span<const PortId> ports, size_t k, std::vector<PortId>& out) {
    if (k == 1) {
      out.push_back(bestPort(src, ports, kNone));
      return;
    }
    const uint64_t key = idx_.portKey(src);
    const NodeId host = topo_.port(src).node;
    scored_.clear();
    for (PortId q : ports) {
      scored_.push_back({{topo_.port(q).node != host, score(seed_, key, idx_.portKey(q))}, q});
    }
    k = std::min(k, scored_.size());
    std::partial_sort(scored_.begin(), scored_.begin() + static_cast<std::ptrdiff_t>(k),
                      scored_.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t i = 0; i < k; ++i) out.push_back(scored_[i].second);
  }

  // Picks c.take peers in class c: distinct destination edge switches drawn
  // by a hash sequence of (seed, src, distance, i) over the class's edge
  // list, which does not change when hosts come and go; then the port of
  // each by rendezvous hashing, so only the flows to a vanished port move.
  void pickInClass(PortId p, const PeerClass& c, std::vector<PortId>& out) {
    const uint32_t n = c.end - c.begin;
    const auto take = static_cast<uint32_t>(c.take);
    const uint64_t base = hashCombine(hashCombine(seed_, idx_.portKey(p)), c.distance);
    chosen_.clear();
    if (take <= c.valid_edges) {
      const uint32_t attempts = 8 * take + 64;
      for (uint32_t i = 0; i < attempts && chosen_.size() < take; ++i) {
        uint32_t e2 = edges_[c.begin + static_cast<uint32_t>(hashCombine(base, i) % n)];
        if (idx_.portsAt(e2).empty()) continue;
        if (std::find(chosen_.begin(), chosen_.end(), e2) != chosen_.end()) continue;
        chosen_.push_back(e2);
      }
      // Sparse classes: fill up by scanning from a hashed start.
      uint32_t start = static_cast<uint32_t>(base % n);
      for (uint32_t i = 0; i < n && chosen_.size() < take; ++i) {
        uint32_t e2 = edges_[c.begin + (start + i) % n];
        if (idx_.portsAt(e2).empty()) continue;
        if (std::find(chosen_.begin(), chosen_.end(), e2) != chosen_.end()) continue;
        chosen_.push_back(e2);
      }
      for (uint32_t e2 : chosen_) topPorts(p, idx_.portsAt(e2), 1, out);
      return;
    }
    // More peers than edge switches: every one, several ports each.
    uint32_t each = take / c.valid_edges;
    uint32_t extra = take % c.valid_edges;
    uint32_t start = static_cast<uint32_t>(base % n);
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t e2 = edges_[c.begin + (start + i) % n];
      if (idx_.portsAt(e2).empty()) continue;
      uint32_t k = each + (extra > 0 ? 1 : 0);
      if (extra > 0) --extra;
      topPorts(p, idx_.portsAt(e2), k, out);
    }
  }

  const FabricIndex& idx_;
  const topology::Topology& topo_;
  const Budget& budget_;
  uint64_t seed_;
  int peers_;
  int remote_flows_;
  std::vector<uint32_t> bucket_count_;
  std::vector<uint32_t> edges_;
  std::vector<PeerClass> classes_;
  std::vector<uint32_t> chosen_;
  std::vector<std::pair<std::pair<bool, uint64_t>, PortId>> scored_;
};

}  // namespace

size_t Plan::flowCount() const {
  size_t n = 0;
  for (const PortPlan& p : ports) n += p.flows.size();
  return n;
}

std::vector<std::string> validate(const Budget& b) {
  std::vector<std::string> problems;
  if (!std::isfinite(b.probes_per_second) || b.probes_per_second <= 0) {
    problems.push_back("probes_per_second must be a positive number, got " +
                       fmt(b.probes_per_second));
  } else if (b.probes_per_second > kMaxProbesPerSecond) {
    problems.push_back("probes_per_second " + fmt(b.probes_per_second) +
                       " is more than the sane maximum of " + fmt(kMaxProbesPerSecond) +
                       " per host port");
  }
  if (b.flows_per_peer <= 0) {
    problems.push_back("flows_per_peer must be >= 1, got " + std::to_string(b.flows_per_peer));
  } else if (b.flows_per_peer > kMaxFlowsPerPeer) {
    problems.push_back("flows_per_peer " + std::to_string(b.flows_per_peer) +
                       " is more than the maximum of " + std::to_string(kMaxFlowsPerPeer));
  }
  if (b.peers < 0) {
    problems.push_back("peers must be >= 0 (0 derives it from the fabric), got " +
                       std::to_string(b.peers));
  } else if (b.peers > kMaxPeers) {
    problems.push_back("peers " + std::to_string(b.peers) + " is more than the maximum of " +
                       std::to_string(kMaxPeers));
  }
  if (!std::isfinite(b.window_s) || b.window_s <= 0 || b.window_s > 3600) {
    problems.push_back("window_s must be in (0, 3600] seconds, got " + fmt(b.window_s));
  }
  if (!problems.empty()) return problems;
  // The flows the budget implies must each get a minimum rate; with derived
  // peers the planner lowers the peer count instead, down to one peer.
  const int peers = std::max(b.peers, 1);
  const double flows = static_cast<double>(peers) * b.flows_per_peer;
  if (b.probes_per_second < flows * kMinProbesPerSecondPerFlow) {
    problems.push_back(
        "probes_per_second " + fmt(b.probes_per_second) + " is too low for " + fmt(flows) +
        " flows per host port (" + std::to_string(peers) + " peer(s) x " +
        std::to_string(b.flows_per_peer) + " flows) at the minimum of " +
        fmt(kMinProbesPerSecondPerFlow) + " probes/s per flow: raise it to at least " +
        fmt(flows * kMinProbesPerSecondPerFlow) + " or lower peers / flows_per_peer");
  }
  const uint64_t last_port = uint64_t{b.first_source_port} +
                             static_cast<uint64_t>(b.flows_per_peer) - 1 + kMaxFlowsPerPeer;
  if (last_port > UINT16_MAX) {
    problems.push_back("first_source_port " + std::to_string(b.first_source_port) +
                       " leaves no room for the flows' UDP source ports (they run up to " +
                       std::to_string(last_port) + ")");
  }
  return problems;
}

namespace {

Derived derive(const FabricIndex& idx, const Budget& budget) {
  if (budget.peers > 0) return {budget.peers, 0};
  // Uplinks per host port of a typical edge switch: a leaf's uplinks share
  // the flows of its ports, so more uplinks per port need more flows.
  std::vector<double> ratios;
  for (uint32_t e = 0; e < idx.edgeCount(); ++e) {
    size_t ports = idx.portsAt(e).size();
    if (ports == 0) continue;
    ratios.push_back(static_cast<double>(idx.hops(idx.edgeSwitch(e)).size()) /
                     static_cast<double>(ports));
  }
  double ratio = 1;
  if (!ratios.empty()) {
    std::nth_element(ratios.begin(),
                     ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2), ratios.end());
    ratio = ratios[ratios.size() / 2];
  }
  // A leaf uplink expects ~2 x remote x flows_per_peer / ratio flows (its
  // ports' probes going up, and replies to probes that came down).
  const int needed =
      static_cast<int>(std::ceil(1.25 * kDesignFlows * ratio / (2.0 * budget.flows_per_peer)));
  int remote = std::clamp(needed, kBaseRemotePeers, kMaxDerivedRemotePeers);
  int peers = remote + 1;  // + the same-leaf peer
  // Keep every flow at or above the minimum rate.
  int max_peers = static_cast<int>(
      std::floor(budget.probes_per_second / (kMinProbesPerSecondPerFlow * budget.flows_per_peer)));
  peers = std::clamp(peers, 1, std::max(1, std::min(max_peers, kMaxPeers)));
  // What the shape asks for, not the floor of kBaseRemotePeers: a small
  // fabric gets these flows even when it has fewer remote ports than peers.
  const int remote_flows = std::min(needed, peers - 1) * budget.flows_per_peer;
  return {peers, remote_flows};
}

}  // namespace

int derivePeers(const FabricIndex& idx, const Budget& budget) { return derive(idx, budget).peers; }

Plan makePlan(const FabricIndex& idx, const Budget& budget, uint64_t seed) {
  Plan plan;
  plan.budget = budget;
  plan.version = 1;
  plan.seed = seed;
  const Derived derived = derive(idx, budget);
  plan.peers = derived.peers;
  plan.ports.reserve(idx.hostPorts().size());
  Planner planner(idx, budget, seed, plan.peers, derived.remote_flows);
  for (uint32_t e = 0; e < idx.edgeCount(); ++e) planner.planEdge(e, plan.ports);
  std::sort(plan.ports.begin(), plan.ports.end(),
            [](const PortPlan& a, const PortPlan& b) { return a.src < b.src; });
  return plan;
}

Plan makePlan(const topology::Topology& topo, const Budget& budget, const Constraints& constraints,
              uint64_t seed) {
  FabricIndex idx(topo, constraints);
  return makePlan(idx, budget, seed);
}

Plan replan(const topology::Topology& topo, const Plan& previous, const Constraints& constraints) {
  Plan plan = makePlan(topo, previous.budget, constraints, previous.seed);
  plan.version = previous.version + 1;
  return plan;
}

size_t commonFlows(const Plan& a, const Plan& b) {
  auto key = [](const Flow& f) { return (uint64_t{f.dst} << 16) | f.source_port; };
  size_t common = 0;
  size_t j = 0;
  std::vector<uint64_t> ka, kb;
  for (const PortPlan& pa : a.ports) {
    while (j < b.ports.size() && b.ports[j].src < pa.src) ++j;
    if (j == b.ports.size()) break;
    if (b.ports[j].src != pa.src) continue;
    ka.clear();
    kb.clear();
    for (const Flow& f : pa.flows) ka.push_back(key(f));
    for (const Flow& f : b.ports[j].flows) kb.push_back(key(f));
    std::sort(ka.begin(), ka.end());
    std::sort(kb.begin(), kb.end());
    size_t x = 0, y = 0;
    while (x < ka.size() && y < kb.size()) {
      if (ka[x] == kb[y]) {
        ++common;
        ++x;
        ++y;
      } else if (ka[x] < kb[y]) {
        ++x;
      } else {
        ++y;
      }
    }
  }
  return common;
}

}  // namespace netdiag::planner
