#pragma once

// Whether to drain the link of a localized incident, and why: the drain
// policy (advise, approve, auto) and the safety checks every action must
// pass first, each named in the decision record. A pure function of the
// incident, its drain plan and a few counts, so the same decision can be
// shown under `advise` ("auto would drain it"), asked for under `approve`,
// and taken under `auto`.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/incident.h"
#include "topology/drain.h"
#include "topology/model.h"

namespace netdiag::drain {

enum class Mode : uint8_t { kAdvise, kApprove, kAuto };
const char* modeName(Mode mode);  // "advise", "approve", "auto"

struct Policy {
  Mode mode = Mode::kAdvise;
  // The incident: localized at this confidence at least, for this many
  // passes (a page that held, not one pass's peak).
  double min_confidence = 0.999;
  int hold_passes = 3;
  // ECMP width the drain must leave between the link's two tiers, as a
  // share of the width before it (never less than one link).
  double min_width_share = 0.5;
  // Blast radius: links drained by netdiag at once in the link's scope
  // (its pod, else its tier pair), and drains per hour in all.
  int max_drained_per_scope = 1;
  int max_drains_per_hour = 4;
  // More open incidents than this mean a correlated event, a host problem
  // or a bug, not one bad link: no action.
  int max_open_incidents = 3;
  bool frozen = false;  // a maintenance window: no action
  // A drained link is restored (undo) only once the port counters at its
  // ends have been reported and clean (no errors, no carrier change) for
  // this long (seconds; 0: at once). Analyzer-wide.
  double restore_clean_s = 60;
};

// The analyzer's policy: one for every scope, and overrides for some pods
// or tier pairs (drain/policy_file.h). A scope's policy is a whole Policy:
// what its override does not set is the analyzer-wide value.
struct PolicySet {
  Policy all;
  std::map<std::string, Policy> scopes;  // by scope name: "pod 3", "spine-superspine"

  // The policy that decides in `scope` (frozen is analyzer-wide).
  Policy of(const std::string& scope) const;
  // Whether any scope approves or acts (then drain actions need a key).
  bool acts() const;
};

// What the policy does not know: the state around the decision.
struct Situation {
  double now = 0;               // telemetry time of the decision
  double pass_s = 5;            // the engine's pass interval
  size_t drained_in_scope = 0;  // links netdiag holds drained in the link's scope
  size_t drains_last_hour = 0;  // drains netdiag made in the last hour
  size_t open_incidents = 0;    // every open incident, this one included
};

struct Check {
  std::string name;  // e.g. "ecmp_width"
  bool ok = false;
  std::string detail;  // in words, e.g. "leaf3 keeps 7 of 8 uplinks (at least 4)"
};

enum class Verdict : uint8_t {
  kAdvise,         // mode advise: no action (`would_act` says what auto would do)
  kAct,            // auto, every check holds
  kAwaitApproval,  // approve, every check holds: a person approves it
  kWait,           // a check that time can change fails (not yet held, frozen, ...)
  kRefuse,         // a check that time alone does not change fails (unsafe, wrong kind)
};
const char* verdictName(Verdict v);  // "advise", "act", "await_approval", "wait", "refuse"

struct Decision {
  Mode mode = Mode::kAdvise;
  Verdict verdict = Verdict::kAdvise;
  bool would_act = false;  // every check holds
  std::string scope;       // "pod 3" or "leaf-spine"
  std::vector<Check> checks;
};

// The scope a link's drains count against: its lower end's pod when the
// topology gives one, else the tier pair of the plan ("leaf-spine").
std::string scopeOf(const topology::Topology& topo, const topology::DrainPlan& plan);

// Decides for an incident on a link whose drain `plan` was made in the
// shared context (drain/context.h).
Decision decide(const Policy& policy, const topology::Topology& topo,
                const analyzer::Incident& incident, const topology::DrainPlan& plan,
                const Situation& situation);

nlohmann::json decisionJson(const Decision& d);

}  // namespace netdiag::drain
