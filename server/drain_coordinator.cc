#include "server/drain_coordinator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace netdiag::server {
namespace {

using topology::LinkId;
using topology::Topology;

constexpr size_t kHistory = 64;

// No action, and *error (when asked for) says why.
std::optional<uint64_t> refuse(std::string* error, const std::string& why) {
  if (error) *error = why;
  return std::nullopt;
}

bool holdsLinkOut(const std::string& state) { return state != "restored"; }

// "inc-17" -> 17 (0 when it is not of that form): the action's incident.
uint64_t incidentNumber(const std::string& id) {
  if (id.rfind("inc-", 0) != 0) return 0;
  uint64_t n = 0;
  for (size_t i = 4; i < id.size(); ++i) {
    if (id[i] < '0' || id[i] > '9' || n > (~uint64_t{0} - 9) / 10) return 0;
    n = n * 10 + static_cast<uint64_t>(id[i] - '0');
  }
  return n;
}

}  // namespace

DrainCoordinator::DrainCoordinator(const Topology& topo, drain::PolicySet policies,
                                   DrainOutbox* outbox, std::function<void(const std::string&)> log,
                                   std::function<double()> clock)
    : topo_(topo),
      policies_(std::move(policies)),
      outbox_(outbox),
      log_(std::move(log)),
      clock_(clock ? std::move(clock) : [] {
        return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
            .count();
      }) {}

void DrainCoordinator::recordLocked(const std::string& link, const std::string& event,
                                    const Drain* d, const std::string& actor,
                                    const std::string& detail) {
  store::DrainEvent e;
  e.at = clock_();
  e.link = link;
  e.event = event;
  e.actor = actor;
  e.detail = detail;
  if (d) {
    e.port = d->port;
    e.incident = d->incident;
    e.nonce = std::to_string(event.rfind("restor", 0) == 0 ? d->restore_nonce : d->nonce);
  }
  if (db_) {
    if (auto st = store::appendDrainEvent(*db_, e); !st && log_) {
      log_("drain audit: cannot write the " + event + " of " + link + ": " + st.message());
    }
  }
  events_.push_front(std::move(e));
  while (events_.size() > kHistory) events_.pop_back();
}

bool DrainCoordinator::attachStore(const std::string& db_path, std::string* error) {
  auto db = store::Database::open(db_path);
  if (!db) {
    if (error) *error = db.message();
    return false;
  }
  auto events = store::loadDrainEvents(*db);
  if (!events) {
    if (error) *error = db_path + ": drain audit: " + events.message();
    return false;
  }
  std::lock_guard lk(mu_);
  db_ = std::make_unique<store::Database>(std::move(*db));
  restoreFrom(*events);
  return true;
}

void DrainCoordinator::changeBegins(Drain& d, double at) {
  d.changes.push_back({at, INFINITY});
  if (d.changes.size() > kChanges) d.changes.erase(d.changes.begin());
}

void DrainCoordinator::changeEnds(Drain& d, double at) {
  if (!d.changes.empty() && std::isinf(d.changes.back().to)) {
    d.changes.back().to = std::max(at, d.changes.back().from);
  }
}

