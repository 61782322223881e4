// Accuracy of localization, measured as formats.md §4 scores it: every
// scenario kind of sim/scenarios/ on leaf-spine, fat-tree and rail fabrics of
// 1,024 host ports, over many seeds, with an ECMP hash seed the analyzer is
// never told. The simulator feeds the analyzer in-process (the same records
// a log would carry); each run's report is scored against its truth.
//
//   accuracy [--seeds N] [--kinds a,b] [--fabrics a,b] [--methods netdiag,007,boolean,netbouncer]
//            [--threads N] [--json FILE] [--one-way SHARE] [--path-unknown SHARE]
//            [--path-knowledge record|flow] [--reply-path SHARE] [--background-loss X]
//            [--ecmp-hash mix|crc] [--peers N] [--flows-per-peer N] [--probes-per-second X]
//            [--redraw-s S]   (overrides of every scenario's noise and budget)
//            [--runs FILE]   (one JSON line per run: misses, false positives, times)
//   accuracy --sweep ci|full [--threads N] [--draws N] [--require-precision X]
//            [--require-recall Y] [--json FILE] [--runs FILE] [--quiet 1]
//            [--only I]   (just draw I of the sweep, to look into one run)
//            [--adapt 1]  (closed loop: the unsettled links get flows, bench/sweep.h)
//            [--trace 1]  (with --only: every pass's open incidents on stderr)
//            [--duration S]  (each run's length, 300 s unless given)
//            (the sweep over deployment conditions, bench/sweep.h)

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "analyzer/engine.h"
#include "bench/localizers.h"
#include "bench/sweep.h"
#include "planner/plan.h"
#include "sim/rng.h"
#include "sim/scenario.h"
#include "sim/score.h"
#include "sim/simulator.h"
#include "telemetry/tee.h"

