#include "bench/sweep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "analyzer/engine.h"
#include "analyzer/unsettled.h"
#include "bench/oracle.h"
#include "planner/fabric_index.h"
#include "planner/plan.h"
#include "sim/rng.h"
#include "sim/scenario.h"
#include "sim/score.h"
#include "sim/simulator.h"
#include "telemetry/tee.h"

namespace netdiag::bench {
namespace {

using nlohmann::json;

// ---- the axes ----------------------------------------------------------------

struct FabricLevel {
  const char* name;
  const char* spec;
};
// 128-256 host ports each, so a run takes about a second.
const FabricLevel kFabricLevels[] = {
    {"ls-par2", "leaf-spine:spines=4,leaves=16,hosts_per_leaf=16,parallel=2"},
    {"ls-uneven", "leaf-spine:spines=4,leaves=16,hosts_per_leaf=16,parallel=1,parallel_max=3"},
    {"fat-tree8", "fat-tree:k=8"},
    {"rail", "rail:sus=2,hosts_per_su=16,rails=8,spines=8,leaf_uplinks=16"},
    {"rail-core", "rail:sus=2,hosts_per_su=16,rails=4,spines=4,leaf_uplinks=8,cores=4"}};

struct PlanLevel {
  const char* name;
  int peers;                 // 0: derived by the planner
  int flows_per_peer;        // 1-8
  double probes_per_window;  // per flow; 0: the default budget (100 probes/s per port)
  double redraw_s;           // peers re-drawn; 0: never
};
const PlanLevel kPlanLevels[] = {{"default", 0, 4, 0, 0},
                                 {"p4f2w10r180", 4, 2, 10, 180},
                                 {"p2f1w10r60", 2, 1, 10, 60},
                                 {"p64f1w5", 64, 1, 5, 0},
                                 {"p16f8w2r300", 16, 8, 2, 300}};

struct PathLevel {
  const char* name;
  const char* mode;
  double known;
};
const PathLevel kPathLevels[] = {{"flow0", "flow", 0},
                                 {"flow30", "flow", 0.3},
                                 {"flow70", "flow", 0.7},
                                 {"flow100", "flow", 1.0},
                                 {"rec70", "record", 0.7}};

struct ShareLevel {
  const char* name;
  double value;
};
const ShareLevel kReplyLevels[] = {{"reply0", 0}, {"reply100", 1}};
const ShareLevel kOneWayLevels[] = {{"ow1", 1}, {"ow0", 0}};
const ShareLevel kBackgroundLevels[] = {
    {"bg1e-7", 1e-7}, {"bg1e-6", 1e-6}, {"bg1e-5", 1e-5}, {"bg1e-4", 1e-4}};

struct RecordsLevel {
  const char* name;
  double missing, late, late_max_s;
};
const RecordsLevel kRecordsLevels[] = {
    {"rec-ok", 0.005, 0, 20}, {"rec-lossy", 0.01, 0.005, 20}, {"rec-bad", 0.05, 0.02, 25}};

const char* const kHashLevels[] = {"mix", "crc"};

// What happens in the run, ten slots per block: 2 clean, 2 busy host,
// 1 congestion, 3 single faults, 2 multi-fault.
const char* const kScenarioSlots[] = {"clean",  "busy",  "congestion", "single", "single",
                                      "single", "multi", "clean",      "busy",   "multi"};
const double kRates[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.2, 1.0};
const char* const kWhere[] = {"fabric", "fabric", "access"};
const int kMultiCounts[] = {2, 4, 8};

constexpr double kPass = 5;

std::string rateName(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "loss%g%%", r * 100);
  return buf;
}

// Level `i` of an axis with `n` levels for draw `draw`: every block of n
// draws takes each level once, in an order shuffled per axis and block, so
// the marginals are balanced and the axes independent.
size_t balanced(uint64_t axis, size_t n, uint64_t draw) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  sim::Rng rng(sim::hashKeys(0x5eeb, axis, draw / n));
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order[draw % n];
}

// ---- one run -----------------------------------------------------------------

struct Draw {
  uint64_t index = 0, seed = 0;
  std::vector<std::pair<std::string, std::string>> levels;  // axis, level
  std::string condition;
  std::string klass;  // clean | busy | congestion | single | multi
  sim::Scenario scenario;
  std::string fabric_spec;
};

sim::FaultSpec linkFault(const char* kind, const std::string& from, const std::string& to,
                         double loss, double onset) {
  sim::FaultSpec f;
  f.kind = kind;
  f.line = 1;
  f.link.from = from;
  f.link.to = to;
  f.loss = loss;
  f.onset = onset;
  return f;
}

