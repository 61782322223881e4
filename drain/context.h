#pragma once

// The links a drain plan counts as out of service already, and why. One
// context for every place that gives drain advice: the exporter's
// netdiag_link_drain_* series, the HTTP API's incident view (and so
// `netdiag explain`), and `netdiag drain-plan`. Before it each counted a
// different set (links reported down; only --down; none), so the same
// link could be safe to drain on a dashboard and unsafe in the CLI.
//
// A link is out when its counters report it down (an open, localized
// link_down incident), when the operator names it (drain-plan --down), or
// when netdiag drained it (server/drain_coordinator.h).

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/incident.h"
#include "topology/drain.h"
#include "topology/ecmp.h"
#include "topology/model.h"

namespace netdiag::drain {

// kDrained: drained (or being drained) by netdiag's own action.
enum class OutReason : uint8_t { kReportedDown, kGiven, kDrained };
// "reported_down", "given", "drained".
const char* outReasonName(OutReason why);

// Whether an incident takes its link out of service for drain plans.
bool takesLinkOut(analyzer::IncidentKind kind, bool localized, bool resolved);

class Context {
 public:
  explicit Context(const topology::Topology& topo);
  // The links of the open incidents that take theirs out.
  static Context fromIncidents(const topology::Topology& topo,
                               const std::vector<analyzer::Incident>& incidents);

  // Marks `link` out (a reason given before stays).
  void takeOut(topology::LinkId link, OutReason why);
  const std::map<topology::LinkId, OutReason>& out() const { return out_; }
  bool operator==(const Context& o) const { return out_ == o.out_; }

  // Draining `link` with the links out of service already.
  topology::DrainPlan plan(topology::LinkId link) const;
  // The plan as the API and `drain-plan --json` give it, with the links
  // counted out ("out": [{"link", "why"}]).
  nlohmann::json planJson(const topology::DrainPlan& plan) const;

 private:
  const topology::Topology* topo_;
  std::map<topology::LinkId, OutReason> out_;
  // Made at the first plan (contexts are compared far more often than
  // they plan: the exporter keeps its plans while the context is equal).
  mutable std::unique_ptr<topology::Router> router_;
};

}  // namespace netdiag::drain
