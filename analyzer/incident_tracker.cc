#include "analyzer/incident_tracker.h"

#include <algorithm>
#include <cstdlib>

namespace netdiag::analyzer {
namespace {

double pagedFloor(const Incident& i) { return recoveryFloor(i.loss_ratio, i.loss_interval); }

}  // namespace

IncidentTracker::Tracked& IncidentTracker::track(const Key& key, double now) {
  auto it = tracked_.find(key);
  if (it != tracked_.end() && it->second.open) return it->second;
  Tracked t;
  t.last_bad = now;
  // The replay makes again a decision the database has: the incident on
  // this key that was still open at `now` (the earliest such) continues.
  auto [lo, hi] = replayed_closed_.equal_range(key);
  auto again = std::find_if(lo, hi, [now](const auto& kv) { return *kv.second.resolved_at > now; });
  if (again != hi) {
    t.incident = again->second;
    t.incident.resolved_at.reset();
    t.paged_loss = pagedFloor(t.incident);  // until the replay localizes it
    t.replaying = true;
    replayed_closed_.erase(again);
  } else {
    t.incident.id = "inc-" + std::to_string(next_id_++);
    t.incident.opened_at = now;
    if (key.kind == Key::kLink) t.incident.link = key.id;
    if (key.kind == Key::kNode) t.incident.node = key.id;
  }
  if (it != tracked_.end()) {
    // A closed incident on the same key stays in the history under its id.
    history_.push_back(it->second.incident);
    it->second = t;
    return it->second;
  }
  return tracked_.emplace(key, t).first->second;
}

void IncidentTracker::notify(const Incident& i) {
  for (auto& f : listeners_) f(i);
}

// Not the point estimate, which the act of paging biases upwards; the lower
// end of its 90 % interval, or half the estimate where there is none.
double recoveryFloor(double loss_ratio, const std::optional<std::pair<double, double>>& interval) {
  return interval ? interval->first : 0.5 * loss_ratio;
}

bool IncidentTracker::observe(const Key& key, const Finding& f, double now) {
  const bool fresh = !tracked_.contains(key) || !tracked_.at(key).open;
  // What the horizon remembers of a fault that resolved is not a new one,
  // nor a finding on the key this pass: other evidence (the link's counters
  // saying it is down) may still report it.
  if (fresh && f.recovering) return false;
  seen_.insert(key);
  Tracked& t = track(key, now);
  Incident& inc = t.incident;
  if (!f.recovering) t.last_bad = inc.last_loss_at = now;
  bool changed =
      fresh || inc.kind != f.kind || inc.ports != f.ports || inc.candidates != f.candidates;
  inc.kind = f.kind;
  inc.ports = f.ports;
  inc.both_directions = inc.both_directions || f.both_directions;
  // Once localized, an incident keeps the confidence it paged at.
  inc.confidence = std::max(inc.localized_at ? inc.confidence : 0.0, f.confidence);
  if (f.loss_ratio && !f.recovering) {  // (the horizon dilutes a gone fault's rate)
    inc.loss_ratio = *f.loss_ratio;
    inc.loss_interval = f.loss_interval;
    // The interval it paged at is the one that ran high enough to page:
    // those of the passes just after, on more evidence, may sit lower, and
    // a fault still on at its true rate must not reject the floor. (Not
    // for longer: a fault that ended dilutes the newest stretch, and a
    // falling floor would hold off its recovery.)
    if (t.pagedBy(now) && now - *inc.localized_at <= settle_s_) {
      t.paged_loss = std::min(t.paged_loss, pagedFloor(inc));
    }
  }
  inc.evidence = f.evidence;
  inc.candidates = f.candidates;
  using S = Finding::Strength;
  // It pages at paging strength in a pass that follows another in which it
  // stood alone too (no candidates), strong or not: the rivals of step 6
  // were weighed on two passes' evidence, so a rival whose records come in
  // a pass late, or one near the margin, holds it. Paging strength in both
  // passes, as before, added a pass to every page and no check (the CI
  // sweep: 129 of 287 faults a pass sooner, the same pages).
  t.clear_passes = f.candidates.empty() ? t.clear_passes + 1 : 0;
  const bool localize =
      f.mayPage() && !f.ended && (f.strength == S::kCertain || t.clear_passes >= 2);
  if (!inc.localized_at && localize) {
    inc.localized_at = now;
    t.paged_loss = pagedFloor(inc);
    changed = true;
  } else if (t.replaying && now >= *inc.localized_at) {
    t.paged_loss = pagedFloor(inc);  // what the first run paged at, on the same evidence
    t.replaying = false;
  }
  if (changed) notify(inc);
  return inc.localized_at.has_value();
}

std::optional<IncidentTracker::Paged> IncidentTracker::pagedLoss(const Key& key, double now) const {
  auto it = tracked_.find(key);
  if (it == tracked_.end() || !it->second.pagedBy(now)) return std::nullopt;
  const Tracked& t = it->second;
  if (!t.open && !(t.incident.resolved_at && now - *t.incident.resolved_at < horizon_s_)) {
    return std::nullopt;
  }
  // Not since it opened: an incident a start-up burst opened and a fault
  // a minute later paged would count the clean minute between as recovery.
  return Paged{t.paged_loss, *t.incident.localized_at};
}

std::optional<double> IncidentTracker::pendingSince(const Key& key, double now) const {
  auto it = tracked_.find(key);
  if (it == tracked_.end() || !it->second.open || !it->second.openBy(now) ||
      it->second.pagedBy(now)) {
    return std::nullopt;
  }
  return it->second.incident.opened_at;
}

void IncidentTracker::endPass(double now) {
  for (auto& [key, t] : tracked_) {
    if (t.restored) {
      t.restored = false;
      if (!seen_.contains(key)) t.last_bad = now;
    }
    if (!t.open) continue;
    if (!seen_.contains(key)) {
      t.clear_passes = 0;
      if (!t.incident.localized_at) {
        t.incident.confidence = std::min(t.incident.confidence, faded_confidence_);
      }
    }
    if (t.incident.link != topology::kNone &&
        held_.count(topology::Topology::linkOf(t.incident.link))) {
      t.last_bad = now;  // drained: no evidence either way
    }
    if (now - t.last_bad >= resolve_after_s_) {
      t.open = false;
      t.incident.resolved_at = now;
      notify(t.incident);
    }
  }
}

void IncidentTracker::holdLinks(std::set<topology::LinkId> links) {
  held_ = std::move(links);
  for (auto& [key, t] : tracked_) {
    if (!t.open || !t.incident.mitigated_at || t.incident.link == topology::kNone ||
        held_.count(topology::Topology::linkOf(t.incident.link))) {
      continue;
    }
    t.incident.mitigated_at.reset();
    notify(t.incident);
  }
}

void IncidentTracker::mitigate(const std::string& id, double at) {
  for (auto& [key, t] : tracked_) {
    if (!t.open || t.incident.id != id || t.incident.mitigated_at) continue;
    t.incident.mitigated_at = at;
    notify(t.incident);
  }
}

void IncidentTracker::restore(const topology::Topology& topo,
                              const std::vector<Incident>& incidents, Evidence evidence) {
  const bool replayed = evidence == Evidence::kReplayed;
  for (const Incident& i : incidents) {
    if (i.id.rfind("inc-", 0) == 0) {
      next_id_ = std::max<uint64_t>(next_id_, std::strtoull(i.id.c_str() + 4, nullptr, 10) + 1);
    }
    Key key{Key::kLink, i.link};
    if (i.node != topology::kNone) key = {Key::kNode, i.node};
    if (!i.ports.empty()) key = {Key::kPorts, topo.port(i.ports.front()).node};
    if (replayed && i.resolved_at && key.id != topology::kNone) {
      replayed_closed_.emplace(key, i);
      continue;
    }
    if (i.resolved_at || key.id == topology::kNone || tracked_.contains(key)) {
      history_.push_back(i);
      continue;
    }
    Tracked t;
    t.incident = i;
    t.last_bad = i.localized_at.value_or(i.opened_at);
    t.restored = !replayed;
    t.replaying = replayed;
    t.paged_loss = pagedFloor(i);
    tracked_.emplace(key, t);
  }
}

std::vector<Incident> IncidentTracker::all() const {
  std::vector<Incident> out = history_;
  for (const auto& [key, i] : replayed_closed_) out.push_back(i);
  for (const auto& [key, t] : tracked_) out.push_back(t.incident);
  std::sort(out.begin(), out.end(), [](const Incident& a, const Incident& b) {
    return a.opened_at != b.opened_at ? a.opened_at < b.opened_at : a.id < b.id;
  });
  return out;
}

}  // namespace netdiag::analyzer