Draw makeDraw(uint64_t i, uint64_t salt, double duration_s) {
  Draw d;
  d.index = i;
  d.seed = salt * 100000 + i + 1;
  sim::Rng rng(sim::hashKeys(d.seed, 0xd4a3));
  auto level = [&](const char* axis, const std::string& name) { d.levels.push_back({axis, name}); };
  const FabricLevel& fab = kFabricLevels[balanced(1, std::size(kFabricLevels), i)];
  const PlanLevel& plan = kPlanLevels[balanced(2, std::size(kPlanLevels), i)];
  const PathLevel& paths = kPathLevels[balanced(3, std::size(kPathLevels), i)];
  const ShareLevel& reply = kReplyLevels[balanced(4, std::size(kReplyLevels), i)];
  const ShareLevel& oneway = kOneWayLevels[balanced(5, std::size(kOneWayLevels), i)];
  const ShareLevel& bg = kBackgroundLevels[balanced(6, std::size(kBackgroundLevels), i)];
  const RecordsLevel& recs = kRecordsLevels[balanced(7, std::size(kRecordsLevels), i)];
  const char* hash = kHashLevels[balanced(8, std::size(kHashLevels), i)];
  d.klass = kScenarioSlots[balanced(9, std::size(kScenarioSlots), i)];
  level("fabric", fab.name);
  level("plan", plan.name);
  level("paths", paths.name);
  level("reply", reply.name);
  level("oneway", oneway.name);
  level("bg", bg.name);
  level("records", recs.name);
  level("hash", hash);
  level("scenario", d.klass);
  d.fabric_spec = fab.spec;

  sim::Scenario& s = d.scenario;
  s.file = "sweep";
  s.duration_s = duration_s;
  s.window_s = 5;
  s.budget.flows_per_peer = plan.flows_per_peer;
  s.budget.peers = plan.peers;
  if (plan.probes_per_window > 0) {
    s.budget.probes_per_second =
        plan.peers * plan.flows_per_peer * plan.probes_per_window / s.window_s;
  }
  s.redraw_s = plan.redraw_s;
  s.ecmp_hash = hash;
  sim::Noise& z = s.noise;
  z.background_loss = bg.value;
  z.missing_records = recs.missing;
  z.late_records = recs.late;
  z.late_max_s = recs.late_max_s;
  z.path_knowledge = paths.mode;
  z.path_unknown = 1 - paths.known;
  z.reply_path_known = reply.value;
  z.one_way = oneway.value;

  if (d.klass == "busy") {
    const int hosts = 1 + static_cast<int>(rng.below(2));
    for (int h = 0; h < hosts; ++h) {
      sim::FaultSpec f;
      f.kind = "busy_host";
      f.line = 1;
      f.loss = 0.005 + 0.045 * rng.uniform();
      f.delay = 0.005 + 0.045 * rng.uniform();
      f.latency_us = 300;
      f.onset = 20 + 100 * rng.uniform();
      f.end = f.onset + 60 + 240 * rng.uniform();
      s.faults.push_back(f);
    }
    level("busy_hosts", std::to_string(hosts));
  } else if (d.klass == "congestion") {
    sim::FaultSpec f = linkFault("congestion", "leaf", "spine", 0.01, 60);
    f.end = 240;
    f.tx_drops_per_s = 20000;
    s.faults.push_back(f);
  } else if (d.klass == "single") {
    const double rate = kRates[balanced(10, std::size(kRates), i)];
    const std::string where = kWhere[rng.below(std::size(kWhere))];
    const double onset = 60 + 5 * static_cast<double>(rng.below(7));
    if (where == "fabric") {
      s.faults.push_back(linkFault("link_loss", "switch", "switch", rate, onset));
    } else if (rng.below(2)) {
      s.faults.push_back(linkFault("link_loss", "host", "switch", rate, onset));
    } else {
      s.faults.push_back(linkFault("link_loss", "switch", "host", rate, onset));
    }
    level("rate", rateName(rate));
    level("where", where);
  } else if (d.klass == "multi") {
    const int n = kMultiCounts[rng.below(std::size(kMultiCounts))];
    const int access = std::max(1, n / 4);
    const double rates[] = {0.005, 0.01, 0.02, 0.05};
    for (int k = 0; k < n; ++k) {
      const double rate = rates[rng.below(std::size(rates))];
      const double onset = 60 + 10 * k;
      if (k < access) {
        const bool up = rng.below(2);
        s.faults.push_back(
            linkFault("link_loss", up ? "host" : "switch", up ? "switch" : "host", rate, onset));
      } else {
        s.faults.push_back(linkFault("link_loss", "switch", "switch", rate, onset));
      }
    }
    level("faults", std::to_string(n) + "-faults");
  }
  for (const auto& [axis, name] : d.levels) {
    d.condition += (d.condition.empty() ? "" : "/") + name;
  }
  return d;
}