// Folds the audit, oldest first, into the drains held now. Its times are
// the wall clock's, which a live analyzer's telemetry time follows.
void DrainCoordinator::restoreFrom(const std::vector<store::DrainEvent>& events) {
  for (const store::DrainEvent& e : events) {
    if (e.link == "-") {  // analyzer-wide: a freeze outlives a restart
      if (e.event == "frozen" || e.event == "unfrozen") policies_.all.frozen = e.event == "frozen";
      continue;
    }
    const auto dir = topo_.findDirLink(e.link);
    if (!dir) continue;  // a link of another topology
    const LinkId link = Topology::linkOf(*dir);
    auto it = drains_.find(link);
    if (e.event == "issued") {
      Drain d;
      d.link = link;
      d.incident = e.incident;
      d.port = e.port;
      d.by = e.actor;
      d.at = e.at;
      d.nonce = std::strtoull(e.nonce.c_str(), nullptr, 10);
      d.scope = drain::scopeOf(topo_, drain::Context(topo_).plan(link));
      changeBegins(d, e.at);
      drains_[link] = d;
      issued_at_.push_back(e.at);
      if (!e.incident.empty()) acted_.insert(e.incident);
      continue;
    }
    if (it == drains_.end()) continue;
    Drain& d = it->second;
    if (e.event == "drained" || e.event == "drain_failed" || e.event == "restored" ||
        e.event == "restore_failed") {
      changeEnds(d, e.at);
    } else if (e.event == "restoring") {
      changeBegins(d, e.at);
    }
    if (e.event == "drained") {
      d.state = "drained";
    } else if (e.event == "mitigated") {
      d.state = "mitigated";
      d.judged = true;
    } else if (e.event == "not_mitigated") {
      d.judged = true;
      d.detail = e.detail;
    } else if (e.event == "drain_failed") {
      d.state = "failed";
      d.detail = e.detail;
    } else if (e.event == "restoring") {
      d.state = "restoring";
      d.restore_nonce = std::strtoull(e.nonce.c_str(), nullptr, 10);
    } else if (e.event == "restore_requested") {
      d.restore_by = e.actor;  // the undo still waits for clean counters
    } else if (e.event == "restore_failed") {
      d.state = "drained";
      d.detail = e.detail;
    } else if (e.event == "restored") {
      history_.push_front(d);
      history_.back().state = "restored";
      drains_.erase(it);
    }
  }
  while (history_.size() > kHistory) history_.pop_back();
  // The outbox that would bring their results died with the last run.
  const double last = events.empty() ? 0 : events.back().at;
  for (auto& [link, d] : drains_) {
    if (d.state == "draining" || d.state == "restoring") {
      changeEnds(d, last);
      d.detail = std::string("the analyzer restarted before the switch answered its ") +
                 (d.state == "draining" ? "drain" : "restore") +
                 ": check the link on the switch, then undo";
      d.state = "unknown";
    }
  }
  for (auto it = events.rbegin(); it != events.rend() && events_.size() < kHistory; ++it) {
    events_.push_back(*it);
  }
  updateGaugesLocked();
}

drain::Context DrainCoordinator::contextLocked(const analyzer::Report& report) const {
  drain::Context c = drain::Context::fromIncidents(topo_, report.incidents);
  for (const auto& [link, d] : drains_) {
    if (holdsLinkOut(d.state)) c.takeOut(link, drain::OutReason::kDrained);
  }
  return c;
}

drain::Situation DrainCoordinator::situationLocked(const analyzer::Report& report, double pass_s,
                                                   const std::string& scope) const {
  drain::Situation s;
  s.now = report.generated_at;
  s.pass_s = pass_s;
  for (const auto& [link, d] : drains_) {
    s.drained_in_scope += holdsLinkOut(d.state) && d.scope == scope ? 1 : 0;
  }
  for (double at : issued_at_) s.drains_last_hour += at > s.now - 3600 ? 1 : 0;
  for (const auto& i : report.incidents) s.open_incidents += i.resolved_at ? 0 : 1;
  return s;
}

drain::Decision DrainCoordinator::decideLocked(const analyzer::Incident& incident,
                                               const analyzer::Report& report, double pass_s,
                                               topology::DrainPlan* plan_out,
                                               const drain::Context* context) const {
  std::optional<drain::Context> own;
  if (!context) context = &own.emplace(contextLocked(report));
  const topology::DrainPlan plan = context->plan(Topology::linkOf(incident.link));
  const std::string scope = drain::scopeOf(topo_, plan);
  if (plan_out) *plan_out = plan;
  return drain::decide(policies_.of(scope), topo_, incident, plan,
                       situationLocked(report, pass_s, scope));
}

