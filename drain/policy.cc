#include "drain/policy.h"

#include <cmath>
#include <cstdio>
#include <set>

namespace netdiag::drain {
namespace {

using analyzer::IncidentKind;

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// What a drain mends: a link that loses, corrupts, drops some flows, flaps
// or delays. Not a link already down (nothing to take out), not
// congestion (a drain moves its load onto the siblings and makes it
// worse), not a host or a cabling error.
bool drainable(IncidentKind k) {
  switch (k) {
    case IncidentKind::kLinkLoss:
    case IncidentKind::kLinkCorruption:
    case IncidentKind::kLinkBlackhole:
    case IncidentKind::kLinkFlap:
    case IncidentKind::kLinkLatency:
      return true;
    default:
      return false;
  }
}

// Checks whose failure time can change (wait); the others refuse.
const std::set<std::string> kTransient = {
    "localized",         "confidence",     "held",      "blast_radius_scope",
    "blast_radius_hour", "open_incidents", "not_frozen"};

}  // namespace

const char* modeName(Mode mode) {
  switch (mode) {
    case Mode::kAdvise:
      return "advise";
    case Mode::kApprove:
      return "approve";
    case Mode::kAuto:
      return "auto";
  }
  return "?";
}

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::kAdvise:
      return "advise";
    case Verdict::kAct:
      return "act";
    case Verdict::kAwaitApproval:
      return "await_approval";
    case Verdict::kWait:
      return "wait";
    case Verdict::kRefuse:
      return "refuse";
  }
  return "?";
}

Policy PolicySet::of(const std::string& scope) const {
  auto it = scopes.find(scope);
  if (it == scopes.end()) return all;
  Policy p = it->second;
  p.frozen = all.frozen;
  return p;
}

bool PolicySet::acts() const {
  if (all.mode != Mode::kAdvise) return true;
  for (const auto& [scope, p] : scopes) {
    if (p.mode != Mode::kAdvise) return true;
  }
  return false;
}

std::string scopeOf(const topology::Topology& topo, const topology::DrainPlan& plan) {
  if (plan.lower != topology::kNone) {
    if (const auto pod = topo.node(plan.lower).pod) return "pod " + std::to_string(*pod);
  }
  return plan.lower_tier + "-" + plan.upper_tier;
}

Decision decide(const Policy& policy, const topology::Topology& topo,
                const analyzer::Incident& incident, const topology::DrainPlan& plan,
                const Situation& s) {
  Decision d;
  d.mode = policy.mode;
  d.scope = scopeOf(topo, plan);
  auto check = [&](const char* name, bool ok, std::string detail) {
    d.checks.push_back({name, ok, std::move(detail)});
  };
  const std::string kind = analyzer::kindName(incident.kind);
  check("kind", drainable(incident.kind),
        drainable(incident.kind) ? kind + ": a drain takes the faulty link out of the paths"
        : incident.kind == IncidentKind::kCongestion
            ? kind + ": a drain would move the load onto the siblings"
            : kind + ": not a fault a drain mends");
  const bool localized = incident.localized_at.has_value();
  check("localized", localized,
        localized ? "localized to one link"
        : !incident.candidates.empty()
            ? "one of " + std::to_string(incident.candidates.size() + 1) +
                  " links (an ambiguity group)"
            : "not localized");
  check("confidence", localized && incident.confidence >= policy.min_confidence,
        fmt("confidence %.6g (at least %.6g)", incident.confidence, policy.min_confidence));
  const double held = localized ? s.now - *incident.localized_at : 0;
  const double need = policy.hold_passes * s.pass_s;
  check("held", localized && held >= need,
        fmt("localized for %.0f s (at least %.0f passes, %.0f s)", held,
            static_cast<double>(policy.hold_passes), need));
  const std::string& lower = topo.node(plan.lower).name;
  const bool host_end = topo.node(plan.lower).isHost();
  check("not_single_homed", !(host_end && plan.width_before <= 1),
        host_end && plan.width_before <= 1
            ? lower + " has this link only: a single-homed access link is never drained"
            : lower + " has " + std::to_string(plan.width_before) + " links to the " +
                  plan.upper_tier + " tier");
  const size_t least = std::max<size_t>(
      1, static_cast<size_t>(std::ceil(policy.min_width_share * plan.width_before - 1e-9)));
  check("ecmp_width", plan.width_after >= least,
        lower + " keeps " + std::to_string(plan.width_after) + " of " +
            std::to_string(plan.width_before) + " links to the " + plan.upper_tier +
            " tier (at least " + std::to_string(least) + ")");
  check("no_host_cut_off", plan.stranded_hosts.empty(),
        plan.stranded_hosts.empty()
            ? "no host loses all its paths"
            : std::to_string(plan.stranded_hosts.size()) + " host(s) would be cut off, " +
                  topo.node(plan.stranded_hosts.front()).name + " first");
  check("blast_radius_scope",
        s.drained_in_scope < static_cast<size_t>(std::max(0, policy.max_drained_per_scope)),
        std::to_string(s.drained_in_scope) + " link(s) drained in " + d.scope + " (at most " +
            std::to_string(policy.max_drained_per_scope) + ")");
  check("blast_radius_hour",
        s.drains_last_hour < static_cast<size_t>(std::max(0, policy.max_drains_per_hour)),
        std::to_string(s.drains_last_hour) + " drain(s) in the last hour (at most " +
            std::to_string(policy.max_drains_per_hour) + ")");
  check("open_incidents",
        s.open_incidents <= static_cast<size_t>(std::max(0, policy.max_open_incidents)),
        std::to_string(s.open_incidents) + " incident(s) open (at most " +
            std::to_string(policy.max_open_incidents) +
            "; more is a correlated event, a host problem or a bug, not one bad link)");
  check("not_frozen", !policy.frozen,
        policy.frozen ? "drains frozen (a maintenance window)" : "not frozen");

  bool refuse = false, wait = false;
  for (const Check& c : d.checks) {
    if (c.ok) continue;
    (kTransient.contains(c.name) ? wait : refuse) = true;
  }
  d.would_act = !refuse && !wait;
  if (policy.mode == Mode::kAdvise) {
    d.verdict = Verdict::kAdvise;
  } else if (refuse) {
    d.verdict = Verdict::kRefuse;
  } else if (wait) {
    d.verdict = Verdict::kWait;
  } else {
    d.verdict = policy.mode == Mode::kAuto ? Verdict::kAct : Verdict::kAwaitApproval;
  }
  return d;
}

nlohmann::json decisionJson(const Decision& d) {
  nlohmann::json checks = nlohmann::json::array();
  for (const Check& c : d.checks) {
    checks.push_back({{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
  }
  return {{"mode", modeName(d.mode)},
          {"verdict", verdictName(d.verdict)},
          {"would_act", d.would_act},
          {"scope", d.scope},
          {"checks", std::move(checks)}};
}

}  // namespace netdiag::drain
