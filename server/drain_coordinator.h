#pragma once

// The drain policy at work (issue #14): after every pass it decides, for
// each open incident on a link, what the policy allows (drain/policy.h),
// and under `auto` drains what every check allows; under `approve` it
// drains what a person approves; under `advise` (the default) it only
// shows its decisions. It keeps the links netdiag drained, counts them out
// of service in every drain plan it makes (drain/context.h), follows their
// actions' results through the outbox, and restores a link on `undo`.
//
// A drain acts on the link's end nearer the hosts unless that end is a
// host (then its switch's end): a BGP session shut at either end takes
// both directions out.
//
// Every decision that changes and every action's step is an event of the
// drain audit (store/drain_store.h), in SQLite when a database is attached:
// a restarted analyzer rebuilds the links it holds drained from it. A drain
// or restore whose result the restart lost is shown `unknown` (and still
// counted out of service) until someone undoes it or checks the switch.
//
// After a drain is done the coordinator verifies it: once the engine's
// short horizon holds only probes sent after the drain, if the engine finds
// a localized fault neither on the incident's link nor anywhere else in the
// drained link's scope (Incident::last_loss_at), the loss went back to
// background
// and the drain is `mitigated` (and so is its incident: mitigated_at).
// Otherwise the drain did not remove the loss (a wrong link, a second
// fault): it says
// so in the audit and the log, the incident keeps paging, and under `auto`
// the drain is rolled back (restored). The engine is told which links are
// out (they leave its ECMP graph; their incidents do not resolve while out)
// and which incidents are mitigated, after every pass (onPublish).
//
// Thread-safety: every public method may be called from any thread.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "analyzer/drain_state.h"
#include "analyzer/engine.h"
#include "analyzer/incident.h"
#include "drain/context.h"
#include "drain/policy.h"
#include "server/drain_outbox.h"
#include "store/drain_store.h"
#include "store/sqlite.h"
#include "topology/model.h"

namespace netdiag::server {

class DrainCoordinator {
 public:
  // `outbox` may be null only under advise (nothing is ever issued).
  // `clock`: the wall clock of the audit's times (Unix seconds; default:
  // the system's).
  DrainCoordinator(const topology::Topology& topo, drain::PolicySet policies, DrainOutbox* outbox,
                   std::function<void(const std::string&)> log,
                   std::function<double()> clock = nullptr);

  // The port counters of the links held drained (the snapshot's).
  using Counters = std::map<topology::LinkId, analyzer::LinkCounters>;
  // After a pass: follows the actions under way, restores what waited for
  // clean counters, then decides for every open link incident of `report`
  // (acting under auto).
  void onPass(const analyzer::Report& report, double pass_s, const Counters& counters = {});

  // The "drain" object of an open link incident's API view: the plan in
  // the shared context (links down or drained), the policy's decision and
  // netdiag's own drain of the link, if any.
  nlohmann::json view(const analyzer::Incident& incident, const analyzer::Report& report,
                      double pass_s) const;

  // Under approve: drains the incident's link if every check holds now.
  // The action's nonce, or nullopt and *error (which checks fail, or why
  // nothing can be approved).
  // (The pass interval is the last onPass's.)
  std::optional<uint64_t> approve(const std::string& incident_id, const analyzer::Report& report,
                                  const std::string& by, std::string* error);
  // Drains `link` (either direction's name) for the open incident
  // `incident_id`, where the policy acts (approve or auto): a person names
  // the link. The fabric's checks must hold (single-homed, ECMP width, no
  // host cut off, drains in the scope); the evidence's and the timing's
  // are the person's to judge. The drain is verified as any other: under
  // auto, one that leaves the incident's loss in place is rolled back.
  std::optional<uint64_t> drainLink(const std::string& link, const std::string& incident_id,
                                    const analyzer::Report& report, const std::string& by,
                                    std::string* error);
  // Restores a link netdiag drained (`link`: either direction's name):
  // once its port counters have been reported and clean for the policy's
  // restore_clean_s (returns 0 meanwhile: the restore waits), or at once
  // with `now` (a person who checked the link). The restore's nonce, or
  // nullopt and *error.
  std::optional<uint64_t> undo(const std::string& link, const std::string& by, std::string* error,
                               bool now = false);
  // Called at the end of every onPass with the links held out of service
  // (drained, mitigated, being restored), the mitigated incidents (id ->
  // telemetry time) and the routing changes of the drains and restores
  // still in memory: the engine's view (LiveAnalyzer::setDrained).
  using Publish = std::function<void(analyzer::DrainState)>;
  void onPublish(Publish publish) { publish_ = std::move(publish); }

