#pragma once

// Incidents: what the analyzer concluded, with when and why. Serialized as
// the incident report of formats.md §3 (`netdiag replay --json`,
// `netdiag locate --json`).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topology/model.h"

namespace netdiag::analyzer {

using topology::DirLinkId;
using topology::NodeId;
using topology::PortId;

// The contract's kinds, plus link_blackhole (a partial blackhole: only some
// flows through the link are dropped), which formats.md allows adding.
inline constexpr const char* kLinkLoss = "link_loss";
inline constexpr const char* kLinkCorruption = "link_corruption";
inline constexpr const char* kLinkDown = "link_down";
inline constexpr const char* kLinkFlap = "link_flap";
inline constexpr const char* kLinkLatency = "link_latency";
inline constexpr const char* kLinkBlackhole = "link_blackhole";
inline constexpr const char* kCongestion = "congestion";
inline constexpr const char* kHostUnreachable = "host_unreachable";
inline constexpr const char* kMiscabling = "miscabling";

struct Incident {
  std::string id;                    // "inc-<n>", unique within one analyzer's history
  std::string kind;                  // one of the constants above
  DirLinkId link = topology::kNone;  // link kinds and congestion
  bool both_directions = false;
  NodeId node = topology::kNone;  // host_unreachable
  std::vector<PortId> ports;      // miscabling
  double opened_at = 0;
  std::optional<double> localized_at;
  std::optional<double> resolved_at;
  double confidence = 0;  // posterior probability that this explanation is right
  double loss_ratio = 0;  // estimated loss on the link (or of probes to the node)
  nlohmann::json evidence = nlohmann::json::object();  // human-readable reasoning

  bool isLinkFault() const { return kind.rfind("link_", 0) == 0; }
};

struct Report {
  double generated_at = 0;
  std::vector<Incident> incidents;
};

// formats.md §3.
nlohmann::json incidentToJson(const topology::Topology& topo, const Incident& incident);
nlohmann::json reportToJson(const topology::Topology& topo, const Report& report);

}  // namespace netdiag::analyzer
