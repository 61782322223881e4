// Whole-process run of the simulator: builds a fabric, plans it, simulates
// a scenario for the given duration and hands every record to a sink that
// only counts (in-process, the path the analyzer's benchmarks use) or to the
// JSON Lines writer on /dev/null. Prints records/s and the process's peak
// RSS, so runs of different durations show whether memory grows with time.
//
//   sim_scale FABRIC_SPEC DURATION_S count|jsonl [SCENARIO]

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <sys/resource.h>

#include "planner/plan.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "telemetry/jsonl.h"

namespace {

using namespace netdiag;

struct Count : telemetry::RecordSink {
  uint64_t probes = 0, ports = 0, lldp = 0, lost = 0;
  void onProbe(const telemetry::ProbeRecord& r) override {
    ++probes;
    lost += r.lost;
  }
  void onPort(const telemetry::PortRecord&) override { ++ports; }
  void onLldp(const telemetry::LldpRecord&) override { ++lldp; }
};

double peakRssMiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s FABRIC_SPEC DURATION_S count|jsonl [SCENARIO]\n", argv[0]);
    return 2;
  }
  sim::ScenarioLoad load;
  if (argc > 4) load = sim::loadScenarioFile(argv[4]);
  if (!load.ok()) {
    std::fprintf(stderr, "%s\n", load.errors[0].str().c_str());
    return 2;
  }
  sim::Scenario scenario = load.scenario;
  scenario.duration_s = std::atof(argv[2]);
  scenario.fabric = {};
  if (!sim::parseFabricSpec(argv[1], scenario.fabric).empty()) return 2;
  std::vector<topology::Diagnostic> errors;
  auto topo = sim::buildFabric(scenario.fabric, errors);
  if (!topo) return 2;

  auto t0 = std::chrono::steady_clock::now();
  planner::Plan plan = planner::makePlan(*topo, scenario.budget, {}, 1);
  auto sim = sim::Simulator::create(*topo, scenario, plan, {}, errors);
  if (!sim) {
    std::fprintf(stderr, "%s\n", errors[0].str().c_str());
    return 2;
  }
  auto t1 = std::chrono::steady_clock::now();
  Count count;
  std::ofstream devnull("/dev/null");
  telemetry::JsonlWriter writer(*topo, devnull);
  const bool jsonl = std::strcmp(argv[3], "jsonl") == 0;
  if (jsonl) {
    sim->run(writer);
    writer.flush();
  } else {
    sim->run(count);
  }
  auto t2 = std::chrono::steady_clock::now();
  double setup = std::chrono::duration<double>(t1 - t0).count();
  double run = std::chrono::duration<double>(t2 - t1).count();
  const auto& s = sim->stats();
  uint64_t records = s.probe_records + s.port_records + s.lldp_records;
  std::printf(
      "{\"fabric\": \"%s\", \"sink\": \"%s\", \"duration_s\": %.0f, \"flows\": %llu, "
      "\"setup_s\": %.2f, \"run_s\": %.2f, \"probe_records\": %llu, \"records\": %llu, "
      "\"probe_records_per_s\": %.0f, \"records_per_s\": %.0f, \"peak_rss_mib\": %.0f}\n",
      argv[1], jsonl ? "jsonl" : "count", scenario.duration_s,
      static_cast<unsigned long long>(s.flows), setup, run,
      static_cast<unsigned long long>(s.probe_records), static_cast<unsigned long long>(records),
      static_cast<double>(s.probe_records) / run, static_cast<double>(records) / run, peakRssMiB());
  return 0;
}