  // Passes after a drain is done before it is judged (mitigated or not),
  // at least: the engine's evidence from before the drain must have left
  // its short horizon first (setEvidenceSettle).
  static constexpr int kVerifyPasses = 6;
  // How long the engine still weighs evidence sent before a drain (its
  // short horizon, seconds; default 30).
  void setEvidenceSettle(double seconds) {
    std::lock_guard lk(mu_);
    settle_s_ = seconds;
  }

  // A maintenance freeze: no drain while set (restores still run).
  void setFrozen(bool frozen, const std::string& by);

  // Keeps the audit in the (migrated) database at `db_path` from now on,
  // and takes the drains it records as this analyzer's. False and *error
  // when it cannot be read.
  bool attachStore(const std::string& db_path, std::string* error);

  // The policy, the links netdiag holds drained, the last drains and the
  // latest audit events (newest first).
  nlohmann::json state() const;

  // netdiag_drain_links_drained, netdiag_drain_frozen.
  void exportMetrics(prometheus::Registry& registry);

 private:
  struct Drain {
    topology::LinkId link = topology::kNone;
    std::string incident, port, scope, by;
    uint64_t nonce = 0, restore_nonce = 0;
    double at = 0;       // telemetry time it was issued
    double done_at = 0;  // telemetry time the switch's "done" was seen
    double mitigated_at = 0;
    // draining (issued), drained (done), mitigated (done, and the loss went
    // back to background), failed (failed, refused or expired: the link may
    // or may not be drained), unknown (a restart lost the result),
    // restoring, restored.
    std::string state = "draining";
    std::string detail;
    std::string restore_by;  // set: an undo waits for clean counters
    bool judged = false;     // verified once (mitigated or not)
    // Its drain and restores on the switch (DrainState::Change), oldest
    // first, at most kChanges.
    std::vector<analyzer::DrainState::Change> changes;
  };
  static constexpr size_t kChanges = 8;
  // A routing change begins (an action issued) or ends (its answer seen).
  static void changeBegins(Drain& d, double at);
  static void changeEnds(Drain& d, double at);

  drain::Context contextLocked(const analyzer::Report& report) const;
  drain::Situation situationLocked(const analyzer::Report& report, double pass_s,
                                   const std::string& scope) const;
  // `context`: the drain context of `report` when the caller has it.
  drain::Decision decideLocked(const analyzer::Incident& incident, const analyzer::Report& report,
                               double pass_s, topology::DrainPlan* plan_out,
                               const drain::Context* context = nullptr) const;
  std::optional<uint64_t> issueLocked(const analyzer::Incident& incident,
                                      const topology::DrainPlan& plan,
                                      const drain::Decision& decision, double now,
                                      const std::string& by, std::string* error);
  void followLocked(double now);
  void restoreWhenCleanLocked(const Counters& counters);
  std::optional<uint64_t> restoreLocked(Drain& d, const std::string& by, const std::string& reason,
                                        std::string* error);
  void verifyLocked(const analyzer::Report& report, double pass_s);
  void publishLocked();
  // Appends to the audit (memory, and the database when attached).
  void recordLocked(const std::string& link, const std::string& event, const Drain* d,
                    const std::string& actor, const std::string& detail);
  void restoreFrom(const std::vector<store::DrainEvent>& events);
  void updateGaugesLocked();
  nlohmann::json drainJson(const Drain& d) const;

  const topology::Topology& topo_;
  drain::PolicySet policies_;
  DrainOutbox* outbox_;
  std::function<void(const std::string&)> log_;
  std::function<double()> clock_;
  mutable std::mutex mu_;
  std::map<topology::LinkId, Drain> drains_;     // the links netdiag holds drained
  std::deque<Drain> history_;                    // restored or replaced, newest first
  std::deque<double> issued_at_;                 // drains issued, for the hourly bound
  std::set<std::string> acted_;                  // incidents auto acted on (never twice)
  std::map<std::string, std::string> verdicts_;  // last decision recorded per open incident
  std::deque<store::DrainEvent> events_;         // the latest audit events, newest first
  std::unique_ptr<store::Database> db_;          // the audit's, when attached
  double pass_s_ = 5;                            // the engine's pass interval
  double pass_at_ = 0;                           // telemetry time of the last pass
  double settle_s_ = 30;                         // the engine's short horizon
  Publish publish_;
  prometheus::Gauge* g_drained_ = nullptr;
  prometheus::Gauge* g_frozen_ = nullptr;
};

}  // namespace netdiag::server
