#pragma once

// The probe plan: for each host port, which peers it probes and with which
// flows (UDP source ports), within a budget of probes per second per host
// port. Agents run it; the simulator replays it; the analyzer serves it.
//
// Hosts do not know the switches' ECMP hash, so a plan cannot steer a flow
// onto a link; it can only choose enough flows towards enough peers that
// every directed link is crossed with high probability (coverage.h states
// the probability), and add flows once path discovery shows thin links
// (adaptPlan). docs/planner.md states the guarantee and the statistics.
//
// Thread-safety: every function here is pure (no shared state).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "topology/model.h"

namespace netdiag::planner {

using topology::DirLinkId;
using topology::LinkId;
using topology::NodeId;
using topology::PortId;

// Limits validate() enforces.
inline constexpr double kMinProbesPerSecondPerFlow = 0.2;  // one probe per 5 s record
inline constexpr double kMaxProbesPerSecond = 10000;       // per host port
inline constexpr int kMaxFlowsPerPeer = 64;
inline constexpr int kMaxPeers = 4096;

struct Budget {
  // Per host port, all its flows together (each probe is one round trip).
  // The default is what docs/planner.md's loss-detection figures assume.
  double probes_per_second = 100;
  int flows_per_peer = 4;  // distinct UDP source ports per peer
  int peers = 0;           // peers per host port; 0 = derive from the fabric
  double window_s = 5;     // probe records summarize this window
  uint16_t first_source_port = 40000;
};

struct Flow {
  PortId dst = topology::kNone;
  uint16_t source_port = 0;  // the flow id of telemetry records
};

struct PortPlan {
  PortId src = topology::kNone;
  std::vector<Flow> flows;  // grouped by peer, in the order peers were chosen
  double probes_per_second_per_flow = 0;
};

struct Plan {
  Budget budget;
  uint64_t version = 0;  // 1 for a first plan, bumped by every replan / adapt
  uint64_t seed = 0;
  int peers = 0;                // peers per host port actually used (budget.peers or derived)
  std::vector<PortPlan> ports;  // one per planned host port, in port-id order

  size_t flowCount() const;
};

// What the plan must avoid: drained links carry no traffic (they leave the
// ECMP graph) and absent hosts neither probe nor answer.
struct Constraints {
  std::vector<LinkId> drained_links;
  std::vector<NodeId> absent_hosts;
};

// Returns the problems with a budget (empty when it is usable).
std::vector<std::string> validate(const Budget& budget);

// Plans every host port of `topo`. Peer choice is a deterministic function
// of (seed, port names, constraints), so replanning after a change keeps
// most flows. Precondition: validate(budget) is empty.
Plan makePlan(const topology::Topology& topo, const Budget& budget, const Constraints& constraints,
              uint64_t seed);

// The same plan for new constraints (drained links, hosts gone or back),
// with version = previous.version + 1 and the previous budget and seed.
Plan replan(const topology::Topology& topo, const Plan& previous, const Constraints& constraints);

// Flows (src, dst, source port) present in both plans.
size_t commonFlows(const Plan& a, const Plan& b);

// ---- adapting to observed paths -------------------------------------------

struct AdaptOptions {
  // A directed link is thin when fewer distinct flows were observed on it.
  int min_flows = 8;
  // Flows added per thin link beyond what the expected share says is needed.
  double safety = 1.5;
  // At most this many flows are added to any one host port. Every port keeps
  // its probe rate (the budget); added flows lower its per-flow rate, which
  // never goes below kMinProbesPerSecondPerFlow.
  int max_added_flows_per_port = 16;
  // Add flows only between ports the plan already pairs (a new UDP source
  // port towards a peer the source has). A responder answers only the
  // sources its own plan lists, so an agent starts a flow towards a peer it
  // did not probe before only a grace period (2 x plan_refresh) after the
  // plan, when that peer has the plan that admits it; between ports already
  // paired the flows start at once.
  bool existing_peers_only = false;
};

struct AdaptResult {
  Plan plan;                         // version + 1
  std::vector<DirLinkId> thin;       // links reported below min_flows (up, plannable)
  std::vector<DirLinkId> unfixable;  // thin links no plannable source can reach
  size_t flows_added = 0;
};

// `observed_flows[d]` is the number of distinct flows path discovery saw
// cross directed link d (indexed by DirLinkId; a shorter span counts as 0
// for the rest). Adds flows from sources whose ECMP candidates include each
// thin link, towards destinations beyond it, until the expected number of
// crossing flows reaches min_flows x safety (within the per-port cap).
AdaptResult adaptPlan(const topology::Topology& topo, const Plan& plan,
                      const Constraints& constraints, std::span<const uint32_t> observed_flows,
                      const AdaptOptions& options = {});

// ---- breaking ties between suspects ----------------------------------------

// When the analyzer cannot yet tell some directed links apart (an ambiguity
// group), or holds a suspect below its paging bar, more distinct flows
// across each of them give it flows that cross one member and not another
// (and, where path discovery works, paths that say which) and more probes
// on the suspect. Adds flows to `plan` as adaptPlan does for a link on which
// no flow was seen, within each port's budget (added flows share the port's
// probe rate) and options.max_added_flows_per_port, between ports the plan
// already pairs (existing_peers_only is implied). `result.thin` lists the
// suspects that are up and plannable. The plan's version is plan.version + 1.
AdaptResult focusPlan(const topology::Topology& topo, const Plan& plan,
                      const Constraints& constraints, std::span<const DirLinkId> suspects,
                      const AdaptOptions& options = {});

}  // namespace netdiag::planner