struct CalPoint {
  double confidence;
  bool right;
  bool positive;
  std::string incident;  // "kind target", for --runs
};

struct LossPoint {
  std::string link;
  double injected, estimate, losses;
  std::optional<std::pair<double, double>> interval;
};

struct OracleRow {
  OracleFault oracle;
  std::string klass;  // faultClass
  bool found = false;
  std::optional<double> ttl;  // netdiag's
};

// What probes can tell about a fault's link. An access link of a host with
// one NIC, without one-way counts, loses exactly as that host does when it
// is busy (both hit every flow of the host alike, both ways: the busy-host
// trap of the sweep), so its loss alone cannot name it: netdiag waits for
// its counters, or for the loss to outlast a busy host (--busy-host-max,
// docs/localization.md step 6), which runs of 300 s are too short to see.
// The oracle, which knows the link, does not face that trap; the classes
// show where the gap is.
std::string faultClass(const topology::Topology& t, const std::string& link, bool one_way) {
  const auto d = t.findDirLink(link);
  if (!d) return "unknown";
  topology::NodeId host = topology::kNone;
  for (topology::NodeId n : {t.dirSrcNode(*d), t.dirDstNode(*d)}) {
    if (t.node(n).isHost()) host = n;
  }
  if (host == topology::kNone) return "fabric";
  if (one_way) return "access, one-way counts";
  if (t.portsOf(host).size() > 1) return "access, host with more NICs";
  return "access, one NIC, round trips only";
}

// An incident that was an ambiguity group at some pass.
struct GroupPoint {
  double since;                        // the first pass it was a group
  std::optional<double> localized_at;  // later, when it paged
  bool right = false;                  // paged and not a false positive
};

struct RunResult {
  Draw draw;
  bool ok = false;
  std::string error;
  sim::ScoreResult score;
  std::vector<OracleRow> oracle;
  std::vector<CalPoint> cal;
  std::vector<LossPoint> loss;
  std::vector<json> fp_incidents;  // the report's false positives, whole (for --runs)
  std::vector<json> groups;        // incidents never localized (ambiguity groups), whole
  std::vector<GroupPoint> ambiguous;
  size_t focus_plans = 0;  // plans the closed loop served (--adapt)
  double seconds = 0;
};

std::optional<std::pair<double, double>> intervalOf(const json& inc) {
  for (const char* key : {"loss_interval", "loss_ci"}) {
    auto it = inc.find(key);
    if (it != inc.end() && it->is_array() && it->size() == 2 && (*it)[0].is_number() &&
        (*it)[1].is_number()) {
      return std::pair{(*it)[0].get<double>(), (*it)[1].get<double>()};
    }
  }
  return std::nullopt;
}

// One line per open incident of a pass: when, what, how sure, on what.
void traceIncidents(const topology::Topology& topo, const analyzer::Report& rep) {
  for (const analyzer::Incident& i : rep.incidents) {
    if (i.resolved_at) continue;
    const json j = analyzer::incidentToJson(topo, i);
    const json& e = j["evidence"];
    std::fprintf(stderr, "pass %.0f: %s %s%s confidence %.6g llr %s lost %s of %s candidates %s\n",
                 rep.generated_at, j.value("kind", "").c_str(),
                 j.value("link", j.value("node", "")).c_str(), i.localized_at ? " (paged)" : "",
                 i.confidence, e.value("llr_nats", json(0)).dump().c_str(),
                 e.value("lost", json(0)).dump().c_str(), e.value("probes", json(0)).dump().c_str(),
                 j.value("candidates", json::array()).dump().c_str());
  }
}

