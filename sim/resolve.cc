#include "sim/resolve.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "sim/rng.h"

namespace netdiag::sim {
namespace {

using namespace topology;

bool roleMatches(const Node& n, const std::string& want) {
  if (want == "any") return true;
  if (want == "switch") return !n.isHost();
  return n.role_name == want || (n.role_name.empty() && roleName(n.role) == want);
}

double overlap(double a, double b, double lo, double hi) {
  return std::max(0.0, std::min(b, hi) - std::max(a, lo));
}

}  // namespace

double ResolvedFault::activeFraction(double a, double b) const {
  return b > a ? overlap(a, b, onset, end) / (b - a) : 0;
}

double ResolvedFault::flapDownFraction(double a, double b) const {
  // Down during [onset + k*period, onset + k*period + down_s) while active.
  if (b <= a) return 0;
  double lo = std::max(a, onset), hi = std::min(b, end);
  if (hi <= lo) return 0;
  double down = 0;
  double k0 = std::floor((lo - onset) / period_s);
  for (double k = k0; onset + k * period_s < hi; k += 1) {
    double s = onset + k * period_s;
    down += overlap(lo, hi, s, s + down_s);
  }
  return down / (b - a);
}

bool ResolvedFault::linkDownAt(double t) const {
  if (!activeAt(t)) return false;
  if (kind == "link_down") return true;
  if (kind != "link_flap") return false;
  double into = std::fmod(t - onset, period_s);
  return into < down_s;
}

std::vector<ResolvedFault> resolveFaults(const Topology& topo, const Scenario& scenario,
                                         uint64_t seed, std::vector<Diagnostic>& errors) {
  std::vector<ResolvedFault> out;
  std::unordered_set<LinkId> used_links;
  std::unordered_set<NodeId> used_hosts;
  Rng rng(hashKeys(seed, 0xfa17));
  auto error = [&](const FaultSpec& f, std::string message) {
    errors.push_back({scenario.file, f.line, "fault '" + f.kind + "': " + std::move(message)});
  };

  for (const FaultSpec& f : scenario.faults) {
    ResolvedFault base;
    base.kind = f.kind;
    base.onset = scenario.start + f.onset;
    base.end = std::isinf(f.end) ? kForever : scenario.start + f.end;
    base.loss = f.loss;
    base.share = f.share;
    base.latency_us = f.latency_us;
    base.period_s = f.period_s;
    base.down_s = f.down_s;
    base.tx_drops_per_s = f.tx_drops_per_s;
    base.delay = f.delay;

    if (isFaultKind(f.kind) || f.kind == "congestion") {
      std::vector<DirLinkId> picks;
      if (f.link.isExact()) {
        auto d = topo.findDirLink(f.link.exact);
        if (!d) {
          error(f, "link '" + f.link.exact + "' is not a directed link of the topology");
          continue;
        }
        picks.push_back(*d);
      } else {
        std::vector<DirLinkId> candidates;
        for (DirLinkId d = 0; d < topo.dirLinkCount(); ++d) {
          if (used_links.contains(Topology::linkOf(d))) continue;
          if (roleMatches(topo.node(topo.dirSrcNode(d)), f.link.from) &&
              roleMatches(topo.node(topo.dirDstNode(d)), f.link.to)) {
            candidates.push_back(d);
          }
        }
        for (int i = 0; i < f.count && !candidates.empty(); ++i) {
          size_t k = rng.below(candidates.size());
          DirLinkId d = candidates[k];
          picks.push_back(d);
          used_links.insert(Topology::linkOf(d));
          // Drop both directions of the chosen link from the candidates.
          std::erase_if(candidates,
                        [&](DirLinkId c) { return Topology::linkOf(c) == Topology::linkOf(d); });
        }
        if (static_cast<int>(picks.size()) < f.count) {
          error(f, "selector {from: " + f.link.from + ", to: " + f.link.to + "} matches " +
                       std::to_string(picks.size()) + " unused links, " + std::to_string(f.count) +
                       " needed");
          continue;
        }
      }
      for (DirLinkId d : picks) {
        ResolvedFault r = base;
        r.link = d;
        r.salt = hashKeys(seed, 0xb1ac, d, out.size());
        out.push_back(r);
      }
    } else if (f.kind == "dead_responder" || f.kind == "host_reboot" || f.kind == "busy_host") {
      std::vector<NodeId> picks;
      if (!f.host.exact.empty()) {
        auto n = topo.findNode(f.host.exact);
        if (!n || !topo.node(*n).isHost()) {
          error(f, "host '" + f.host.exact + "' is not a host of the topology");
          continue;
        }
        picks.push_back(*n);
      } else {
        std::vector<NodeId> hosts;
        for (NodeId n = 0; n < topo.nodeCount(); ++n) {
          if (topo.node(n).isHost() && !used_hosts.contains(n) && !topo.portsOf(n).empty()) {
            hosts.push_back(n);
          }
        }
        for (int i = 0; i < f.count && !hosts.empty(); ++i) {
          size_t k = rng.below(hosts.size());
          picks.push_back(hosts[k]);
          hosts.erase(hosts.begin() + static_cast<ptrdiff_t>(k));
        }
        if (static_cast<int>(picks.size()) < f.count) {
          error(f, "not enough hosts to pick " + std::to_string(f.count));
          continue;
        }
      }
      for (NodeId n : picks) {
        used_hosts.insert(n);
        ResolvedFault r = base;
        r.host = n;
        out.push_back(r);
      }
    } else if (f.kind == "miscabling") {
      ResolvedFault r = base;
      if (!f.ports.empty()) {
        auto a = topo.findPort(f.ports[0]);
        auto b = topo.findPort(f.ports[1]);
        if (!a || !b) {
          error(f, "port '" + (!a ? f.ports[0] : f.ports[1]) + "' is not a linked port");
          continue;
        }
        if (topo.port(*a).node != topo.port(*b).node || *a == *b) {
          error(f, "ports " + f.ports[0] + " and " + f.ports[1] +
                       " must be two different ports of one node");
          continue;
        }
        r.swap_a = *a;
        r.swap_b = *b;
      } else {
        std::vector<NodeId> nodes;
        for (NodeId n = 0; n < topo.nodeCount(); ++n) {
          if (roleMatches(topo.node(n), f.on_role) && topo.portsOf(n).size() >= 2) {
            nodes.push_back(n);
          }
        }
        if (nodes.empty()) {
          error(f, "no node with role '" + f.on_role + "' has two linked ports");
          continue;
        }
        NodeId n = nodes[rng.below(nodes.size())];
        auto ports = topo.portsOf(n);
        size_t i = rng.below(ports.size());
        size_t j = (i + 1 + rng.below(ports.size() - 1)) % ports.size();
        r.swap_a = ports[i];
        r.swap_b = ports[j];
      }
      out.push_back(r);
    }
  }
  return out;
}

Truth makeTruth(const Topology& topo, const Scenario& scenario,
                const std::vector<ResolvedFault>& faults, uint64_t seed, uint64_t ecmp_seed) {
  Truth t;
  t.seed = seed;
  t.ecmp_seed = ecmp_seed;
  t.fabric = topo.name;
  t.start = scenario.start;
  t.end = scenario.start + scenario.duration_s;
  int n = 0;
  for (const ResolvedFault& f : faults) {
    TruthItem item;
    item.id = (isFaultKind(f.kind) ? "f" : "t") + std::to_string(++n);
    item.kind = f.kind;
    item.onset = f.onset;
    if (!std::isinf(f.end)) item.end = f.end;
    item.loss = f.kind == "link_blackhole" ? f.share : f.loss;
    item.latency_us = f.latency_us;
    if (f.link != kNone) item.link = topo.dirLinkName(f.link);
    if (f.kind == "dead_responder" || f.kind == "host_reboot") {
      item.kind = "host_unreachable";
      item.cause = f.kind == "host_reboot" ? "reboot" : "dead_responder";
      item.node = topo.node(f.host).name;
    }
    if (f.kind == "busy_host") {
      item.node = topo.node(f.host).name;
      item.note = "drop " + std::to_string(f.loss) + ", delay " + std::to_string(f.delay);
    }
    if (f.kind == "miscabling") {
      for (PortId p : {f.swap_a, f.swap_b}) {
        item.ports.push_back(topo.portRef(p));
        if (topo.port(p).link != kNone) {
          item.ports.push_back(topo.portRef(topo.dirDstPort(topo.egressOf(p))));
        }
      }
    }
    if (isFaultKind(f.kind)) {
      t.faults.push_back(std::move(item));
    } else {
      t.traps.push_back(std::move(item));
    }
  }
  return t;
}

}  // namespace netdiag::sim