namespace {

using namespace netdiag;

const std::map<std::string, std::string> kFabrics = {
    {"leaf-spine", "leaf-spine:spines=8,leaves=32,hosts_per_leaf=32"},
    {"fat-tree", "fat-tree:k=16"},
    {"rail", "rail:sus=4,hosts_per_su=32,rails=8,spines=8,leaf_uplinks=32,cores=8"}};

struct Run {
  std::string kind, fabric, method;
  uint64_t seed;
  sim::ScoreResult score;
  double seconds;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Noise overrides from the command line (e.g. --one-way 0: no lost_fwd/lost_rev).
double g_one_way = -1;
double g_path_unknown = -1;
double g_reply_path = -1;
double g_background = -1;
std::string g_path_knowledge, g_ecmp_hash;
int g_peers = -1, g_flows_per_peer = -1;
double g_probes_per_second = -1, g_redraw_s = -1;

std::vector<Run> runOne(const std::string& scenario_file, const std::string& kind,
                        const std::string& fabric, uint64_t seed,
                        const std::vector<std::string>& methods) {
  auto load = sim::loadScenarioFile(scenario_file);
  sim::Scenario sc = load.scenario;
  if (g_one_way >= 0) sc.noise.one_way = g_one_way;
  if (g_path_unknown >= 0) sc.noise.path_unknown = g_path_unknown;
  if (g_reply_path >= 0) sc.noise.reply_path_known = g_reply_path;
  if (g_background >= 0) sc.noise.background_loss = g_background;
  if (!g_path_knowledge.empty()) sc.noise.path_knowledge = g_path_knowledge;
  if (!g_ecmp_hash.empty()) sc.ecmp_hash = g_ecmp_hash;
  if (g_peers >= 0) sc.budget.peers = g_peers;
  if (g_flows_per_peer >= 0) sc.budget.flows_per_peer = g_flows_per_peer;
  if (g_probes_per_second >= 0) sc.budget.probes_per_second = g_probes_per_second;
  if (g_redraw_s >= 0) sc.redraw_s = g_redraw_s;
  if (auto problems = planner::validate(sc.budget); !problems.empty()) {
    std::fprintf(stderr, "%s: budget: %s\n", kind.c_str(), problems[0].c_str());
    return {};
  }
  sc.fabric = {};
  sim::parseFabricSpec(kFabrics.at(fabric), sc.fabric);
  std::vector<topology::Diagnostic> errors;
  auto topo = sim::buildFabric(sc.fabric, errors);
  planner::Plan plan = planner::makePlan(*topo, sc.budget, {}, seed);
  sim::SimOptions opt;
  opt.seed = seed;
  opt.ecmp_seed = sim::mix64(seed * 7919 + 17);  // never shown to the analyzer
  auto simulator = sim::Simulator::create(*topo, sc, plan, opt, errors);
  if (!simulator) {
    std::fprintf(stderr, "%s on %s: %s\n", kind.c_str(), fabric.c_str(),
                 errors.empty() ? "?" : errors[0].str().c_str());
    return {};
  }
  auto localizers = bench::makeLocalizers(*topo, methods);
  telemetry::TeeSink tee;
  for (auto& l : localizers) tee.add(l.sink.get());
  auto t0 = std::chrono::steady_clock::now();
  simulator->run(tee);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<Run> runs;
  for (auto& l : localizers) {
    std::string error;
    auto report = sim::reportFromJson(analyzer::reportToJson(*topo, l.report()).dump(), error);
    if (!report) {
      std::fprintf(stderr, "bad report from %s: %s\n", l.name.c_str(), error.c_str());
      continue;
    }
    runs.push_back(
        {kind, fabric, l.name, seed, sim::scoreReport(simulator->truth(), *report, &*topo), secs});
  }
  return runs;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 3;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::string kinds_arg, fabrics_arg = "leaf-spine,fat-tree,rail", methods_arg = "netdiag";
  std::string json_out, runs_out;
  bench::SweepOptions sweep;
  bool sweeping = false;
  std::string dir = NETDIAG_SOURCE_DIR "/sim/scenarios";
  const char* usage =
      "usage: accuracy [--seeds N] [--kinds a,b] [--fabrics a,b] [--methods a,b] [--threads N]\n"
      "                [--json FILE] [--runs FILE] [--one-way SHARE] [--path-unknown SHARE]\n"
      "                [--path-knowledge record|flow] [--reply-path SHARE] [--background-loss X]\n"
      "                [--ecmp-hash mix|crc] [--peers N] [--flows-per-peer N]\n"
      "                [--probes-per-second X] [--redraw-s S]\n"
      "       accuracy --sweep ci|full [--threads N] [--draws N] [--require-precision X]\n"
      "                [--require-recall Y] [--json FILE] [--runs FILE] [--quiet 1] [--only I]\n"
      "                [--duration S]\n"
      "                [--adapt 1] [--trace 1]\n";
  for (int i = 1; i < argc; i += 2) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "accuracy: %s needs a value\n%s", a.c_str(), usage);
      return 2;
    }
    if (a == "--seeds")
      seeds = std::atoi(argv[i + 1]);
    else if (a == "--kinds")
      kinds_arg = argv[i + 1];
    else if (a == "--fabrics")
      fabrics_arg = argv[i + 1];
    else if (a == "--methods")
      methods_arg = argv[i + 1];
    else if (a == "--threads")
      threads = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else if (a == "--json")
      json_out = argv[i + 1];
    else if (a == "--runs")
      runs_out = argv[i + 1];
    else if (a == "--one-way")
      g_one_way = std::atof(argv[i + 1]);
    else if (a == "--path-unknown")
      g_path_unknown = std::atof(argv[i + 1]);
    else if (a == "--path-knowledge")
      g_path_knowledge = argv[i + 1];
    else if (a == "--reply-path")
      g_reply_path = std::atof(argv[i + 1]);
    else if (a == "--background-loss")
      g_background = std::atof(argv[i + 1]);
    else if (a == "--ecmp-hash")
      g_ecmp_hash = argv[i + 1];
    else if (a == "--peers")
      g_peers = std::atoi(argv[i + 1]);
    else if (a == "--flows-per-peer")
      g_flows_per_peer = std::atoi(argv[i + 1]);
    else if (a == "--probes-per-second")
      g_probes_per_second = std::atof(argv[i + 1]);
    else if (a == "--redraw-s")
      g_redraw_s = std::atof(argv[i + 1]);
    else if (a == "--sweep") {
      sweeping = true;
      sweep.mode = argv[i + 1];
    } else if (a == "--draws")
      sweep.draws = std::atoi(argv[i + 1]);
    else if (a == "--only")
      sweep.only = std::atoi(argv[i + 1]);
    else if (a == "--require-precision")
      sweep.require_precision = std::atof(argv[i + 1]);
    else if (a == "--require-recall")
      sweep.require_recall = std::atof(argv[i + 1]);
    else if (a == "--quiet")
      sweep.quiet = std::atoi(argv[i + 1]) != 0;
    else if (a == "--adapt")
      sweep.adapt = std::atoi(argv[i + 1]) != 0;
    else if (a == "--trace")
      sweep.trace = std::atoi(argv[i + 1]) != 0;
    else if (a == "--duration")
      sweep.duration_s = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "accuracy: unknown option %s\n%s", a.c_str(), usage);
      return 2;
    }
  }
  if ((!g_path_knowledge.empty() && g_path_knowledge != "record" && g_path_knowledge != "flow") ||
      (!g_ecmp_hash.empty() && g_ecmp_hash != "mix" && g_ecmp_hash != "crc")) {
    std::fprintf(stderr, "accuracy: --path-knowledge takes record|flow, --ecmp-hash mix|crc\n%s",
                 usage);
    return 2;
  }
  if (seeds < 1 || threads < 1) {
    std::fprintf(stderr, "accuracy: --seeds and --threads must be >= 1\n%s", usage);
    return 2;
  }
  if (sweeping) {
    if (sweep.trace && sweep.only < 0) {
      std::fprintf(stderr, "accuracy: --trace needs --only (one draw's passes)\n");
      return 2;
    }
    sweep.threads = threads;
    sweep.json_out = json_out;
    sweep.runs_out = runs_out;
    return bench::runSweep(sweep);
  }
  std::vector<std::string> kinds = split(kinds_arg);
  if (kinds.empty()) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      kinds.push_back(e.path().stem().string());
    }
    std::sort(kinds.begin(), kinds.end());
  }
  const auto fabrics = split(fabrics_arg);
  const auto methods = split(methods_arg);

  struct Job {
    std::string kind, fabric;
    uint64_t seed;
  };
  std::vector<Job> jobs;
  for (const auto& k : kinds) {
    for (const auto& f : fabrics) {
      for (int s = 1; s <= seeds; ++s) jobs.push_back({k, f, static_cast<uint64_t>(s)});
    }
  }
  std::vector<Run> runs;
  std::mutex mu;
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t j; (j = next++) < jobs.size();) {
        auto r = runOne(dir + "/" + jobs[j].kind + ".yaml", jobs[j].kind, jobs[j].fabric,
                        jobs[j].seed, methods);
        std::lock_guard lock(mu);
        runs.insert(runs.end(), r.begin(), r.end());
      }
    });
  }
  for (auto& t : pool) t.join();
  if (!runs_out.empty()) {
    std::ofstream f(runs_out);
    for (const Run& r : runs) {
      nlohmann::json misses = nlohmann::json::array(), fps = nlohmann::json::array();
      nlohmann::json ttl = nlohmann::json::array();
      for (const auto& it : r.score.items) {
        if (!it.found) misses.push_back(it.target);
        if (it.time_to_localize) ttl.push_back(*it.time_to_localize);
      }
      for (const auto& fp : r.score.false_positives) {
        fps.push_back({{"kind", fp.kind},
                       {"target", fp.target},
                       {"at", fp.localized_at},
                       {"reason", fp.reason}});
      }
      f << nlohmann::json{{"kind", r.kind},         {"fabric", r.fabric}, {"seed", r.seed},
                          {"method", r.method},     {"misses", misses},   {"false_positives", fps},
                          {"time_to_localize", ttl}}
               .dump()
        << '\n';
    }
  }

  // One row per (kind, method): all fabrics and seeds pooled.
  struct Agg {
    size_t runs = 0, items = 0, found = 0, faults = 0, faults_found = 0, fp = 0, fp_link = 0;
    size_t dir_fabric = 0, dir_fabric_ok = 0, dir_access = 0, dir_access_ok = 0;
    std::vector<double> ttl, open;
  };
  std::map<std::pair<std::string, std::string>, Agg> agg;
  for (const Run& r : runs) {
    Agg& a = agg[{r.kind, r.method}];
    ++a.runs;
    a.items += r.score.items.size();
    a.found += r.score.found;
    a.faults += r.score.faults;
    a.faults_found += r.score.faults_found;
    a.fp += r.score.false_positives.size();
    for (const auto& fp : r.score.false_positives) a.fp_link += fp.kind.rfind("link_", 0) == 0;
    a.dir_fabric += r.score.direction_fabric.found;
    a.dir_fabric_ok += r.score.direction_fabric.exact + r.score.direction_fabric.both;
    a.dir_access += r.score.direction_access.found;
    a.dir_access_ok += r.score.direction_access.exact + r.score.direction_access.both;
    for (const auto& it : r.score.items) {
      if (it.is_fault && it.time_to_localize) a.ttl.push_back(*it.time_to_localize);
      if (it.is_fault && it.open_delay) a.open.push_back(*it.open_delay);
    }
  }
  std::printf("%-18s %-10s %5s %6s %9s %7s %6s %5s %9s %9s %8s %8s %8s\n", "kind", "method", "runs",
              "items", "precision", "recall", "F1", "FP", "dir-fab", "dir-acc", "ttl-med",
              "ttl-max", "open-med");
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [key, a] : agg) {
    double precision = a.found + a.fp ? static_cast<double>(a.found) / (a.found + a.fp) : 1.0;
    double recall = a.items ? static_cast<double>(a.found) / a.items : 1.0;
    double f1 = precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0;
    auto ratio = [](size_t ok, size_t n) { return n ? static_cast<double>(ok) / n : NAN; };
    const double ttl_max = a.ttl.empty() ? NAN : *std::max_element(a.ttl.begin(), a.ttl.end());
    std::printf("%-18s %-10s %5zu %6zu %9.3f %7.3f %6.3f %5zu %9.3f %9.3f %8.1f %8.1f %8.1f\n",
                key.first.c_str(), key.second.c_str(), a.runs, a.items, precision, recall, f1, a.fp,
                ratio(a.dir_fabric_ok, a.dir_fabric), ratio(a.dir_access_ok, a.dir_access),
                median(a.ttl), ttl_max, median(a.open));
    out.push_back(
        {{"kind", key.first},
         {"method", key.second},
         {"runs", a.runs},
         {"items", a.items},
         {"found", a.found},
         {"false_positives", a.fp},
         {"link_false_positives", a.fp_link},
         {"precision", precision},
         {"recall", recall},
         {"f1", f1},
         {"direction_fabric", ratio(a.dir_fabric_ok, a.dir_fabric)},
         {"direction_access", ratio(a.dir_access_ok, a.dir_access)},
         {"ttl_median_s", median(a.ttl)},
         {"ttl_max_s", a.ttl.empty() ? NAN : *std::max_element(a.ttl.begin(), a.ttl.end())},
         {"open_delay_median_s", median(a.open)},
         {"found_within_180s",
          std::count_if(a.ttl.begin(), a.ttl.end(), [](double t) { return t <= 180; })},
         {"found_within_120s",
          std::count_if(a.ttl.begin(), a.ttl.end(), [](double t) { return t <= 120; })}});
  }
  if (!json_out.empty()) std::ofstream(json_out) << out.dump(2) << '\n';
  return 0;
}