RunResult runDraw(const Draw& d, bool adapt, bool trace) {
  RunResult out;
  out.draw = d;
  auto t0 = std::chrono::steady_clock::now();
  sim::Scenario sc = d.scenario;
  sim::parseFabricSpec(d.fabric_spec, sc.fabric);
  std::vector<topology::Diagnostic> errors;
  auto topo = sim::buildFabric(sc.fabric, errors);
  if (!topo) {
    out.error = errors.empty() ? "no fabric" : errors[0].str();
    return out;
  }
  if (auto problems = planner::validate(sc.budget); !problems.empty()) {
    out.error = problems[0];
    return out;
  }
  planner::Plan plan = planner::makePlan(*topo, sc.budget, {}, d.seed);
  const analyzer::EngineConfig engine_config;
  analyzer::Engine engine(*topo, engine_config);
  sim::SimOptions opt;
  opt.seed = d.seed;
  opt.ecmp_seed = sim::mix64(d.seed * 7919 + 17);  // never shown to the analyzer

  // After every pass: when each ambiguity group began, and (with adapt) the
  // links to focus on; the simulator asks for the plan at every window start.
  std::map<std::string, double> ambiguous_since;
  uint64_t passes_seen = 0, focus_gen = 0, focus_seed = 0;
  std::vector<topology::DirLinkId> focus;
  std::optional<planner::Plan> focused;
  const planner::Plan* focus_base = nullptr;
  std::optional<planner::FabricIndex> index;  // built on the first focus
  opt.plan_at = [&](const planner::Plan& base, double) -> const planner::Plan* {
    if (engine.stats().passes != passes_seen) {
      passes_seen = engine.stats().passes;
      const analyzer::Report rep = engine.report();
      if (trace) traceIncidents(*topo, rep);
      for (const analyzer::Incident& i : rep.incidents) {
        if (!i.candidates.empty() && !i.localized_at && !i.resolved_at)
          ambiguous_since.emplace(i.id, rep.generated_at);
      }
      if (adapt) {
        auto links = analyzer::unsettledLinks(rep.incidents, analyzer::kMaxUnsettledLinks);
        if (links != focus) {
          focus = std::move(links);
          focus_base = nullptr;
        }
      }
    }
    if (focus.empty()) return nullptr;
    if (focus_base != &base || focus_seed != base.seed) {
      if (!index) index.emplace(*topo, planner::Constraints{});
      focused = planner::focusPlan(*index, base, focus).plan;
      focused->version = base.version + ++focus_gen;
      focus_base = &base;
      focus_seed = base.seed;
    }
    return &*focused;
  };
  auto simulator = sim::Simulator::create(*topo, sc, plan, opt, errors);
  if (!simulator) {
    out.error = errors.empty() ? "?" : errors[0].str();
    return out;
  }
  OracleConfig oc;
  oc.background_loss = sc.noise.background_loss;
  // netdiag's ratio has paid ln 2 for its two horizons; the oracle's one
  // horizon pays it on top of the same bar.
  oc.bar = analyzer::pagingBarNats(engine_config) + std::log(2.0);
  Oracle oracle(*topo, simulator->truth(), oc);
  telemetry::TeeSink tee;
  tee.add(&engine);
  tee.add(&oracle);
  simulator->run(tee);
  engine.finish();
  out.focus_plans = focus_gen;
  const json report_json = analyzer::reportToJson(*topo, engine.report());
  std::string error;
  auto report = sim::reportFromJson(report_json.dump(), error);
  if (!report) {
    out.error = "bad report: " + error;
    return out;
  }
  const sim::Truth& truth = simulator->truth();
  out.score = sim::scoreReport(truth, *report, &*topo);

  // The oracle floor, and netdiag on the same faults.
  std::map<std::string, const sim::ItemScore*> items;
  for (const auto& it : out.score.items) items[it.id] = &it;
  for (const OracleFault& f : oracle.finish(sc.start + sc.duration_s)) {
    OracleRow row;
    row.oracle = f;
    row.klass = faultClass(*topo, f.link, sc.noise.one_way > 0);
    if (auto it = items.find(f.id); it != items.end() && it->second->found) {
      row.found = true;
      row.ttl = it->second->time_to_localize;
    }
    out.oracle.push_back(row);
  }

  // Calibration: every opened incident, judged as if it had paged when it
  // was localized (or, never localized, when it opened).
  sim::IncidentReport all = *report;
  for (auto& inc : all.incidents) {
    if (!inc.localized_at) inc.localized_at = inc.opened_at;
  }
  const sim::ScoreResult as_if = sim::scoreReport(truth, all, &*topo);
  std::set<std::string> wrong;
  for (const auto& fp : as_if.false_positives) wrong.insert(fp.incident_id);
  for (const auto& inc : report->incidents) {
    if (!inc.confidence) continue;
    out.cal.push_back({*inc.confidence, !wrong.contains(inc.id), inc.isPositive(),
                       inc.kind + " " + (inc.link.empty() ? inc.node : inc.link)});
  }
  std::set<std::string> false_pages;
  for (const auto& fp : out.score.false_positives) false_pages.insert(fp.incident_id);
  for (const auto& inc : report->incidents) {
    auto since = ambiguous_since.find(inc.id);
    if (since == ambiguous_since.end()) continue;
    out.ambiguous.push_back(
        {since->second, inc.localized_at, inc.localized_at && !false_pages.contains(inc.id)});
  }

  // Loss estimates of found link_loss faults.
  std::map<std::string, const json*> by_id;
  for (const json& inc : report_json.at("incidents")) {
    by_id[inc.value("id", "")] = &inc;
    if (inc.value("localized_at", json()).is_null() && out.groups.size() < 32)
      out.groups.push_back(inc);
  }
  for (const auto& fp : out.score.false_positives) {
    if (auto it = by_id.find(fp.incident_id); it != by_id.end())
      out.fp_incidents.push_back(*it->second);
  }
  std::map<std::string, const sim::TruthItem*> truth_items;
  for (const auto& f : truth.faults) truth_items[f.id] = &f;
  for (const OracleRow& row : out.oracle) {
    const sim::TruthItem* t = truth_items[row.oracle.id];
    const sim::ItemScore* it = items[row.oracle.id];
    if (!row.found || !t || t->kind != "link_loss" || !it) continue;
    auto inc = by_id.find(it->found_by);
    if (inc == by_id.end()) continue;
    const json& j = *inc->second;
    if (!j.contains("loss_ratio") || !j["loss_ratio"].is_number()) continue;
    out.loss.push_back({row.oracle.link, t->loss, j["loss_ratio"].get<double>(), row.oracle.losses,
                        intervalOf(j)});
  }
  out.ok = true;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// ---- pooling -------------------------------------------------------------------

struct Cell {
  size_t runs = 0, items = 0, tp = 0, fp = 0, positives = 0;
  size_t oracle_faults = 0, oracle_localized = 0, found_of_localized = 0;
  size_t oracle_05 = 0, found_05 = 0;  // oracle-localized faults with loss >= 0.5 %
  size_t pages = 0;                    // positives in clean and trap runs (all false)
  std::vector<double> ratio;           // netdiag TTL / oracle TTL
  void add(const RunResult& r) {
    ++runs;
    items += r.score.items.size();
    tp += r.score.found;
    fp += r.score.false_positives.size();
    positives += r.score.positives;
    const std::string& k = r.draw.klass;
    if (k == "clean" || k == "busy" || k == "congestion") pages += r.score.false_positives.size();
    for (const OracleRow& o : r.oracle) {
      ++oracle_faults;
      if (!o.oracle.localized_at) continue;
      ++oracle_localized;
      found_of_localized += o.found;
      if (o.oracle.injected >= 0.005) {
        ++oracle_05;
        found_05 += o.found;
      }
      if (o.found && o.ttl) {
        const double ora = *o.oracle.localized_at - o.oracle.onset;
        ratio.push_back(std::max(*o.ttl, kPass) / std::max(ora, kPass));
      }
    }
  }
  double precision() const { return tp + fp ? static_cast<double>(tp) / (tp + fp) : NAN; }
  double recall() const { return items ? static_cast<double>(tp) / items : NAN; }
  double recallOracle() const {
    return oracle_localized ? static_cast<double>(found_of_localized) / oracle_localized : NAN;
  }
  double recall05() const { return oracle_05 ? static_cast<double>(found_05) / oracle_05 : NAN; }
};

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

json num(double v) { return std::isnan(v) ? json(nullptr) : json(v); }

json cellJson(const Cell& c) {
  return {{"runs", c.runs},
          {"items", c.items},
          {"tp", c.tp},
          {"fp", c.fp},
          {"fn", c.items - c.tp},
          {"positives", c.positives},
          {"precision", num(c.precision())},
          {"recall", num(c.recall())},
          {"oracle_localized", c.oracle_localized},
          {"recall_where_oracle_localizes", num(c.recallOracle())},
          {"recall_where_oracle_localizes_loss_ge_0_5pct", num(c.recall05())},
          {"ttl_over_oracle_median", num(median(c.ratio))},
          {"clean_and_trap_pages", c.pages}};
}

void printCell(const std::string& axis, const std::string& level, const Cell& c) {
  auto f = [](double v, const char* fmt) {
    if (std::isnan(v)) return std::string("-");
    char buf[32];
    std::snprintf(buf, sizeof buf, fmt, v);
    return std::string(buf);
  };
  std::printf("%-10s %-14s %5zu %5zu %5zu %5zu %5zu %6s %6s %7s %9s %5zu %8s %5zu\n", axis.c_str(),
              level.c_str(), c.runs, c.positives, c.tp, c.fp, c.items - c.tp,
              f(c.precision(), "%.3f").c_str(), f(c.recall(), "%.3f").c_str(),
              f(c.recallOracle(), "%.3f").c_str(), f(c.recall05(), "%.3f").c_str(), c.oracle_05,
              f(median(c.ratio), "%.2f").c_str(), c.pages);
}

}  // namespace

