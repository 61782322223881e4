#include "sim/score.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "sim/json_fields.h"

namespace netdiag::sim {
namespace {

using nlohmann::json;
using namespace detail;  // the shared field checks of json_fields.h

// ---- report parsing --------------------------------------------------------

Incident parseIncident(const json& j, size_t index) {
  std::string where = "incidents[" + std::to_string(index) + "]";
  if (!j.is_object()) fail(where, "expected an object, got " + typeOf(j));
  Incident inc;
  inc.id = requireString(j, "id", where);
  where += " (id " + inc.id + ")";
  inc.kind = requireString(j, "kind", where);
  inc.opened_at = requireNumber(j, "opened_at", where);
  // Required though nullable: a misspelt key must not silently turn every
  // incident into a non-positive.
  inc.localized_at = nullableNumber(j, "localized_at", where, true);
  inc.resolved_at = nullableNumber(j, "resolved_at", where, false);
  inc.confidence = nullableNumber(j, "confidence", where, false);
  inc.loss_ratio = nullableNumber(j, "loss_ratio", where, false);
  if (const json* b = find(j, "both_directions"); b && !b->is_null()) {
    if (!b->is_boolean()) {
      fail(field(where, "both_directions"), "expected true or false, got " + typeOf(*b));
    }
    inc.both_directions = b->get<bool>();
  }

  inc.link = optionalString(j, "link", where);
  if (inc.link.empty() && inc.isLinkKind()) {
    fail(field(where, "link"), "missing (a " + inc.kind + " incident names its link X:p->Y:q)");
  }
  if (!inc.link.empty()) checkDirLink(inc.link, field(where, "link"));
  inc.node = optionalString(j, "node", where);
  if (inc.node.empty() && inc.kind == "host_unreachable") {
    fail(field(where, "node"), "missing (a host_unreachable incident names its node)");
  }
  if (const json* ports = find(j, "ports"); ports && !ports->is_null()) {
    if (!ports->is_array()) fail(field(where, "ports"), "expected an array, got " + typeOf(*ports));
    for (size_t i = 0; i < ports->size(); ++i) {
      const json& p = (*ports)[i];
      std::string pw = field(where, "ports") + "[" + std::to_string(i) + "]";
      if (!p.is_string() || !topology::splitPortRef(p.get_ref<const std::string&>())) {
        fail(pw, "expected a port ref node:port, got " + p.dump());
      }
      inc.ports.push_back(p.get<std::string>());
    }
  }
  if (inc.ports.empty() && inc.kind == "miscabling") {
    fail(field(where, "ports"), "missing or empty (a miscabling incident names its ports)");
  }
  return inc;
}

// ---- matching ----------------------------------------------------------------

// "a|b" with the two port refs ordered: the same for both directions.
std::string undirectedKey(const std::string& link) {
  auto ends = splitDirLink(link);
  if (!ends) return link;
  auto& [a, b] = *ends;
  return a < b ? a + "|" + b : b + "|" + a;
}

bool touchesNode(const std::string& link, const std::string& node) {
  auto ends = splitDirLink(link);
  if (!ends) return false;
  for (const std::string& ref : {ends->first, ends->second}) {
    auto split = topology::splitPortRef(ref);
    if (split && split->first == node) return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

std::string incidentTarget(const Incident& inc) {
  if (!inc.link.empty()) return inc.link;
  if (!inc.node.empty()) return inc.node;
  return joined(inc.ports);
}

std::string itemTarget(const TruthItem& item) {
  if (!item.link.empty()) return item.link;
  if (!item.node.empty()) return item.node;
  return joined(item.ports);
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A truth item with what matching needs precomputed.
struct Target {
  const TruthItem* item;
  bool is_fault;
  std::string undirected;  // of item->link, empty when none
};

bool findsTrap(const Incident& inc, const Target& t) {
  const TruthItem& trap = *t.item;
  if (inc.kind == trap.kind) {
    if (!trap.link.empty() && !inc.link.empty() && undirectedKey(inc.link) != t.undirected) {
      return false;
    }
    if (!trap.node.empty() && inc.node != trap.node) return false;
    if (!trap.ports.empty()) {
      bool shared = std::any_of(inc.ports.begin(), inc.ports.end(), [&](const std::string& p) {
        return std::find(trap.ports.begin(), trap.ports.end(), p) != trap.ports.end();
      });
      if (!shared) return false;
    }
    return true;
  }
  // A rebooting host takes its access links down with it.
  return trap.kind == "host_unreachable" && trap.cause == "reboot" && inc.kind == "link_down" &&
         !trap.node.empty() && touchesNode(inc.link, trap.node);
}

bool finds(const Incident& inc, const Target& t) {
  if (t.is_fault) {
    return inc.isLinkKind() && undirectedKey(inc.link) == t.undirected &&
           *inc.localized_at >= t.item->onset;
  }
  return findsTrap(inc, t);
}

// Latest onset <= localized_at; else (traps only) the earliest later onset.
// Truth order breaks ties. Returns targets.size() when nothing matches.
size_t chooseTarget(const Incident& inc, const std::vector<Target>& targets) {
  const double at = *inc.localized_at;
  size_t best = targets.size();
  bool best_before = false;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!finds(inc, targets[i])) continue;
    double onset = targets[i].item->onset;
    bool before = onset <= at;
    if (best == targets.size()) {
      best = i;
      best_before = before;
      continue;
    }
    double best_onset = targets[best].item->onset;
    if (before && (!best_before || onset > best_onset)) {
      best = i;
      best_before = true;
    } else if (!before && !best_before && onset < best_onset) {
      best = i;
    }
  }
  return best;
}

// Why a positive that found nothing is false, for humans.
std::string whyFalse(const Incident& inc, const std::vector<Target>& targets) {
  const double at = *inc.localized_at;
  if (inc.isLinkKind()) {
    std::string key = undirectedKey(inc.link);
    const Target* early = nullptr;
    for (const Target& t : targets) {
      if (t.is_fault && t.undirected == key && (!early || t.item->onset < early->item->onset)) {
        early = &t;
      }
    }
    if (early) {
      return "localized at " + num(at) + ", before the onset (" + num(early->item->onset) +
             ") of fault " + early->item->id + " on this link";
    }
    for (const Target& t : targets) {
      if (!t.is_fault && !t.undirected.empty() && t.undirected == key) {
        return "on the link of trap " + t.item->id + " (" + t.item->kind + "): no link is broken";
      }
    }
    for (const Target& t : targets) {
      const TruthItem& trap = *t.item;
      if (t.is_fault || trap.kind != "host_unreachable" || !touchesNode(inc.link, trap.node)) {
        continue;
      }
      std::string cause = trap.cause.empty() ? "no cause given" : "cause " + trap.cause;
      return "on the access link of " + trap.node + ", unreachable per trap " + trap.id + " (" +
             cause + "): no link is broken" +
             (trap.cause == "reboot" ? " (only link_down counts for a reboot)" : "");
    }
    return "healthy link: no fault or trap names it";
  }
  bool kind_in_truth = std::any_of(targets.begin(), targets.end(),
                                   [&](const Target& t) { return t.item->kind == inc.kind; });
  if (!kind_in_truth) return "no fault or trap of kind " + inc.kind + " in the truth";
  if (inc.kind == "congestion") return "no congestion trap on this link";
  if (inc.kind == "host_unreachable") return "no host_unreachable trap names node " + inc.node;
  if (inc.kind == "miscabling") return "no miscabling trap involves any of these ports";
  return "matches no " + inc.kind + " trap";
}

LinkClass classify(const std::string& link, const topology::Topology& topo,
                   std::vector<std::string>& warnings, const std::string& item_id) {
  auto ends = splitDirLink(link);
  if (!ends) return LinkClass::kUnknown;
  bool access = false;
  for (const std::string& ref : {ends->first, ends->second}) {
    auto split = topology::splitPortRef(ref);
    auto node = split ? topo.findNode(split->first) : std::nullopt;
    if (!node) {
      warnings.push_back(item_id + ": node of " + ref + " is not in the topology");
      return LinkClass::kUnknown;
    }
    access = access || topo.node(*node).isHost();
  }
  return access ? LinkClass::kAccess : LinkClass::kFabric;
}

// Linear interpolation between closest ranks (numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

TimeStats timeStats(std::vector<double> v) {
  TimeStats s;
  s.count = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = quantile(v, 0.5);
  s.p90 = quantile(v, 0.9);
  s.max = v.back();
  return s;
}

double ratio(size_t num_, size_t den) {
  return den == 0 ? 1.0 : static_cast<double>(num_) / static_cast<double>(den);
}

void countDirection(DirectionStats& s, Direction d) {
  ++s.found;
  if (d == Direction::kExact) ++s.exact;
  if (d == Direction::kBoth) ++s.both;
  if (d == Direction::kReversed) ++s.reversed;
}

// ---- JSON output -------------------------------------------------------------

json optionalJson(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json directionJson(const DirectionStats& s) {
  return {{"found", s.found},
          {"exact", s.exact},
          {"both_directions", s.both},
          {"reversed", s.reversed},
          {"accuracy", optionalJson(s.accuracy())},
          {"strict_accuracy", optionalJson(s.strictAccuracy())}};
}

json timeJson(const TimeStats& s) {
  return {{"count", s.count},
          {"median", optionalJson(s.median)},
          {"p90", optionalJson(s.p90)},
          {"max", optionalJson(s.max)}};
}

}  // namespace

std::optional<IncidentReport> reportFromJson(const std::string& text, std::string& error) {
  return parseObject(text, "report", error, [](const json& root) {
    IncidentReport report;
    report.generated_at = requireNumber(root, "generated_at", "");
    const json* incidents = find(root, "incidents");
    if (!incidents) fail("incidents", "missing (expected an array, possibly empty)");
    if (!incidents->is_array()) fail("incidents", "expected an array, got " + typeOf(*incidents));
    std::set<std::string> ids;
    for (size_t i = 0; i < incidents->size(); ++i) {
      Incident inc = parseIncident((*incidents)[i], i);
      if (!ids.insert(inc.id).second) {
        fail("incidents[" + std::to_string(i) + "].id", "duplicate id '" + inc.id + "'");
      }
      report.incidents.push_back(std::move(inc));
    }
    return report;
  });
}

std::string_view directionName(Direction d) {
  switch (d) {
    case Direction::kExact:
      return "exact";
    case Direction::kBoth:
      return "both";
    case Direction::kReversed:
      return "reversed";
    case Direction::kNotApplicable:
      break;
  }
  return "-";
}

std::string_view linkClassName(LinkClass c) {
  switch (c) {
    case LinkClass::kAccess:
      return "access";
    case LinkClass::kFabric:
      return "fabric";
    case LinkClass::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<double> DirectionStats::accuracy() const {
  if (found == 0) return std::nullopt;
  return static_cast<double>(exact + both) / static_cast<double>(found);
}

std::optional<double> DirectionStats::strictAccuracy() const {
  if (found == 0) return std::nullopt;
  return static_cast<double>(exact) / static_cast<double>(found);
}

ScoreResult scoreReport(const Truth& truth, const IncidentReport& report,
                        const topology::Topology* topo) {
  ScoreResult r;
  std::vector<Target> targets;
  for (const TruthItem& f : truth.faults) targets.push_back({&f, true, undirectedKey(f.link)});
  std::vector<const TruthItem*> busy;
  for (const TruthItem& t : truth.traps) {
    if (t.kind == "busy_host") {
      busy.push_back(&t);  // nothing to find: it only explains false positives
      continue;
    }
    targets.push_back({&t, false, t.link.empty() ? std::string() : undirectedKey(t.link)});
  }
  r.classified = topo != nullptr;
  for (const Target& t : targets) {
    ItemScore row;
    row.id = t.item->id;
    row.kind = t.item->kind;
    row.target = itemTarget(*t.item);
    row.is_fault = t.is_fault;
    row.onset = t.item->onset;
    row.end = t.item->end;
    if (topo && t.is_fault) row.link_class = classify(t.item->link, *topo, r.warnings, row.id);
    r.items.push_back(std::move(row));
  }
  r.faults = truth.faults.size();
  r.traps = truth.traps.size() - busy.size();
  r.incidents = report.incidents.size();

  // Positives in the order their decisions were made, so the first to find an
  // item is the one with the earliest localized_at.
  std::vector<const Incident*> positives;
  for (const Incident& inc : report.incidents) {
    if (inc.isPositive()) positives.push_back(&inc);
  }
  std::stable_sort(positives.begin(), positives.end(), [](const Incident* a, const Incident* b) {
    return *a->localized_at < *b->localized_at;
  });
  r.positives = positives.size();
  r.not_localized = r.incidents - r.positives;

  for (const Incident* inc : positives) {
    size_t chosen = chooseTarget(*inc, targets);
    if (chosen == targets.size()) {
      std::string why = whyFalse(*inc, targets);
      for (const TruthItem* b : busy) {
        const bool on_it =
            inc->isLinkKind() ? touchesNode(inc->link, b->node) : inc->node == b->node;
        if (on_it && (why.rfind("healthy link", 0) == 0 || !inc->isLinkKind())) {
          why = "on busy host " + b->node + " (trap " + b->id + "): its own stack loses replies, " +
                "no link is broken";
        }
      }
      r.false_positives.push_back(
          {inc->id, inc->kind, incidentTarget(*inc), *inc->localized_at, std::move(why)});
      continue;
    }
    ItemScore& row = r.items[chosen];
    if (row.found) {
      ++row.duplicates;
      ++r.duplicates;
      continue;
    }
    row.found = true;
    row.found_by = inc->id;
    row.found_by_kind = inc->kind;
    row.time_to_localize = *inc->localized_at - row.onset;
    row.open_delay = inc->opened_at - row.onset;
    row.after_end = row.end && *inc->localized_at > *row.end;
    if (row.is_fault) {
      const std::string& truth_link = targets[chosen].item->link;
      row.direction = inc->both_directions      ? Direction::kBoth
                      : inc->link == truth_link ? Direction::kExact
                                                : Direction::kReversed;
    }
  }

  std::vector<double> ttl, open;
  for (const ItemScore& row : r.items) {
    if (!row.found) continue;
    ++r.found;
    if (!row.is_fault) {
      ++r.traps_found;
      continue;
    }
    ++r.faults_found;
    ttl.push_back(*row.time_to_localize);
    open.push_back(*row.open_delay);
    countDirection(r.direction, row.direction);
    if (row.link_class == LinkClass::kAccess) countDirection(r.direction_access, row.direction);
    if (row.link_class == LinkClass::kFabric) countDirection(r.direction_fabric, row.direction);
  }
  r.time_to_localize = timeStats(std::move(ttl));
  r.open_delay = timeStats(std::move(open));

  r.precision = ratio(r.found, r.found + r.false_positives.size());
  r.recall = ratio(r.found, r.faults + r.traps);
  r.fault_recall = ratio(r.faults_found, r.faults);
  r.trap_recall = ratio(r.traps_found, r.traps);
  r.f1 = r.precision + r.recall == 0 ? 0 : 2 * r.precision * r.recall / (r.precision + r.recall);
  return r;
}

std::string scoreToJson(const ScoreResult& r) {
  json direction = directionJson(r.direction);
  if (r.classified) {
    direction["access"] = directionJson(r.direction_access);
    direction["fabric"] = directionJson(r.direction_fabric);
  }
  json summary = {
      {"incidents", r.incidents},
      {"positives", r.positives},
      {"not_localized", r.not_localized},
      {"found", r.found},
      {"false_positives", r.false_positives.size()},
      {"duplicates", r.duplicates},
      {"precision", r.precision},
      {"recall", r.recall},
      {"f1", r.f1},
      {"faults", {{"total", r.faults}, {"found", r.faults_found}, {"recall", r.fault_recall}}},
      {"traps", {{"total", r.traps}, {"found", r.traps_found}, {"recall", r.trap_recall}}},
      {"direction", direction},
      {"time_to_localize", timeJson(r.time_to_localize)},
      {"open_delay", timeJson(r.open_delay)}};
  json items = json::array();
  for (const ItemScore& row : r.items) {
    json j = {{"id", row.id},
              {"kind", row.kind},
              {"target", row.target},
              {"fault", row.is_fault},
              {"onset", row.onset},
              {"end", optionalJson(row.end)},
              {"found", row.found},
              {"found_by", row.found ? json(row.found_by) : json(nullptr)},
              {"found_by_kind", row.found ? json(row.found_by_kind) : json(nullptr)},
              {"time_to_localize", optionalJson(row.time_to_localize)},
              {"open_delay", optionalJson(row.open_delay)},
              {"after_end", row.after_end},
              {"direction", row.direction == Direction::kNotApplicable
                                ? json(nullptr)
                                : json(directionName(row.direction))},
              {"duplicates", row.duplicates}};
    if (r.classified && row.is_fault) j["link_class"] = linkClassName(row.link_class);
    items.push_back(std::move(j));
  }
  json fps = json::array();
  for (const FalsePositive& fp : r.false_positives) {
    fps.push_back({{"incident", fp.incident_id},
                   {"kind", fp.kind},
                   {"target", fp.target},
                   {"localized_at", fp.localized_at},
                   {"reason", fp.reason}});
  }
  json out = {
      {"summary", summary}, {"items", items}, {"false_positives", fps}, {"warnings", r.warnings}};
  return out.dump(2) + "\n";
}

}  // namespace netdiag::sim
