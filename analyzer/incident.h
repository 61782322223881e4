#pragma once

// Incidents: what the analyzer concluded, with when and why. Serialized as
// the incident report of formats.md §3 (`netdiag replay --json`,
// `netdiag locate --json`) only at the edge: in memory an incident's kind is
// an enum and its evidence a typed struct.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "topology/model.h"

namespace netdiag::analyzer {

using topology::DirLinkId;
using topology::NodeId;
using topology::PortId;

// The contract's kinds, plus link_blackhole (a partial blackhole: only some
// flows through the link are dropped), which formats.md allows adding.
enum class IncidentKind : uint8_t {
  kUnknown,
  kLinkLoss,
  kLinkCorruption,
  kLinkDown,
  kLinkFlap,
  kLinkLatency,
  kLinkBlackhole,
  kCongestion,
  kHostUnreachable,
  kMiscabling,
};

// "link_loss", ...; "unknown" for kUnknown.
const char* kindName(IncidentKind kind);
// The kind named `name`; kUnknown for a name netdiag does not use.
IncidentKind parseKind(std::string_view name);
// A fault of one link (the link_* kinds).
bool isLinkKind(IncidentKind kind);

// Why the analyzer concluded what it did. Every field is optional; each
// kind fills its own (formats.md leaves `evidence` free-form, docs/formats.md
// lists the keys).
struct Evidence {
  std::string method;
  std::string summary;
  // Loss hypotheses: probes crossing the link (or sent to the host) over the
  // horizon after explaining away, their losses, the lossy flow-windows
  // behind it, the background they were held to, the log-likelihood ratio.
  std::optional<double> probes, lost, lossy_flow_windows, background_loss, llr_nats;
  // Port counters over the horizon, by name ("rx_errors_at_X:p", ...).
  std::map<std::string, double> counters;
  std::optional<double> carrier_changes;
  struct RuledOut {
    std::string hypothesis;
    double llr_nats = 0;
    std::string why;
  };
  std::optional<RuledOut> ruled_out;
  // Latency.
  std::optional<double> added_latency_us, z, records;
  // Miscabling: each port whose LLDP neighbour disagrees with the topology.
  struct PortSeen {
    std::string port, lldp_neighbor, topology_peer;
  };
  std::vector<PortSeen> ports;
  std::string host;  // a note on the host when every link of it is down
  // Other figures of a method (the baselines of bench/ use only these).
  std::map<std::string, double> figures;
};

nlohmann::json evidenceToJson(const Evidence& e);
// Reads what evidenceToJson wrote (and tolerates anything else: unknown keys
// are dropped, wrong types ignored) — incidents restored from SQLite.
Evidence evidenceFromJson(const nlohmann::json& j);

// One member of an ambiguity group: a directed link or a node.
struct Suspect {
  DirLinkId link = topology::kNone;
  NodeId node = topology::kNone;
  bool operator==(const Suspect&) const = default;
};

struct Incident {
  std::string id;  // "inc-<n>", unique within one analyzer's history
  IncidentKind kind = IncidentKind::kUnknown;
  DirLinkId link = topology::kNone;  // link kinds and congestion
  bool both_directions = false;
  NodeId node = topology::kNone;  // host_unreachable
  std::vector<PortId> ports;      // miscabling
  double opened_at = 0;
  std::optional<double> localized_at;
  // When netdiag's drain of the link took it out of service and the loss
  // went back to background (server/drain_coordinator.h); unset otherwise.
  // While its link stays drained the incident does not resolve (no probe
  // crosses the link to say whether the fault is gone).
  std::optional<double> mitigated_at;
  std::optional<double> resolved_at;
  // The last pass that found the incident's fault (telemetry time; in
  // memory only, 0 when unknown). For a paged incident that is the last
  // pass whose short horizon still showed the loss (not recovering); a
  // suspect's recovery is never weighed, so its moves every pass it is
  // found. The drain verification reads it of paged incidents only
  // (server/drain_coordinator.h).
  double last_loss_at = 0;
  double confidence = 0;  // posterior probability that this explanation is right
  double loss_ratio = 0;  // estimated loss on the link (or of probes to the node)
  // A 90 % interval for loss_ratio, where the estimate is statistical.
  std::optional<std::pair<double, double>> loss_interval;
  Evidence evidence;
  // The other explanations the evidence cannot yet tell from this one
  // (`link`, or `node`, is the best of the group). While it is not empty the
  // incident does not page: localized_at stays null.
  std::vector<Suspect> candidates;

  bool isLinkFault() const { return isLinkKind(kind); }
};

struct Report {
  double generated_at = 0;
  std::vector<Incident> incidents;
};

// The `candidates` list of an incident's JSON (docs/formats.md), and back
// (names the topology lacks are dropped).
nlohmann::json candidatesToJson(const topology::Topology& topo,
                                const std::vector<Suspect>& candidates);
std::vector<Suspect> candidatesFromJson(const topology::Topology& topo, const nlohmann::json& j);

// The `loss_interval` of an incident's JSON: [lo, hi] with 0 <= lo <= hi <= 1.
std::optional<std::pair<double, double>> lossIntervalFromJson(const nlohmann::json& incident);

// formats.md §3.
nlohmann::json incidentToJson(const topology::Topology& topo, const Incident& incident);
nlohmann::json reportToJson(const topology::Topology& topo, const Report& report);

}  // namespace netdiag::analyzer