int runSweep(const SweepOptions& o) {
  const bool full = o.mode == "full";
  if (!full && o.mode != "ci") {
    std::fprintf(stderr, "accuracy: --sweep takes ci or full, got '%s'\n", o.mode.c_str());
    return 2;
  }
  const int draws = o.draws > 0 ? o.draws : full ? 6000 : 300;
  const uint64_t salt = full ? 2 : 1;  // ci and full draw different seeds
  std::vector<Draw> jobs;
  for (int i = 0; i < draws; ++i) {
    if (o.only < 0 || o.only == i)
      jobs.push_back(makeDraw(static_cast<uint64_t>(i), salt, o.duration_s));
  }

  auto t0 = std::chrono::steady_clock::now();
  std::vector<RunResult> results(jobs.size());
  std::atomic<size_t> next{0}, done{0};
  std::mutex mu;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(1u, o.threads); ++t) {
    pool.emplace_back([&] {
      for (size_t j; (j = next++) < jobs.size();) {
        results[j] = runDraw(jobs[j], o.adapt, o.trace);
        const size_t n = ++done;
        if (o.quiet) continue;
        std::lock_guard lock(mu);
        const RunResult& r = results[j];
        std::fprintf(stderr, "[%zu/%zu] %s: %s\n", n, jobs.size(), r.draw.condition.c_str(),
                     r.ok ? ("tp " + std::to_string(r.score.found) + " fp " +
                             std::to_string(r.score.false_positives.size()) + " fn " +
                             std::to_string(r.score.items.size() - r.score.found))
                                .c_str()
                          : r.error.c_str());
      }
    });
  }
  for (auto& t : pool) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Cells: every level of every axis, plus the whole sweep.
  std::map<std::pair<std::string, std::string>, Cell> cells;
  Cell total;
  size_t failed = 0;
  for (const RunResult& r : results) {
    if (!r.ok) {
      ++failed;
      std::fprintf(stderr, "run %s failed: %s\n", r.draw.condition.c_str(), r.error.c_str());
      continue;
    }
    total.add(r);
    for (const auto& [axis, level] : r.draw.levels) cells[{axis, level}].add(r);
  }

  std::printf("sweep %s: %d seeded draws of %.0f s, %zu failed, %.0f s wall on %u threads\n",
              o.mode.c_str(), draws, o.duration_s, failed, wall, o.threads);
  std::printf(
      "cells (one level of one axis, all runs that have it); orc-all = recall over the faults "
      "the oracle localizes; rec|orc = the same over those with loss >= 0.5 %% (n-orc of them); "
      "ttl/orc = median of netdiag's "
      "time to localize over the oracle's; pages = positives in clean and trap runs\n");
  std::printf("%-10s %-14s %5s %5s %5s %5s %5s %6s %6s %7s %9s %5s %8s %5s\n", "axis", "level",
              "runs", "pos", "tp", "fp", "fn", "prec", "recall", "orc-all", "rec|orc", "n-orc",
              "ttl/orc", "pages");
  for (const auto& [key, c] : cells) printCell(key.first, key.second, c);
  printCell("all", "-", total);

  // The worst cell, not the mean.
  struct Worst {
    double value = INFINITY;
    std::string cell;
  } worst_precision, worst_recall, worst_recall05;
  size_t max_pages = 0;
  std::string max_pages_cell;
  for (const auto& [key, c] : cells) {
    const std::string name = key.first + "=" + key.second;
    if (c.tp + c.fp > 0 && c.precision() < worst_precision.value) {
      worst_precision = {c.precision(), name};
    }
    if (c.items > 0 && c.recall() < worst_recall.value) worst_recall = {c.recall(), name};
    if (c.oracle_05 > 0 && c.recall05() < worst_recall05.value) {
      worst_recall05 = {c.recall05(), name};
    }
    if (c.pages > max_pages) {
      max_pages = c.pages;
      max_pages_cell = name;
    }
  }
  Cell clean = cells[{"scenario", "clean"}];
  Cell busy = cells[{"scenario", "busy"}];
  Cell congestion = cells[{"scenario", "congestion"}];
  std::printf("\nworst cell: precision %.3f (%s), recall %.3f (%s), rec|orc %.3f (%s)\n",
              worst_precision.value, worst_precision.cell.c_str(), worst_recall.value,
              worst_recall.cell.c_str(), worst_recall05.value, worst_recall05.cell.c_str());
  std::printf("overall: %zu positives (%zu tp, %zu fp), precision %.4f, recall %.3f\n",
              total.positives, total.tp, total.fp, total.precision(), total.recall());
  std::printf(
      "zero-page checks: clean %zu runs, %zu pages; busy host %zu runs, %zu pages; congestion %zu "
      "runs, %zu false positives\n",
      clean.runs, clean.pages, busy.runs, busy.pages, congestion.runs, congestion.fp);

  // Oracle floor.
  size_t oracle_faults = 0, oracle_loc = 0;
  for (const RunResult& r : results) {
    for (const OracleRow& row : r.oracle) {
      ++oracle_faults;
      oracle_loc += row.oracle.localized_at.has_value();
    }
  }
  std::printf(
      "oracle (bar: netdiag's paging bar + ln 2 nats, 180 s horizon, 5 s passes; "
      "times floored at one pass): localizes %zu of %zu faults; netdiag finds %zu of those "
      "(%.3f), %zu of %zu with loss >= 0.5 %% (%.3f); median ttl/oracle %.2f over %zu\n",
      oracle_loc, oracle_faults, total.found_of_localized, total.recallOracle(), total.found_05,
      total.oracle_05, total.recall05(), median(total.ratio), total.ratio.size());

  // The same, per fault class (faultClass).
  std::map<std::string, Cell> classes;
  for (const RunResult& r : results) {
    for (const OracleRow& row : r.oracle) {
      RunResult one;
      one.oracle.push_back(row);
      classes[row.klass].add(one);
    }
  }
  std::printf("\nrecall where the oracle localizes, per fault class (loss >= 0.5 %%):\n");
  std::printf("%-36s %7s %7s %8s %8s\n", "class", "faults", "found", "rec|orc", "ttl/orc");
  json by_class = json::array();
  for (auto& [name, c] : classes) {
    std::printf("%-36s %7zu %7zu %8.3f %8.2f\n", name.c_str(), c.oracle_05, c.found_05,
                c.recall05(), median(c.ratio));
    by_class.push_back({{"class", name},
                        {"faults", c.oracle_05},
                        {"found", c.found_05},
                        {"recall_where_oracle_localizes", num(c.recall05())},
                        {"ttl_over_oracle", num(median(c.ratio))}});
  }

  // Calibration over every opened incident.
  struct Bin {
    const char* name;
    double lo, hi;
    size_t n = 0, right = 0, positives = 0;
  } bins[] = {{"< 0.9", -INFINITY, 0.9},
              {"0.9-0.99", 0.9, 0.99},
              {"0.99-0.999", 0.99, 0.999},
              {">= 0.999", 0.999, INFINITY}};
  for (const RunResult& r : results) {
    for (const CalPoint& c : r.cal) {
      for (Bin& b : bins) {
        if (c.confidence >= b.lo && c.confidence < b.hi) {
          ++b.n;
          b.right += c.right;
          b.positives += c.positive;
        }
      }
    }
  }
  std::printf("\ncalibration (every opened incident; right = names a fault or trap it matches):\n");
  std::printf("%-12s %7s %7s %9s %10s\n", "confidence", "count", "right", "share", "localized");
  json cal = json::array();
  for (const Bin& b : bins) {
    const double share = b.n ? static_cast<double>(b.right) / b.n : NAN;
    std::printf("%-12s %7zu %7zu %9s %10zu\n", b.name, b.n, b.right,
                std::isnan(share) ? "-" : std::to_string(share).substr(0, 5).c_str(), b.positives);
    cal.push_back({{"bin", b.name},
                   {"count", b.n},
                   {"right", b.right},
                   {"share", num(share)},
                   {"localized", b.positives}});
  }

  // Loss estimates.
  std::vector<double> rel;
  size_t within = 0, with_interval = 0, covered = 0;
  for (const RunResult& r : results) {
    for (const LossPoint& l : r.loss) {
      if (l.interval) {
        ++with_interval;
        covered += l.interval->first <= l.injected && l.injected <= l.interval->second;
      }
      if (l.losses < 50) continue;
      const double e = l.estimate / l.injected - 1;
      rel.push_back(std::abs(e));
      within += std::abs(e) <= 0.2;
    }
  }
  std::printf(
      "\nloss estimates (found link_loss faults with >= 50 losses of known path): %zu, within "
      "+-20 %%: %zu (%.3f), median |error| %.3f; stated interval: %s\n",
      rel.size(), within, rel.empty() ? NAN : static_cast<double>(within) / rel.size(), median(rel),
      with_interval ? (std::to_string(covered) + " of " + std::to_string(with_interval) +
                       " cover the injected rate")
                          .c_str()
                    : "not present in the report (skipped)");

  // Ambiguity groups: how many became one link, and how fast.
  size_t groups = 0, settled = 0, settled_right = 0, focus_plans = 0;
  std::vector<double> to_localize;
  for (const RunResult& r : results) {
    focus_plans += r.focus_plans;
    for (const GroupPoint& g : r.ambiguous) {
      ++groups;
      if (!g.localized_at) continue;
      ++settled;
      settled_right += g.right;
      if (g.right) to_localize.push_back(*g.localized_at - g.since);
    }
  }
  std::sort(to_localize.begin(), to_localize.end());
  const double p90 = to_localize.empty()
                         ? NAN
                         : to_localize[std::min(to_localize.size() - 1,
                                                static_cast<size_t>(0.9 * to_localize.size()))];
  std::printf(
      "\nambiguity groups%s: %zu opened, %zu localized later (%zu right); ambiguous -> localized "
      "(right ones): median %.0f s, p90 %.0f s; %zu focused plans served\n",
      o.adapt ? " (closed loop: unsettled links get flows)" : " (static plan)", groups, settled,
      settled_right, median(to_localize), p90, focus_plans);

  int rc = 0;
  if (o.require_precision >= 0) {
    if (!(worst_precision.value >= o.require_precision)) {
      std::printf("FAIL: worst cell precision %.3f < %.3f (%s)\n", worst_precision.value,
                  o.require_precision, worst_precision.cell.c_str());
      rc = 1;
    }
    if (clean.pages + busy.pages + congestion.pages > 0) {
      std::printf("FAIL: %zu pages on clean and trap runs\n",
                  clean.pages + busy.pages + congestion.pages);
      rc = 1;
    }
  }
  if (o.require_recall >= 0 && !(worst_recall05.value >= o.require_recall)) {
    std::printf("FAIL: worst cell recall where the oracle localizes %.3f < %.3f (%s)\n",
                worst_recall05.value, o.require_recall, worst_recall05.cell.c_str());
    rc = 1;
  }

  if (!o.json_out.empty()) {
    json jc = json::array();
    for (const auto& [key, c] : cells) {
      json j = cellJson(c);
      j["axis"] = key.first;
      j["level"] = key.second;
      jc.push_back(j);
    }
    json j = {{"mode", o.mode},
              {"draws", draws},
              {"duration_s", o.duration_s},
              {"wall_s", wall},
              {"total", cellJson(total)},
              {"cells", jc},
              {"worst",
               {{"precision", num(worst_precision.value)},
                {"precision_cell", worst_precision.cell},
                {"recall", num(worst_recall.value)},
                {"recall_cell", worst_recall.cell},
                {"recall_where_oracle_localizes", num(worst_recall05.value)},
                {"recall_where_oracle_localizes_cell", worst_recall05.cell}}},
              {"calibration", cal},
              {"fault_classes", by_class},
              {"ambiguity_groups",
               {{"adapt", o.adapt},
                {"opened", groups},
                {"localized", settled},
                {"localized_right", settled_right},
                {"to_localize_median_s", num(median(to_localize))},
                {"to_localize_p90_s", num(p90)},
                {"focused_plans", focus_plans}}},
              {"loss_estimates",
               {{"count", rel.size()},
                {"within_20pct", within},
                {"median_abs_error", num(median(rel))}}}};
    std::ofstream(o.json_out) << j.dump(2) << '\n';
  }
  if (!o.runs_out.empty()) {
    std::ofstream f(o.runs_out);
    for (const RunResult& r : results) {
      json fps = json::array(), misses = json::array(), orc = json::array();
      for (const auto& fp : r.score.false_positives) {
        fps.push_back({{"kind", fp.kind},
                       {"target", fp.target},
                       {"at", fp.localized_at},
                       {"reason", fp.reason}});
      }
      for (const auto& it : r.score.items) {
        if (!it.found) misses.push_back(it.kind + " " + it.target);
      }
      for (const OracleRow& row : r.oracle) {
        orc.push_back({{"link", row.oracle.link},
                       {"class", row.klass},
                       {"injected", row.oracle.injected},
                       {"oracle_ttl", row.oracle.localized_at
                                          ? json(*row.oracle.localized_at - row.oracle.onset)
                                          : json(nullptr)},
                       {"netdiag_ttl", row.ttl ? json(*row.ttl) : json(nullptr)},
                       {"losses", row.oracle.losses}});
      }
      json claimed = json::array();  // the incidents that claimed 0.9 or more
      for (const CalPoint& c : r.cal) {
        if (c.confidence >= 0.9)
          claimed.push_back({{"confidence", c.confidence},
                             {"right", c.right},
                             {"localized", c.positive},
                             {"incident", c.incident}});
      }
      json loss = json::array();
      for (const LossPoint& p : r.loss) {
        loss.push_back({{"link", p.link},
                        {"injected", p.injected},
                        {"estimate", p.estimate},
                        {"losses", p.losses},
                        {"interval", p.interval ? json{p.interval->first, p.interval->second}
                                                : json(nullptr)}});
      }
      f << json{{"index", r.draw.index},
                {"seed", r.draw.seed},
                {"condition", r.draw.condition},
                {"ok", r.ok},
                {"error", r.error},
                {"seconds", r.seconds},
                {"tp", r.score.found},
                {"false_positives", fps},
                {"fp_incidents", r.fp_incidents},
                {"groups", r.groups},
                {"misses", misses},
                {"oracle", orc},
                {"loss", loss},
                {"calibration", claimed}}
               .dump()
        << '\n';
    }
  }
  return rc;
}

}  // namespace netdiag::bench
