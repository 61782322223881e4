// Throughput of the localization engine (issue #4 targets (a) and (b)):
// the engine core on records already decoded, and the JSON Lines front end
// (readJsonl) feeding it. The records come from the simulator: a gray-loss
// scenario (1 % loss on a random leaf->spine link from t = 10 s) on a
// leaf-spine fabric of 1,024 host ports, collected in memory first, so only
// the engine (or the reader + engine) is timed. Every iteration feeds a
// fresh Engine (its construction is not timed); the localization passes
// that fall due while ingesting (one per 5 s of log time) are included.
//
//   analyzer_bench [--benchmark_filter=...]
//
// The `Small` benchmarks use a 10 s run and finish in well under a second
// (the ctest smoke test).

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <benchmark/benchmark.h>

#include "analyzer/engine.h"
#include "planner/plan.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "telemetry/jsonl.h"

namespace {

using namespace netdiag;

// How the simulated records carry paths.
enum class Paths { kMixed, kAll, kNone };  // scenario noise / every record / none

// Everything a run produced, in arrival order.
struct Collected : telemetry::RecordSink {
  struct Ref {
    uint8_t kind;  // 0 probe, 1 port, 2 lldp
    uint32_t index;
  };
  std::vector<telemetry::ProbeRecord> probes;
  std::vector<telemetry::PortRecord> ports;
  std::vector<telemetry::LldpRecord> lldp;
  std::vector<Ref> order;
  void onProbe(const telemetry::ProbeRecord& r) override {
    order.push_back({0, static_cast<uint32_t>(probes.size())});
    probes.push_back(r);
  }
  void onPort(const telemetry::PortRecord& r) override {
    order.push_back({1, static_cast<uint32_t>(ports.size())});
    ports.push_back(r);
  }
  void onLldp(const telemetry::LldpRecord& r) override {
    order.push_back({2, static_cast<uint32_t>(lldp.size())});
    lldp.push_back(r);
  }
  void replay(telemetry::RecordSink& sink) const {
    for (const Ref& x : order) {
      switch (x.kind) {
        case 0:
          sink.onProbe(probes[x.index]);
          break;
        case 1:
          sink.onPort(ports[x.index]);
          break;
        default:
          sink.onLldp(lldp[x.index]);
          break;
      }
    }
  }
};

struct Dataset {
  std::unique_ptr<topology::Topology> topo;
  Collected records;
  std::string jsonl;   // the whole run rendered as JSON Lines
  uint64_t paths = 0;  // probe records with a (full or partial) path
};

const Dataset& dataset(double duration_s, Paths paths) {
  static std::map<std::pair<double, Paths>, std::unique_ptr<Dataset>> cache;
  auto& slot = cache[{duration_s, paths}];
  if (slot) return *slot;
  slot = std::make_unique<Dataset>();
  Dataset& d = *slot;
  sim::Scenario sc;
  sc.name = "gray_loss";
  sc.duration_s = duration_s;
  sim::parseFabricSpec("leaf-spine:spines=8,leaves=32,hosts_per_leaf=32", sc.fabric);
  sim::FaultSpec f;
  f.kind = "link_loss";
  f.link.from = "leaf";
  f.link.to = "spine";
  f.loss = 0.01;
  f.onset = 10;
  sc.faults.push_back(f);
  if (paths == Paths::kAll) sc.noise.path_unknown = 0, sc.noise.path_partial = 0;
  std::vector<topology::Diagnostic> errors;
  auto topo = sim::buildFabric(sc.fabric, errors);
  if (!topo) std::abort();
  d.topo = std::make_unique<topology::Topology>(std::move(*topo));
  planner::Plan plan = planner::makePlan(*d.topo, sc.budget, {}, 1);
  auto simulator = sim::Simulator::create(*d.topo, sc, plan, {}, errors);
  if (!simulator) std::abort();
  simulator->run(d.records);
  if (paths == Paths::kNone) {
    for (auto& r : d.records.probes) r.path.clear(), r.path_partial = false;
  }
  for (const auto& r : d.records.probes) d.paths += !r.path.empty();
  std::ostringstream out;
  telemetry::JsonlWriter w(*d.topo, out);
  d.records.replay(w);
  w.flush();
  d.jsonl = out.str();
  return d;
}

void counters(benchmark::State& state, const Dataset& d, uint64_t passes) {
  state.counters["probe_records"] = static_cast<double>(d.records.probes.size());
  state.counters["with_path_pct"] =
      100.0 * static_cast<double>(d.paths) / static_cast<double>(d.records.probes.size());
  state.counters["passes"] = static_cast<double>(passes);
}

// Engine::onProbe over every probe record of the run (port and LLDP records
// left out), items = probe records.
void engineProbes(benchmark::State& state, double duration_s, Paths paths) {
  const Dataset& d = dataset(duration_s, paths);
  uint64_t passes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto engine = std::make_unique<analyzer::Engine>(*d.topo);
    state.ResumeTiming();
    for (const auto& r : d.records.probes) engine->onProbe(r);
    benchmark::DoNotOptimize(engine->stats().probes);
    state.PauseTiming();
    passes = engine->stats().passes;
    engine.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(d.records.probes.size()));
  counters(state, d, passes);
}

