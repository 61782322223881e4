#pragma once

// Scenario files (YAML) for `netdiag simulate`: the fabric, the probe
// budget, the noise, and the faults and traps with their onsets and ends.
// Faults name links exactly or by a selector, so one scenario runs on any
// generated fabric:
//
//   name: gray-loss
//   topology: {generate: rail, sus: 4, hosts_per_su: 32}   # or {file: f.yaml}
//   duration_s: 600
//   window_s: 5
//   budget: {probes_per_second: 100, flows_per_peer: 4}
//   noise: {background_loss: 1.0e-5, path_unknown: 0.3}
//   faults:
//     - kind: link_loss
//       link: {from: leaf, to: spine}     # or "X:p->Y:q", or random
//       loss: 0.01
//       onset: 120
//       end: 480
//
// docs/simulator.md lists every kind and field.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "planner/plan.h"
#include "topology/generators.h"
#include "topology/loader.h"
#include "topology/model.h"

namespace netdiag::sim {

using topology::Diagnostic;

inline constexpr double kForever = std::numeric_limits<double>::infinity();
// Bounds of a scenario's times (start, onsets, ends) and of its duration.
inline constexpr double kMaxTime = 1e11;
inline constexpr double kMaxDuration = 1e9;

// Where the fabric comes from: a file, or a generator with its parameters.
struct FabricSpec {
  std::string file;       // resolved relative to the scenario file
  std::string generator;  // leaf-spine | fat-tree | rail
  topology::LeafSpineParams leaf_spine;
  topology::FatTreeParams fat_tree;
  topology::RailParams rail;
  bool empty() const { return file.empty() && generator.empty(); }
};

// Parses "rail", "fat-tree:k=8", "leaf-spine:spines=4,leaves=16" (the CLI's
// --fabric); returns problems, empty on success.
std::vector<std::string> parseFabricSpec(const std::string& text, FabricSpec& spec);
// Loads or generates the fabric. Errors name the file or the parameters.
std::optional<topology::Topology> buildFabric(const FabricSpec& spec,
                                              std::vector<Diagnostic>& errors);

struct Noise {
  double background_loss = 1e-5;   // per directed link, per packet
  double missing_records = 0.005;  // records an agent failed to deliver
  double late_records = 0.0;       // records delivered up to `late_max_s` late
  double late_max_s = 20;
  double path_unknown = 0.3;        // records (or flows, below) without `path`
  double path_partial = 0.05;       // records (or flows) with a prefix only
  double lossy_path_failure = 0.5;  // extra chance discovery fails on a lossy flow (record mode)
  double reply_path_known = 0.0;    // records (or flows) that carry `reply_path`
  // "record": path discovery succeeds or fails per record (each window
  // independently). "flow": per flow — a traceroute that fails for a flow
  // fails for every window of it, a flow cut to a prefix always is, and a
  // flow whose reply path is known carries it whenever a reply came back.
  std::string path_knowledge = "record";
  double one_way = 1.0;  // records that carry lost_fwd / lost_rev
  double counter_interval_s = 10;
  bool counter_reset = true;        // one random port's counters reset mid-run
  double hop_latency_us = 2;        // per switch hop, one way
  double host_latency_us = 8;       // stack and NIC, per round trip
  double rtt_jitter = 0.1;          // relative spread of p50
  double packets_per_second = 2e5;  // background traffic per port, for counters
};

// A link chosen exactly or at random among directed links whose source and
// destination nodes have the given roles ("host", "leaf", ..., "switch" for
// any non-host, "any").
struct LinkSelector {
  std::string exact;  // "X:p->Y:q"
  std::string from = "any";
  std::string to = "any";
  bool isExact() const { return !exact.empty(); }
};

struct HostSelector {
  std::string exact;  // node name; empty = random host
};

struct FaultSpec {
  std::string kind;
  uint32_t line = 0;
  LinkSelector link;
  HostSelector host;
  int count = 1;  // distinct links (or hosts) drawn by the selector
  double onset = 0;
  double end = kForever;
  double loss = 0;                 // link_loss, link_corruption, congestion
  double share = 0;                // link_blackhole: share of flows through the link dropped
  double latency_us = 0;           // link_latency
  double period_s = 30;            // link_flap
  double down_s = 5;               // link_flap
  double tx_drops_per_s = 5000;    // congestion
  double delay = 0;                // busy_host: share of replies delayed past the probe timeout
  std::vector<std::string> ports;  // miscabling: two ports of one node whose cables swap
  std::string on_role = "leaf";    // miscabling: role of the node, when ports are not given
};

struct Scenario {
  std::string file;  // for messages
  std::string name;
  FabricSpec fabric;
  uint32_t fabric_line = 0;
  double start = 0;
  double duration_s = 600;
  double window_s = 5;
  planner::Budget budget;
  uint32_t budget_line = 0;
  // Peers are re-drawn (a new plan seed) every this many seconds; 0 = never.
  double redraw_s = 0;
  // The switches' ECMP hash family: "mix" (SplitMix of the 5-tuple, one seed
  // for the fabric) or "crc" (CRC-32C of the 5-tuple fields with a per-switch
  // seed and bit rotation, xor-folded to 16 bits, as switch ASICs do).
  std::string ecmp_hash = "mix";
  Noise noise;
  std::vector<FaultSpec> faults;
};

struct ScenarioLoad {
  Scenario scenario;
  std::vector<Diagnostic> errors;
  bool ok() const { return errors.empty(); }
};

ScenarioLoad loadScenarioFile(const std::string& path);
ScenarioLoad loadScenario(std::istream& in, const std::string& source_name);

// The kinds a scenario may name.
bool isFaultKind(const std::string& kind);  // link_*
// congestion, dead_responder, host_reboot, miscabling, busy_host
bool isTrapKind(const std::string& kind);

}  // namespace netdiag::sim
