#pragma once

// Scores an incident report (formats.md §3) against a simulator's ground
// truth (sim/truth.h) by the rules of formats.md §4, the external contract.
//
// Decisions where the contract is silent (each is covered by a unit test):
//  - Positive: an incident whose localized_at is not null; the others are
//    counted (`not_localized`) and otherwise ignored.
//  - Link faults: a link_* incident of ANY link_* kind finds a fault of any
//    link_* kind when it names the fault's link in either direction and
//    localized_at >= onset. The contract says only "at or after the onset",
//    so an incident localized after the fault's end still finds it (the
//    detector was late, not wrong); `after_end` marks such finds.
//  - Traps: the contract puts no time condition on traps, so none is applied
//    (time to localize may then be negative; it is reported raw).
//      congestion: kind congestion; when the incident names a link, it must
//        be the trap's link (either direction); without a link it matches.
//      host_unreachable: kind host_unreachable naming the trap's node; for a
//        cause "reboot" trap, a link_down incident on a link with one end on
//        that node (port refs parsed, no topology needed) also finds it.
//        Only link_down, as the contract says; a dead_responder host's
//        access link going "down" is a false positive.
//      miscabling: kind miscabling whose `ports` share one port with the
//        trap's; other trap kinds: same kind, plus link/node/ports as above.
//      busy_host: not an item (no incident kind can find it, and there is
//        nothing to page); it only names the cause of false positives on
//        that host's access links. `traps` does not count it.
//  - Several candidates for one incident: the item with the latest onset
//    <= localized_at wins (then, for traps only, the earliest later onset);
//    ties go to truth order, faults before traps. An incident never "moves"
//    to an unfound item because its preferred item was already found: that
//    would let a late incident claim an old fault.
//  - Duplicates: positives are taken in localized_at order (report order on
//    ties); the first to find an item finds it, later ones are duplicates,
//    excluded from precision's numerator and denominator. So
//    found = finding positives = distinct items found, and
//    precision = found / (found + false positives).
//  - No positives: precision = 1.0 (no false claims were made). No items:
//    recall = 1.0. F1 = 0 when precision + recall = 0. So an empty report on
//    a healthy run scores 1/1/1, and on a faulty run 1/0/0.
//  - Direction, judged on the first finding incident of a link fault: exact
//    (same directed link, both_directions false), both (both_directions true,
//    whatever direction it names), reversed. accuracy = (exact + both) /
//    found; strict accuracy = exact / found, so claiming both directions
//    cannot inflate it unseen. Split by link class only with a topology:
//    access = one end on a node of role host, fabric = switch to switch.
//  - Time to localize = first finding localized_at - onset; open delay =
//    that incident's opened_at - onset, raw (may be negative when the
//    incident opened before the onset, e.g. on an earlier symptom).
//    Summary stats (median, p90 with linear interpolation, max) cover found
//    link faults; trap rows carry their own times.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/truth.h"
#include "topology/model.h"

namespace netdiag::sim {

// One incident of a report (formats.md §3).
struct Incident {
  std::string id;
  std::string kind;
  std::string link;                // "X:p->Y:q", empty when absent
  std::string node;                // host_unreachable
  std::vector<std::string> ports;  // miscabling
  double opened_at = 0;
  std::optional<double> localized_at;
  std::optional<double> resolved_at;
  std::optional<double> confidence;
  std::optional<double> loss_ratio;
  bool both_directions = false;

  bool isPositive() const { return localized_at.has_value(); }
  bool isLinkKind() const { return kind.rfind("link_", 0) == 0; }
};

struct IncidentReport {
  double generated_at = 0;
  std::vector<Incident> incidents;
};

// Parses a report's text; on failure returns nullopt and sets `error` to a
// message naming the field, e.g. "incidents[3] (id inc-17).localized_at: ...".
std::optional<IncidentReport> reportFromJson(const std::string& text, std::string& error);

enum class Direction { kNotApplicable, kExact, kBoth, kReversed };
enum class LinkClass { kUnknown, kAccess, kFabric };
std::string_view directionName(Direction d);  // "-", "exact", "both", "reversed"
std::string_view linkClassName(LinkClass c);  // "unknown", "access", "fabric"

// One truth item and how the report did on it.
struct ItemScore {
  std::string id;
  std::string kind;
  std::string target;  // link, node, or ports joined with ","
  bool is_fault = false;
  double onset = 0;
  std::optional<double> end;
  bool found = false;
  std::string found_by;       // id of the first finding incident
  std::string found_by_kind;  // its kind
  std::optional<double> time_to_localize;
  std::optional<double> open_delay;
  bool after_end = false;  // first find localized after the item's end
  Direction direction = Direction::kNotApplicable;
  LinkClass link_class = LinkClass::kUnknown;
  size_t duplicates = 0;  // further positives on this item
};

struct FalsePositive {
  std::string incident_id;
  std::string kind;
  std::string target;
  double localized_at = 0;
  std::string reason;
};

struct DirectionStats {
  size_t found = 0;  // link faults found by a link_* incident
  size_t exact = 0;
  size_t both = 0;
  size_t reversed = 0;
  std::optional<double> accuracy() const;        // (exact + both) / found
  std::optional<double> strictAccuracy() const;  // exact / found
};

struct TimeStats {
  size_t count = 0;
  std::optional<double> median, p90, max;
};

struct ScoreResult {
  std::vector<ItemScore> items;  // faults then traps, truth order
  std::vector<FalsePositive> false_positives;

  size_t incidents = 0;
  size_t positives = 0;
  size_t not_localized = 0;
  size_t found = 0;  // finding positives = distinct items found
  size_t duplicates = 0;
  size_t faults = 0, faults_found = 0;
  size_t traps = 0, traps_found = 0;

  double precision = 1;
  double recall = 1;
  double f1 = 1;
  double fault_recall = 1;
  double trap_recall = 1;

  DirectionStats direction;
  bool classified = false;  // a topology was given: access/fabric are valid
  DirectionStats direction_access, direction_fabric;

  TimeStats time_to_localize;  // found link faults
  TimeStats open_delay;        // found link faults

  // Non-fatal: truth nodes missing from the given topology, and the like.
  std::vector<std::string> warnings;
};

// Scores `report` against `truth`. `topo` (optional) classifies links as
// access or fabric for the direction split.
ScoreResult scoreReport(const Truth& truth, const IncidentReport& report,
                        const topology::Topology* topo = nullptr);

// The result as pretty JSON (an object; fields only ever get added).
std::string scoreToJson(const ScoreResult& result);

}  // namespace netdiag::sim