std::optional<uint64_t> DrainCoordinator::issueLocked(const analyzer::Incident& incident,
                                                      const topology::DrainPlan& plan,
                                                      const drain::Decision& decision, double now,
                                                      const std::string& by, std::string* error) {
  const std::string& scope = decision.scope;
  if (!outbox_) {
    if (error) *error = "drain actions are off: start the analyzer with --drain-key";
    return std::nullopt;
  }
  const LinkId link = Topology::linkOf(incident.link);
  // The end nearer the hosts, unless it is a host: its switch's end.
  const topology::NodeId at =
      plan.lower != topology::kNone && !topo_.node(plan.lower).isHost() ? plan.lower : plan.upper;
  const topology::Link& l = topo_.link(link);
  const topology::PortId port = topo_.port(l.a).node == at ? l.a : l.b;
  DrainRequest r;
  r.port = topo_.portRef(port);
  r.op = v1::DrainAction::DRAIN;
  r.incident = incidentNumber(incident.id);
  r.reason = std::string(analyzer::kindName(incident.kind)) + " " + incident.id + " on " +
             topo_.dirLinkName(incident.link);
  r.by = by;
  auto nonce = outbox_->issue(r, error);
  if (!nonce) return std::nullopt;
  Drain d;
  d.link = link;
  d.incident = incident.id;
  d.port = r.port;
  d.scope = scope;
  d.by = by;
  d.nonce = *nonce;
  d.at = now;
  changeBegins(d, now);
  drains_[link] = d;
  issued_at_.push_back(now);
  while (issued_at_.size() > 1024 || (!issued_at_.empty() && issued_at_.front() < now - 3600)) {
    issued_at_.pop_front();
  }
  recordLocked(
      topo_.dirLinkName(2 * link), "issued", &d, by,
      nlohmann::json{{"decision", drain::decisionJson(decision)}, {"plan", plan.summary}}.dump());
  updateGaugesLocked();
  return nonce;
}

void DrainCoordinator::followLocked(double now) {
  if (!outbox_) return;
  // An action's end: the agent's answer, its expiry, or lost (empty).
  auto answered = [](const std::string& s) {
    return s == "done" || s == "failed" || s == "refused" || s == "expired" || s.empty();
  };
  for (auto it = drains_.begin(); it != drains_.end();) {
    Drain& d = it->second;
    const std::string before = d.state;
    std::string detail;
    if (d.state == "draining") {
      const std::string s = outbox_->stateOf(d.nonce, &detail);
      if (answered(s)) changeEnds(d, now);
      if (s == "done") {
        d.state = "drained";
        d.done_at = now;
      } else if (answered(s)) {
        d.state = "failed";
        d.detail = "drain " + (s.empty() ? std::string("lost") : s) +
                   (detail.empty() ? "" : ": " + detail);
      }
    } else if (d.state == "restoring") {
      const std::string s = outbox_->stateOf(d.restore_nonce, &detail);
      if (answered(s)) changeEnds(d, now);
      if (s == "done") {
        d.state = "restored";
      } else if (answered(s)) {
        d.state = "drained";
        d.detail = "restore " + (s.empty() ? std::string("lost") : s) +
                   (detail.empty() ? "" : ": " + detail);
      }
    }
    if (d.state != before) {
      const std::string event = before == "draining"
                                    ? (d.state == "drained" ? "drained" : "drain_failed")
                                    : (d.state == "restored" ? "restored" : "restore_failed");
      recordLocked(topo_.dirLinkName(2 * d.link), event, &d, "switch " + d.port, d.detail);
      if (log_) {
        log_("drain of " + topo_.dirLinkName(2 * d.link) + " (" + d.incident + "): " + d.state +
             (d.detail.empty() ? "" : " (" + d.detail + ")"));
      }
    }
    if (d.state == "restored") {
      history_.push_front(std::move(d));
      while (history_.size() > kHistory) history_.pop_back();
      it = drains_.erase(it);
    } else {
      ++it;
    }
  }
  updateGaugesLocked();
}

