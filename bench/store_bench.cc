// SQLite topology snapshots at 102,400 host ports: save (one transaction,
// reused prepared statements) and load, into a fresh database file per run.
//
//   build/bench/store_bench --benchmark_min_time=0.5

#include <filesystem>

#include <benchmark/benchmark.h>

#include "store/migrations.h"
#include "store/topology_store.h"
#include "topology/generators.h"

namespace {

using namespace netdiag;

const topology::Topology& rail100k() {
  static const topology::Topology t = topology::generateRail(
      {.sus = 400, .hosts_per_su = 32, .rails = 8, .spines = 32, .leaf_uplinks = 32, .cores = 16});
  return t;
}

std::string freshPath() {
  auto p = std::filesystem::temp_directory_path() / "netdiag_store_bench.db";
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(p.string() + ext);
  return p.string();
}

void BM_Rail100k_SaveSnapshot(benchmark::State& state) {
  const auto& t = rail100k();
  for (auto _ : state) {
    state.PauseTiming();
    auto db = store::openAndMigrate(freshPath());
    if (!db) state.SkipWithError(db.message().c_str());
    state.ResumeTiming();
    auto id = store::saveTopology(*db, t, "bench");
    if (!id) state.SkipWithError(id.message().c_str());
  }
  state.counters["links"] = static_cast<double>(t.linkCount());
}

void BM_Rail100k_LoadSnapshot(benchmark::State& state) {
  const auto& t = rail100k();
  auto db = store::openAndMigrate(freshPath());
  auto id = store::saveTopology(*db, t, "bench");
  for (auto _ : state) {
    auto loaded = store::loadTopology(*db, *id);
    if (!loaded) state.SkipWithError(loaded.message().c_str());
    benchmark::DoNotOptimize(loaded->linkCount());
  }
  state.counters["links"] = static_cast<double>(t.linkCount());
}

BENCHMARK(BM_Rail100k_SaveSnapshot)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Rail100k_LoadSnapshot)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
