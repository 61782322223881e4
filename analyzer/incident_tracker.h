#pragma once

// The incidents of one analyzer and their single state machine:
//
//   (none) --observed--> open --strong after a pass alone, loss not ended,
//                                 or certain--> localized
//   open/localized --not observed for resolve_after_s--> resolved
//
// A pass reports what it found (a Finding per hypothesis); the tracker opens,
// updates, localizes and resolves incidents, gives them ids and tells its
// listeners of every change. It owns the incident history.

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "analyzer/explain.h"
#include "analyzer/incident.h"

namespace netdiag::analyzer {

struct Finding {
  IncidentKind kind = IncidentKind::kUnknown;
  double confidence = 0;
  std::optional<double> loss_ratio;                        // unset: keep the incident's
  std::optional<std::pair<double, double>> loss_interval;  // with loss_ratio
  Evidence evidence;
  bool both_directions = false;
  std::vector<PortId> ports;        // miscabling
  std::vector<Suspect> candidates;  // an ambiguity group: never pages
  // The recent evidence rejects the rate the incident paged at: what the
  // horizon still sees is the past, so the resolve clock runs.
  bool recovering = false;
  // The evidence since its incident opened already rejects the rate it
  // would page at: the loss has stopped (a burst at start-up, a blip), and
  // loss that is over names no link to drain. It does not page; the
  // incident stays open and resolves as any other.
  bool ended = false;
  // How it pages: strong in a pass after another alone (statistical evidence),
  // at once (counters and LLDP say so for certain), or not this pass.
  enum class Strength : uint8_t { kWeak, kStrong, kCertain } strength = Strength::kWeak;
  // Strong enough, and alone (no ambiguity group), to page.
  bool mayPage() const { return strength != Strength::kWeak && candidates.empty(); }
};

// The low end of the rate a finding states: what the evidence after it
// must reject before the fault counts as gone (the estimate runs high when
// a finding is strong enough to page: a fault still on at its true rate
// must not reject it).
double recoveryFloor(double loss_ratio, const std::optional<std::pair<double, double>>& interval);

class IncidentTracker {
 public:
  // horizon_s: how long the evidence remembers a fault that has gone;
  // settle_s: how long after paging the recovery floor may still fall
  // (observe: the short horizon); faded_confidence: the most an open,
  // unlocalized incident may state in a pass that has no finding for it
  // (its evidence fell below the bar to open one; endPass).
  IncidentTracker(double resolve_after_s, double horizon_s, double settle_s,
                  double faded_confidence = 0)
      : resolve_after_s_(resolve_after_s),
        horizon_s_(horizon_s),
        settle_s_(settle_s),
        faded_confidence_(faded_confidence) {}

  void beginPass() { seen_.clear(); }
  // Records this pass's finding for `key`; true when its incident is localized.
  bool observe(const Key& key, const Finding& finding, double now);
  // Whether `key` has a finding this pass (a remembered, recovering fault
  // that is no incident any more does not count).
  bool seen(const Key& key) const { return seen_.contains(key); }
  // Whether `key` has an open incident (seen this pass or not).
  bool isOpen(const Key& key) const {
    auto it = tracked_.find(key);
    return it != tracked_.end() && it->second.open;
  }
  // The loss rate recovery must rule out for the incident of `key` (the low
  // end of what it paged at), while that matters: it is open and localized,
  // or it resolved within the horizon (whose evidence still holds the fault).
  struct Paged {
    double loss;   // the rate to reject
    double since;  // when the fault was surely on (the incident paged)
  };
  std::optional<Paged> pagedLoss(const Key& key, double now) const;
  // When the incident of `key` opened, while it is open and has not paged.
  std::optional<double> pendingSince(const Key& key, double now) const;
  // Resolves incidents not observed for resolve_after_s. An open incident
  // that never paged and has no finding this pass states at most
  // faded_confidence from then on: what it claimed when last seen is not
  // what the evidence says now. (A localized one keeps what it paged at.)
  void endPass(double now);

  // Links taken out of service by netdiag's drain: an open incident on one
  // does not resolve while it stays out (no probe crosses it to say the
  // fault is gone); it resolves as any other once the link is back, and
  // is no longer mitigated then (a fault still there pages again).
  void holdLinks(std::set<topology::LinkId> links);
  // Marks the open incident `id` mitigated at `at` (once; notifies).
  void mitigate(const std::string& id, double at);

  // Continues from incidents an earlier run persisted: open ones are tracked
  // again, closed ones stay in the history, and new ids continue after the
  // highest. What the evidence will be:
  //  - kLost (gRPC): it died with that run, so an open incident's resolve
  //    clock restarts at the first pass (a restart is not a repair);
  //  - kReplayed (the bus): the stream's last horizon is replayed into the
  //    engine, so the passes make these decisions again. An incident then
  //    resolves on the replayed evidence, a persisted one that was open at
  //    a replayed pass is the one that pass opens again (same id and times,
  //    not a second incident), and the rate recovery must reject is taken
  //    again where the replay localizes it.
  enum class Evidence { kLost, kReplayed };
  void restore(const topology::Topology& topo, const std::vector<Incident>& incidents,
               Evidence evidence = Evidence::kLost);
  void onChange(std::function<void(const Incident&)> callback) {
    listeners_.push_back(std::move(callback));
  }
  // Every incident, oldest first.
  std::vector<Incident> all() const;

 private:
  struct Tracked {
    Incident incident;
    int clear_passes = 0;   // consecutive passes seen without candidates
    double paged_loss = 0;  // the loss rate recovery must reject (pagedFloor)
    double last_bad = 0;
    bool open = true;
    // Restored from an earlier run: its evidence died with that process, so
    // its resolve clock starts at the first pass after the restart, not at
    // its last bad pass before it (a restart is not a repair).
    bool restored = false;
    // Restored with its evidence replayed: until the replay is past the
    // pass it opened in, or the one it paged in, it has not (what the
    // engine asks of it before a pass's findings is what the first run
    // asked then), and paged_loss is taken again in the pass it paged in.
    bool replaying = false;
    bool openBy(double now) const { return !(replaying && now <= incident.opened_at); }
    bool pagedBy(double now) const {
      return incident.localized_at && !(replaying && now <= *incident.localized_at);
    }
  };
  Tracked& track(const Key& key, double now);
  std::set<topology::LinkId> held_;
  void notify(const Incident& i);

  double resolve_after_s_, horizon_s_, settle_s_, faded_confidence_;
  uint64_t next_id_ = 1;
  std::map<Key, Tracked> tracked_;
  std::vector<Incident> history_;  // closed incidents whose key was reused
  // Closed incidents restored with their evidence replayed, by key: a pass
  // before one's resolved_at opens it again instead of a new one.
  std::multimap<Key, Incident> replayed_closed_;
  std::set<Key> seen_;  // keys observed in the current pass
  std::vector<std::function<void(const Incident&)>> listeners_;
};

}  // namespace netdiag::analyzer