void DrainCoordinator::onPass(const analyzer::Report& report, double pass_s,
                              const Counters& counters) {
  std::lock_guard lk(mu_);
  pass_s_ = pass_s;
  pass_at_ = report.generated_at;
  followLocked(report.generated_at);
  restoreWhenCleanLocked(counters);
  verifyLocked(report, pass_s);
  if (!policies_.acts()) return publishLocked();
  std::set<std::string> open;
  for (const analyzer::Incident& i : report.incidents) {
    if (i.resolved_at || i.link == topology::kNone) continue;
    open.insert(i.id);
    if (acted_.count(i.id) || drains_.count(Topology::linkOf(i.link))) continue;
    topology::DrainPlan plan;
    const drain::Decision d = decideLocked(i, report, pass_s, &plan);
    // The audit keeps each change of an incident's verdict, with the
    // checks that decided it.
    std::string& last = verdicts_[i.id];
    if (last != drain::verdictName(d.verdict)) {
      last = drain::verdictName(d.verdict);
      Drain about;
      about.incident = i.id;
      recordLocked(topo_.dirLinkName(2 * Topology::linkOf(i.link)), "decision", &about,
                   std::string("policy ") + drain::modeName(d.mode), drain::decisionJson(d).dump());
    }
    if (d.verdict != drain::Verdict::kAct) continue;
    std::string error;
    if (issueLocked(i, plan, d, report.generated_at, "policy auto", &error)) {
      acted_.insert(i.id);
    } else if (log_) {
      log_("drain of " + topo_.dirLinkName(i.link) + " (" + i.id + ") not issued: " + error);
    }
  }
  for (auto it = verdicts_.begin(); it != verdicts_.end();) {
    it = open.count(it->first) ? std::next(it) : verdicts_.erase(it);
  }
  publishLocked();
}

void DrainCoordinator::verifyLocked(const analyzer::Report& report, double pass_s) {
  const double now = report.generated_at;
  // From done_at + settle_s_ on, the engine's short horizon holds only
  // probes sent after the drain: a fault it still finds then is loss the
  // drain did not take away. A couple of passes there decide.
  const double judge_after = std::max(kVerifyPasses * pass_s, settle_s_ + 2 * pass_s);
  const drain::Context none(topo_);  // scopes only: one router for the pass
  for (auto& [link, d] : drains_) {
    if (d.state != "drained" || d.done_at <= 0 || d.judged || now - d.done_at < judge_after) {
      continue;
    }
    const double clean_from = d.done_at + settle_s_;
    // A localized fault still found after the drain on the link the drain
    // was for, or anywhere in its scope: the drain did not take the fault
    // out (a wrong link), or there is another one beside it. Suspects that
    // never paged do not count: the horizon's evidence from before the
    // drain, weighed again on the graph without the drained link, keeps
    // them alive for a while, and a rollback on a suspect would put a
    // faulty link back into service.
    std::string persists;
    for (const analyzer::Incident& i : report.incidents) {
      if (i.resolved_at || i.link == topology::kNone || Topology::linkOf(i.link) == link ||
          !i.localized_at || i.last_loss_at < clean_from || !analyzer::isLinkKind(i.kind) ||
          i.kind == analyzer::IncidentKind::kLinkDown) {
        continue;
      }
      if (i.id != d.incident &&
          drain::scopeOf(topo_, none.plan(Topology::linkOf(i.link))) != d.scope) {
        continue;
      }
      persists += (persists.empty() ? "" : ", ") + i.id + " " + topo_.dirLinkName(i.link);
    }
    const std::string name = topo_.dirLinkName(2 * link);
    d.judged = true;
    if (persists.empty()) {
      d.state = "mitigated";
      d.mitigated_at = now;
      recordLocked(name, "mitigated", &d, "policy", "");
      if (log_) log_("drain of " + name + " (" + d.incident + "): mitigated, the loss is gone");
      continue;
    }
    d.detail = "loss persists after the drain: " + persists;
    recordLocked(name, "not_mitigated", &d, "policy", d.detail);
    if (log_) log_("drain of " + name + " (" + d.incident + "): " + d.detail);
    if (policies_.of(d.scope).mode != drain::Mode::kAuto || !outbox_) continue;
    std::string error;
    if (!restoreLocked(d, "policy auto (rollback)", "rollback: the loss persists after the drain",
                       &error) &&
        log_) {
      log_("rollback of the drain of " + name + " not issued: " + error);
    }
  }
}