// Every record of the run (probes, port counters, LLDP) in arrival order.
void engineAll(benchmark::State& state, double duration_s, Paths paths) {
  const Dataset& d = dataset(duration_s, paths);
  uint64_t passes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto engine = std::make_unique<analyzer::Engine>(*d.topo);
    state.ResumeTiming();
    d.records.replay(*engine);
    benchmark::DoNotOptimize(engine->stats().probes);
    state.PauseTiming();
    passes = engine->stats().passes;
    engine.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(d.records.order.size()));
  counters(state, d, passes);
}

struct NullSink : telemetry::RecordSink {
  uint64_t n = 0;
  void onProbe(const telemetry::ProbeRecord& r) override { n += r.sent; }
  void onPort(const telemetry::PortRecord&) override { ++n; }
  void onLldp(const telemetry::LldpRecord&) override { ++n; }
};

// readJsonl on the rendered log into the engine (or a null sink, to split
// the reader's share from the engine's), items = lines.
void jsonl(benchmark::State& state, double duration_s, Paths paths, bool with_engine) {
  const Dataset& d = dataset(duration_s, paths);
  uint64_t lines = 0, passes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto engine = std::make_unique<analyzer::Engine>(*d.topo);
    NullSink null;
    std::istringstream in(d.jsonl);
    state.ResumeTiming();
    telemetry::ReadStats stats;
    telemetry::readJsonl(in, *d.topo,
                         with_engine ? static_cast<telemetry::RecordSink&>(*engine)
                                     : static_cast<telemetry::RecordSink&>(null),
                         stats);
    if (stats.bad != 0) state.SkipWithError("bad lines in the bench log");
    benchmark::DoNotOptimize(null.n);
    lines += stats.lines;
    state.PauseTiming();
    passes = engine->stats().passes;
    engine.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(lines));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(d.jsonl.size()));
  counters(state, d, passes);
  state.counters["bytes_per_line"] =
      static_cast<double>(d.jsonl.size()) / static_cast<double>(d.records.order.size());
}

constexpr double kFull = 60;  // seconds of simulated log
constexpr double kSmall = 10;

void BM_Engine_ProbesWithPath(benchmark::State& s) { engineProbes(s, kFull, Paths::kAll); }
void BM_Engine_ProbesNoPath(benchmark::State& s) { engineProbes(s, kFull, Paths::kNone); }
void BM_Engine_ProbesMixed(benchmark::State& s) { engineProbes(s, kFull, Paths::kMixed); }
void BM_Engine_AllRecordsMixed(benchmark::State& s) { engineAll(s, kFull, Paths::kMixed); }
void BM_Jsonl_EngineMixed(benchmark::State& s) { jsonl(s, kFull, Paths::kMixed, true); }
void BM_Jsonl_NullSinkMixed(benchmark::State& s) { jsonl(s, kFull, Paths::kMixed, false); }
void BM_Jsonl_EngineNoPath(benchmark::State& s) { jsonl(s, kFull, Paths::kNone, true); }
void BM_Small_EngineProbes(benchmark::State& s) { engineProbes(s, kSmall, Paths::kMixed); }
void BM_Small_JsonlEngine(benchmark::State& s) { jsonl(s, kSmall, Paths::kMixed, true); }

BENCHMARK(BM_Engine_ProbesWithPath)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Engine_ProbesNoPath)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Engine_ProbesMixed)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Engine_AllRecordsMixed)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Jsonl_EngineMixed)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Jsonl_NullSinkMixed)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Jsonl_EngineNoPath)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Small_EngineProbes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Small_JsonlEngine)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
