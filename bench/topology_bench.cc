// Micro-benchmarks of the topology engine on in-memory fabrics: ECMP path
// counting, enumeration and per-hop shares, and loader throughput.

#include <random>
#include <sstream>

#include <benchmark/benchmark.h>

#include "topology/drain.h"
#include "topology/ecmp.h"
#include "topology/generators.h"
#include "topology/loader.h"
#include "topology/writer.h"

namespace {

using namespace netdiag::topology;

// 102,400 host ports: 400 SUs x 32 hosts x 8 rails, 32 spines per rail
// plane, 16 cores.
const Topology& rail100k() {
  static const Topology t = generateRail(
      {.sus = 400, .hosts_per_su = 32, .rails = 8, .spines = 32, .leaf_uplinks = 32, .cores = 16});
  return t;
}

const Topology& railSmall() {
  static const Topology t = generateRail(
      {.sus = 2, .hosts_per_su = 4, .rails = 2, .spines = 2, .leaf_uplinks = 2, .cores = 2});
  return t;
}

std::vector<PortId> hostPorts(const Topology& t) {
  std::vector<PortId> out;
  for (PortId p = 0; p < t.portCount(); ++p) {
    if (t.node(t.port(p).node).isHost()) out.push_back(p);
  }
  return out;
}

template <typename Query>
void runQueries(benchmark::State& state, const Topology& t, Query query) {
  auto ports = hostPorts(t);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<size_t> pick(0, ports.size() - 1);
  Router router(t);
  for (auto _ : state) {
    PortId a = ports[pick(rng)], b = ports[pick(rng)];
    if (a == b) continue;
    query(router, a, b);
  }
  state.SetItemsProcessed(state.iterations());
}

void countPaths(benchmark::State& state, const Topology& t) {
  runQueries(state, t, [](Router& r, PortId a, PortId b) {
    benchmark::DoNotOptimize(r.paths(a, b).count());
  });
}

void enumeratePaths(benchmark::State& state, const Topology& t) {
  std::vector<DirLinkId> path;
  runQueries(state, t, [&](Router& r, PortId a, PortId b) {
    PathSet set = r.paths(a, b);
    for (auto c = set.cursor(); c.next(path);) benchmark::DoNotOptimize(path.data());
  });
}

void linkShares(benchmark::State& state, const Topology& t) {
  runQueries(state, t, [](Router& r, PortId a, PortId b) {
    benchmark::DoNotOptimize(r.paths(a, b).linkShares());
  });
}

void BM_Rail100k_CountPaths(benchmark::State& s) { countPaths(s, rail100k()); }
void BM_Rail100k_EnumeratePaths(benchmark::State& s) { enumeratePaths(s, rail100k()); }
void BM_Rail100k_LinkShares(benchmark::State& s) { linkShares(s, rail100k()); }
void BM_Small_CountPaths(benchmark::State& s) { countPaths(s, railSmall()); }
void BM_Small_EnumeratePaths(benchmark::State& s) { enumeratePaths(s, railSmall()); }

void BM_Rail100k_Generate(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(generateRail({.sus = 400,
                                           .hosts_per_su = 32,
                                           .rails = 8,
                                           .spines = 32,
                                           .leaf_uplinks = 32,
                                           .cores = 16}));
  }
}

// Drain plans (what /metrics and `explain` make for each link with an open
// incident): random links of one kind, each planned on a fresh router.
void drainPlans(benchmark::State& state, const Topology& t, bool access) {
  std::vector<LinkId> links;
  for (LinkId l = 0; l < t.linkCount(); ++l) {
    const bool host_end =
        t.node(t.port(t.link(l).a).node).isHost() || t.node(t.port(t.link(l).b).node).isHost();
    if (host_end == access) links.push_back(l);
  }
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<size_t> pick(0, links.size() - 1);
  Router router(t);
  for (auto _ : state) benchmark::DoNotOptimize(planDrain(router, links[pick(rng)]).safe);
  state.SetItemsProcessed(state.iterations());
}

void BM_Rail100k_DrainPlanFabric(benchmark::State& s) { drainPlans(s, rail100k(), false); }
void BM_Rail100k_DrainPlanAccess(benchmark::State& s) { drainPlans(s, rail100k(), true); }

// Loader throughput on a mid-size fabric held in memory (no disk I/O).
void loadFrom(benchmark::State& state, const Topology& t, bool json) {
  std::ostringstream text;
  json ? writeJson(t, text) : writeYaml(t, text);
  const std::string s = text.str();
  for (auto _ : state) {
    std::istringstream in(s);
    LoadResult r = loadTopology(in, "bench");
    if (!r.ok()) state.SkipWithError("load failed");
    benchmark::DoNotOptimize(r.topology.linkCount());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * s.size()));
  state.counters["links"] = static_cast<double>(t.linkCount());
}

const Topology& leafSpine10k() {
  static const Topology t = generateLeafSpine(
      {.spines = 16, .leaves = 128, .hosts_per_leaf = 32, .nics_per_host = 2, .parallel = 1});
  return t;
}

void BM_Load_LeafSpine8k_Yaml(benchmark::State& s) { loadFrom(s, leafSpine10k(), false); }
void BM_Load_LeafSpine8k_Json(benchmark::State& s) { loadFrom(s, leafSpine10k(), true); }
void BM_Small_Load(benchmark::State& s) { loadFrom(s, railSmall(), false); }

BENCHMARK(BM_Small_CountPaths);
BENCHMARK(BM_Small_EnumeratePaths);
BENCHMARK(BM_Small_Load);
BENCHMARK(BM_Rail100k_Generate)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Rail100k_CountPaths)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Rail100k_EnumeratePaths)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Rail100k_LinkShares)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Rail100k_DrainPlanFabric)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Rail100k_DrainPlanAccess)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Load_LeafSpine8k_Yaml)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Load_LeafSpine8k_Json)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