void DrainCoordinator::publishLocked() {
  if (!publish_) return;
  analyzer::DrainState state;
  for (const auto& [link, d] : drains_) {
    // What the engine may take as out: drains the switch confirmed. A failed
    // or unknown one may still carry traffic (drain plans count it out all
    // the same, to be safe the other way).
    if (d.state == "drained" || d.state == "mitigated" || d.state == "restoring") {
      state.out.insert(link);
    }
    if (d.state == "mitigated" && !d.incident.empty()) {
      state.mitigated[d.incident] = d.mitigated_at;
    }
  }
  for (const Drain& d : history_) {
    auto& c = state.changes[d.link];
    c.insert(c.end(), d.changes.begin(), d.changes.end());
  }
  for (const auto& [link, d] : drains_) {
    auto& c = state.changes[link];
    c.insert(c.end(), d.changes.begin(), d.changes.end());
  }
  publish_(std::move(state));
}

nlohmann::json DrainCoordinator::drainJson(const Drain& d) const {
  nlohmann::json j{{"link", topo_.dirLinkName(2 * d.link)},
                   {"port", d.port},
                   {"incident", d.incident},
                   {"state", d.state},
                   {"by", d.by},
                   {"at", d.at},
                   {"scope", d.scope},
                   {"nonce", std::to_string(d.nonce)}};
  if (!d.detail.empty()) j["detail"] = d.detail;
  if (!d.restore_by.empty()) j["restore_requested_by"] = d.restore_by;
  return j;
}

nlohmann::json DrainCoordinator::view(const analyzer::Incident& incident,
                                      const analyzer::Report& report, double pass_s) const {
  std::lock_guard lk(mu_);
  const drain::Context context = contextLocked(report);
  topology::DrainPlan plan;
  const drain::Decision d = decideLocked(incident, report, pass_s, &plan, &context);
  nlohmann::json out = context.planJson(plan);
  out["decision"] = drain::decisionJson(d);
  if (auto it = drains_.find(Topology::linkOf(incident.link)); it != drains_.end()) {
    out["netdiag_drain"] = drainJson(it->second);
  }
  return out;
}

std::optional<uint64_t> DrainCoordinator::approve(const std::string& incident_id,
                                                  const analyzer::Report& report,
                                                  const std::string& by, std::string* error) {
  std::lock_guard lk(mu_);
  bool approves = policies_.all.mode == drain::Mode::kApprove;
  for (const auto& [scope, p] : policies_.scopes)
    approves = approves || p.mode == drain::Mode::kApprove;
  if (!approves) {
    return refuse(error, std::string("the drain policy is ") + drain::modeName(policies_.all.mode) +
                             " in every scope: approvals are for the approve policy");
  }
  const analyzer::Incident* found = nullptr;
  for (const auto& i : report.incidents) {
    if (i.id == incident_id) found = &i;
  }
  if (!found || found->resolved_at) return refuse(error, "no open incident " + incident_id);
  if (found->link == topology::kNone) return refuse(error, incident_id + " is not on one link");
  if (auto it = drains_.find(Topology::linkOf(found->link)); it != drains_.end()) {
    return refuse(error, topo_.dirLinkName(found->link) + " is " + it->second.state + " already (" +
                             it->second.incident + ")");
  }
  topology::DrainPlan plan;
  const drain::Decision d = decideLocked(*found, report, pass_s_, &plan);
  if (d.mode != drain::Mode::kApprove) {
    return refuse(error, std::string("the drain policy in ") + d.scope + " is " +
                             drain::modeName(d.mode) + ": approvals are for the approve policy");
  }
  if (d.verdict != drain::Verdict::kAwaitApproval) {
    std::string failing;
    for (const auto& c : d.checks) {
      if (!c.ok) failing += (failing.empty() ? "" : "; ") + c.name + ": " + c.detail;
    }
    return refuse(error, std::string("not approved, the policy says ") +
                             drain::verdictName(d.verdict) + ": " + failing);
  }
  return issueLocked(*found, plan, d, report.generated_at, by, error);
}

