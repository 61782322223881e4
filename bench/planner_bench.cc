// Planner micro-benchmarks: the fabric index (distance table), makePlan and
// computeCoverage, from a small rail fabric up to the 102,400-host-port one
// of the issue. docs/planner.md lists the measured figures.

#include <benchmark/benchmark.h>

#include "planner/coverage.h"
#include "planner/fabric_index.h"
#include "planner/plan.h"
#include "topology/generators.h"

namespace {

using namespace netdiag;

const topology::Topology& fabric(int64_t which) {
  static const topology::Topology small = topology::generateRail(
      {.sus = 4, .hosts_per_su = 32, .rails = 8, .spines = 8, .leaf_uplinks = 32, .cores = 4});
  static const topology::Topology large = topology::generateRail({.sus = 400,
                                                                  .hosts_per_su = 32,
                                                                  .rails = 8,
                                                                  .spines = 32,
                                                                  .leaf_uplinks = 32,
                                                                  .cores = 16,
                                                                  .addresses = false});
  return which == 0 ? small : large;
}

void setLabel(benchmark::State& state, const topology::Topology& t) {
  size_t host_ports = 0;
  for (const auto& p : t.ports()) host_ports += t.node(p.node).isHost() ? 1 : 0;
  state.SetLabel(std::to_string(host_ports) + " host ports, " + std::to_string(t.dirLinkCount()) +
                 " directed links");
}

void BM_FabricIndex(benchmark::State& state) {
  const auto& t = fabric(state.range(0));
  for (auto _ : state) {
    planner::FabricIndex idx(t, {});
    benchmark::DoNotOptimize(idx.edgeCount());
  }
  setLabel(state, t);
}

void BM_MakePlan(benchmark::State& state) {
  const auto& t = fabric(state.range(0));
  planner::FabricIndex idx(t, {});
  for (auto _ : state) {
    planner::Plan plan = planner::makePlan(idx, {}, 1);
    benchmark::DoNotOptimize(plan.ports.data());
  }
  setLabel(state, t);
}

void BM_Coverage(benchmark::State& state) {
  const auto& t = fabric(state.range(0));
  planner::FabricIndex idx(t, {});
  planner::Plan plan = planner::makePlan(idx, {}, 1);
  for (auto _ : state) {
    auto report = planner::computeCoverage(idx, plan);
    benchmark::DoNotOptimize(report.min_flows);
  }
  setLabel(state, t);
}

// Index + plan + coverage: what `netdiag plan` does after loading the file.
void BM_PlanAndCoverage(benchmark::State& state) {
  const auto& t = fabric(state.range(0));
  for (auto _ : state) {
    planner::FabricIndex idx(t, {});
    planner::Plan plan = planner::makePlan(idx, {}, 1);
    auto report = planner::computeCoverage(idx, plan);
    benchmark::DoNotOptimize(report.min_flows);
  }
  setLabel(state, t);
}

// Arg 0: "Small" 4-SU rail fabric (1,024 host ports); arg 1: 400 SUs (102,400).
BENCHMARK(BM_FabricIndex)->Name("Small/FabricIndex")->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MakePlan)->Name("Small/MakePlan")->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Coverage)->Name("Small/Coverage")->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FabricIndex)
    ->Name("Rail100k/FabricIndex")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_MakePlan)
    ->Name("Rail100k/MakePlan")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_Coverage)
    ->Name("Rail100k/Coverage")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_PlanAndCoverage)
    ->Name("Rail100k/PlanAndCoverage")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