std::optional<uint64_t> DrainCoordinator::drainLink(const std::string& link,
                                                    const std::string& incident_id,
                                                    const analyzer::Report& report,
                                                    const std::string& by, std::string* error) {
  const auto dir = topo_.findDirLink(link);
  if (!dir) return refuse(error, "no directed link \"" + link + "\" (write it as X:p->Y:q)");
  std::lock_guard lk(mu_);
  const analyzer::Incident* found = nullptr;
  for (const auto& i : report.incidents) {
    if (i.id == incident_id) found = &i;
  }
  if (!found || found->resolved_at) return refuse(error, "no open incident " + incident_id);
  if (auto it = drains_.find(Topology::linkOf(*dir)); it != drains_.end()) {
    return refuse(error,
                  link + " is " + it->second.state + " already (" + it->second.incident + ")");
  }
  analyzer::Incident named = *found;
  named.link = *dir;
  topology::DrainPlan plan;
  const drain::Decision d = decideLocked(named, report, pass_s_, &plan);
  if (d.mode == drain::Mode::kAdvise) {
    return refuse(error,
                  "the drain policy in " + d.scope + " is advise: netdiag does not act there");
  }
  // A person named the link: whether the evidence points at it, and when,
  // is theirs to judge; what the drain does to the fabric is not.
  static const std::set<std::string> kSafety = {"not_single_homed", "ecmp_width", "no_host_cut_off",
                                                "blast_radius_scope"};
  std::string failing;
  for (const auto& c : d.checks) {
    if (!c.ok && kSafety.count(c.name))
      failing += (failing.empty() ? "" : "; ") + c.name + ": " + c.detail;
  }
  if (!failing.empty()) return refuse(error, "not drained, unsafe: " + failing);
  auto nonce = issueLocked(named, plan, d, report.generated_at, by + " (named the link)", error);
  if (nonce) acted_.insert(incident_id);  // the policy drains nothing else for it
  return nonce;
}

std::optional<uint64_t> DrainCoordinator::restoreLocked(Drain& d, const std::string& by,
                                                        const std::string& reason,
                                                        std::string* error) {
  if (!outbox_) {
    if (error) *error = "drain actions are off: start the analyzer with --drain-key";
    return std::nullopt;
  }
  DrainRequest r;
  r.port = d.port;
  r.op = v1::DrainAction::RESTORE;
  r.incident = incidentNumber(d.incident);
  r.reason = reason;
  r.by = by;
  auto nonce = outbox_->issue(r, error);
  if (!nonce) return std::nullopt;
  d.restore_nonce = *nonce;
  d.state = "restoring";
  changeBegins(d, pass_at_);  // issued since that pass
  d.restore_by.clear();
  recordLocked(topo_.dirLinkName(2 * d.link), "restoring", &d, by, d.detail);
  return nonce;
}

void DrainCoordinator::restoreWhenCleanLocked(const Counters& counters) {
  for (auto& [link, d] : drains_) {
    if (d.restore_by.empty() || (d.state != "drained" && d.state != "mitigated")) continue;
    const auto it = counters.find(link);
    std::string waits;
    if (it == counters.end() || !it->second.reported) {
      waits = "no port counters from either end yet";
    } else if (it->second.rx_errors > 0 || it->second.carrier_changes > 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%.0f error(s), %.0f carrier change(s) in the last %.0f s",
                    it->second.rx_errors, it->second.carrier_changes, it->second.window_s);
      waits = buf;
    }
    if (!waits.empty()) {
      d.detail = "restore waits for clean counters: " + waits;
      continue;
    }
    char reason[160];
    std::snprintf(reason, sizeof reason, "undo: counters clean for %.0f s", it->second.window_s);
    d.detail.clear();
    std::string error;
    const std::string by = d.restore_by;
    if (!restoreLocked(d, by, reason, &error) && log_) {
      log_("restore of " + topo_.dirLinkName(2 * link) + " not issued: " + error);
    }
  }
}

std::optional<uint64_t> DrainCoordinator::undo(const std::string& link, const std::string& by,
                                               std::string* error, bool now) {
  const auto d = topo_.findDirLink(link);
  if (!d) return refuse(error, "no directed link \"" + link + "\" (write it as X:p->Y:q)");
  std::lock_guard lk(mu_);
  auto it = drains_.find(Topology::linkOf(*d));
  if (it == drains_.end()) return refuse(error, link + " is not drained by netdiag");
  if (it->second.state == "restoring") return refuse(error, link + " is being restored already");
  if (!outbox_) return refuse(error, "drain actions are off: start the analyzer with --drain-key");
  Drain& drain = it->second;
  // A link out of service is restored once its counters say it is clean;
  // one whose drain failed or is unknown may carry traffic already.
  const bool out = drain.state == "drained" || drain.state == "mitigated";
  if (!now && out && policies_.all.restore_clean_s > 0) {
    drain.restore_by = by;
    drain.detail = "restore waits for clean counters";
    recordLocked(topo_.dirLinkName(2 * it->first), "restore_requested", &drain, by,
                 "once the counters are clean for " +
                     std::to_string(static_cast<int>(policies_.all.restore_clean_s)) + " s");
    return 0;
  }
  drain.detail.clear();
  return restoreLocked(drain, by, "undo of the drain for " + drain.incident, error);
}

void DrainCoordinator::setFrozen(bool frozen, const std::string& by) {
  std::lock_guard lk(mu_);
  policies_.all.frozen = frozen;
  recordLocked("-", frozen ? "frozen" : "unfrozen", nullptr, by, "");
  if (log_) log_(std::string("drain policy ") + (frozen ? "frozen" : "unfrozen") + " by " + by);
  updateGaugesLocked();
}

nlohmann::json DrainCoordinator::state() const {
  std::lock_guard lk(mu_);
  nlohmann::json drained = nlohmann::json::array(), history = nlohmann::json::array();
  for (const auto& [link, d] : drains_) drained.push_back(drainJson(d));
  for (const Drain& d : history_) history.push_back(drainJson(d));
  nlohmann::json events = nlohmann::json::array();
  for (const store::DrainEvent& e : events_) {
    nlohmann::json j{{"at", e.at}, {"link", e.link}, {"event", e.event}};
    for (const auto& [k, v] : {std::pair<const char*, const std::string*>{"port", &e.port},
                               {"incident", &e.incident},
                               {"actor", &e.actor},
                               {"nonce", &e.nonce}}) {
      if (!v->empty()) j[k] = *v;
    }
    if (!e.detail.empty()) {
      auto detail = nlohmann::json::parse(e.detail, nullptr, false);
      j["detail"] = detail.is_discarded() ? nlohmann::json(e.detail) : detail;
    }
    events.push_back(std::move(j));
  }
  auto policyJson = [](const drain::Policy& p) {
    return nlohmann::json{{"mode", drain::modeName(p.mode)},
                          {"min_confidence", p.min_confidence},
                          {"hold_passes", p.hold_passes},
                          {"min_width_share", p.min_width_share},
                          {"max_drained_per_scope", p.max_drained_per_scope},
                          {"max_drains_per_hour", p.max_drains_per_hour},
                          {"max_open_incidents", p.max_open_incidents},
                          {"restore_clean_s", p.restore_clean_s}};
  };
  nlohmann::json policy = policyJson(policies_.all);
  policy["frozen"] = policies_.all.frozen;
  policy["scopes"] = nlohmann::json::object();
  for (const auto& [scope, p] : policies_.scopes) policy["scopes"][scope] = policyJson(p);
  return {{"policy", policy}, {"drained", drained}, {"restored", history}, {"events", events}};
}

void DrainCoordinator::updateGaugesLocked() {
  if (g_drained_) {
    size_t n = 0;
    for (const auto& [link, d] : drains_) n += d.state == "drained" || d.state == "mitigated";
    g_drained_->Set(static_cast<double>(n));
  }
  if (g_frozen_) g_frozen_->Set(policies_.all.frozen ? 1 : 0);
}

void DrainCoordinator::exportMetrics(prometheus::Registry& registry) {
  std::lock_guard lk(mu_);
  g_drained_ = &prometheus::BuildGauge()
                    .Name("netdiag_drain_links_drained")
                    .Help("Links netdiag holds drained now (its drain action done, not restored)")
                    .Register(registry)
                    .Add({});
  g_frozen_ = &prometheus::BuildGauge()
                   .Name("netdiag_drain_frozen")
                   .Help("1 while the drain policy is frozen (no drain is issued)")
                   .Register(registry)
                   .Add({});
  updateGaugesLocked();
}

}  // namespace netdiag::server
