// `netdiag simulate`: a scenario over a fabric and a probe plan, to a
// telemetry log (formats.md §2) and a ground-truth file.

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>

#include <absl/synchronization/mutex.h>
#include <sys/resource.h>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "collector/uplink.h"
#include "loadgen/sim_agents.h"
#include "planner/plan.h"
#include "sim/rng.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "telemetry/jsonl.h"
#include "telemetry/tee.h"

namespace netdiag::cli {
namespace {

struct SimulateOptions {
  std::string scenario;
  std::string topology;
  std::string fabric;
  std::string output = "-";
  std::string truth;
  uint64_t seed = 1;
  std::optional<uint64_t> ecmp_seed;
  std::optional<double> duration_s;
  bool quiet = false;
  // --live: stream to a running analyzer instead of (or besides, with -o
  // FILE) writing the log.
  std::string live;
  double speed = 1;
  size_t agents = 0;
  double batch_interval_s = 1;
  double live_timeout_s = 120;
};

void printErrors(const std::vector<topology::Diagnostic>& errors) {
  for (const auto& e : errors) {
    std::cerr << e.file;
    if (e.line > 0) std::cerr << ':' << e.line;
    std::cerr << ": error: " << e.message << '\n';
  }
}

// This process's CPU time (user + system), for benchmarks that share the
// machine with what they load.
double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

// Streams the run to the analyzer at o.live over synthetic agents; with an
// explicit -o FILE the log is written too. Returns an error message.
std::string runLive(const SimulateOptions& o, const topology::Topology& topo, sim::Simulator& sim,
                    double& time_shift) {
  loadgen::SimAgentsOptions so;
  so.analyzer = o.live;
  so.agents = o.agents;
  so.speed = o.speed;
  so.batch_interval_s = o.batch_interval_s;
  so.connect_timeout_s = o.live_timeout_s;
  collector::UplinkOptions check;
  check.analyzer = o.live;
  check.agent = "sim";
  if (std::string e = collector::checkUplinkOptions(check); !e.empty()) return "--live: " + e;
  // As in the analyzer (analyzer_command.cc): abseil's lock-order graph, a
  // debug aid on every gRPC lock, was a quarter of the generator's CPU with
  // 16k streams. The connect waves pace the handshakes, not the graph.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  loadgen::SimAgents agents(topo, so);
  if (!agents.perNode()) {
    // Always said (even with --quiet): without it every record is refused.
    std::cerr << "note: " << agents.agentCount() << " grouped synthetic agents sim-0..sim-"
              << agents.agentCount() - 1 << " (fewer streams than the " << topo.nodeCount()
              << " nodes): the analyzer must run with --accept-sim-agents " << agents.agentCount()
              << '\n';
  }
  if (!o.quiet) {
    std::cerr << "streaming to " << o.live << " over " << agents.agentCount() << " agent stream(s)"
              << (agents.perNode() ? " (one per node)" : "")
              << (o.speed > 0 ? " at speed " + std::to_string(o.speed)
                              : std::string(" as fast as possible"))
              << '\n';
  }
  std::string err;
  if (o.output != "-") {
    err = writeFileAtomically(o.output, [&](std::ostream& out) {
      telemetry::JsonlWriter writer(topo, out);
      telemetry::TeeSink tee;
      tee.add(&writer);
      tee.add(&agents);
      sim.run(tee);
      writer.flush();
    });
  } else {
    sim.run(agents);
  }
  if (!err.empty()) return err;
  if (!agents.finish(o.live_timeout_s, &err)) return err;
  time_shift = agents.stats().time_shift;
  if (!o.quiet) {
    loadgen::SimAgentsStats s = agents.stats();
    std::cerr << "delivered " << withCommas(s.records) << " records in " << withCommas(s.batches)
              << " batches to " << o.live << " in " << s.seconds << " s ("
              << withCommas(static_cast<uint64_t>(s.records / std::max(s.seconds, 1e-9)))
              << " records/s acknowledged); " << s.reconnects << " reconnect(s)"
              << (s.reconnect_reason.empty() ? "" : " (mostly: " + s.reconnect_reason + ")")
              << "; times shifted by " << static_cast<int64_t>(s.time_shift) << " s; "
              << "generator CPU " << cpuSeconds() << " s\n";
  }
  return {};
}

int runSimulate(const SimulateOptions& o) {
  using namespace netdiag::sim;
  std::vector<topology::Diagnostic> errors;

  // 1. Everything is checked before anything is written.
  ScenarioLoad load;
  if (!o.scenario.empty()) {
    load = loadScenarioFile(o.scenario);
  } else {
    load.scenario.name = "baseline";
    load.scenario.file = "(no scenario)";
  }
  errors = load.errors;
  Scenario& scenario = load.scenario;
  if (o.duration_s) scenario.duration_s = *o.duration_s;
  if (!o.topology.empty()) {
    scenario.fabric = FabricSpec{};
    scenario.fabric.file = o.topology;
  } else if (!o.fabric.empty()) {
    scenario.fabric = FabricSpec{};
    for (const auto& p : parseFabricSpec(o.fabric, scenario.fabric)) {
      errors.push_back({"--fabric", 0, p});
    }
  }
  if (scenario.fabric.empty() && errors.empty()) {
    errors.push_back({scenario.file, 0,
                      "no fabric: give --topology FILE, --fabric SPEC (e.g. rail:sus=4) or a "
                      "'topology' in the scenario"});
  }
  for (const auto& p : planner::validate(scenario.budget)) {
    errors.push_back({scenario.file, scenario.budget_line, "budget: " + p});
  }
  if (!errors.empty()) {
    printErrors(errors);
    return kExitError;
  }
  auto topo = buildFabric(scenario.fabric, errors);
  if (!topo) {
    printErrors(errors);
    return kExitError;
  }
  SimOptions options;
  options.seed = o.seed;
  options.ecmp_seed = o.ecmp_seed ? *o.ecmp_seed : mix64(o.seed ^ 0xec3bec3bull);
  planner::Plan plan = planner::makePlan(*topo, scenario.budget, {}, o.seed);
  auto sim = Simulator::create(*topo, scenario, plan, options, errors);
  if (!sim) {
    printErrors(errors);
    return kExitError;
  }

  // 2. Run, writing the log (or streaming it); the truth file is written
  // last, atomically.
  auto t0 = std::chrono::steady_clock::now();
  std::string err;
  double time_shift = 0;  // live: the truth moves onto the wall clock with the telemetry
  if (!o.live.empty()) {
    err = runLive(o, *topo, *sim, time_shift);
  } else {
    err = writeFileAtomically(o.output, [&](std::ostream& out) {
      telemetry::JsonlWriter writer(*topo, out);
      sim->run(writer);
      writer.flush();
    });
  }
  if (!err.empty()) {
    std::cerr << "netdiag simulate: " << err << '\n';
    return kExitError;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!o.truth.empty()) {
    err = writeFileAtomically(o.truth, [&](std::ostream& out) {
      Truth truth = sim->truth();
      truth.start += time_shift;
      truth.end += time_shift;
      for (auto* items : {&truth.faults, &truth.traps}) {
        for (TruthItem& item : *items) {
          item.onset += time_shift;
          if (item.end) *item.end += time_shift;
        }
      }
      out << truthToJson(truth) << '\n';
    });
    if (!err.empty()) {
      std::cerr << "netdiag simulate: " << err << '\n';
      return kExitError;
    }
  }
  if (!o.quiet) {
    const SimStats& s = sim->stats();
    uint64_t records = s.probe_records + s.port_records + s.lldp_records;
    std::cerr << "simulated " << (scenario.name.empty() ? "scenario" : scenario.name) << " on "
              << topo->name << ": " << withCommas(s.flows) << " flows, "
              << withCommas(s.probe_records) << " probe + " << withCommas(s.port_records)
              << " port + " << withCommas(s.lldp_records) << " lldp records in " << seconds
              << " s (" << withCommas(static_cast<uint64_t>(records / std::max(seconds, 1e-9)))
              << " records/s); " << sim->truth().faults.size() << " fault(s), "
              << sim->truth().traps.size() << " trap(s)\n";
  }
  return kExitOk;
}

}  // namespace

void addSimulateCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SimulateOptions>();
  auto* sim = app.add_subcommand(
      "simulate",
      "Simulate a fabric under a scenario: telemetry log on stdout, truth with --truth");
  sim->add_option("--scenario", o->scenario, "Scenario file (YAML), e.g. sim/scenarios/*.yaml");
  sim->add_option("--topology", o->topology, "Topology file (overrides the scenario's)");
  sim->add_option("--fabric", o->fabric,
                  "Generated fabric instead: leaf-spine|fat-tree|rail[:key=value,...], "
                  "e.g. fat-tree:k=8 or rail:sus=4,hosts_per_su=32");
  sim->add_option("-o,--output", o->output, "Telemetry log (JSON Lines); '-' for stdout")
      ->capture_default_str();
  sim->add_option("--truth", o->truth,
                  "Write the ground truth (JSON) here (with --live, on the same shifted clock)");
  sim->add_option("--seed", o->seed, "Seed of every random draw but the ECMP hash")
      ->capture_default_str();
  sim->add_option("--ecmp-seed", o->ecmp_seed,
                  "Seed of the switches' ECMP hash (default: derived from --seed)");
  sim->add_option("--duration", o->duration_s, "Seconds to simulate (overrides the scenario)")
      ->check(CLI::PositiveNumber)
      ->check(CLI::Range(0.0, sim::kMaxDuration));
  sim->add_flag("-q,--quiet", o->quiet, "No summary on stderr");
  auto* live = sim->add_option(
      "--live", o->live,
      "Stream the telemetry to a running analyzer (HOST:PORT of its gRPC listener) "
      "over synthetic agents, times shifted onto the wall clock; -o FILE also writes the log");
  sim->add_option(
         "--speed", o->speed,
         "With --live: telemetry seconds per wall second (1 real time, 0 as fast as possible)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber)
      ->needs(live);
  sim->add_option(
         "--agents", o->agents,
         "With --live: concurrent agent streams, each its own connection (default: one per "
         "node); fewer than the nodes are grouped sim-<i> agents, which the analyzer "
         "accepts only with --accept-sim-agents N")
      ->check(CLI::Range(size_t{1}, size_t{100000}))
      ->needs(live);
  sim->add_option("--batch-interval", o->batch_interval_s,
                  "With --live: telemetry seconds per batch of each agent (an agent's "
                  "batch_interval); the analyzer's cost goes mostly per batch")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 60.0))
      ->needs(live);
  sim->add_option("--live-timeout", o->live_timeout_s,
                  "With --live: seconds to wait at the end for every batch to be acknowledged")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->needs(live);
  sim->callback([o, &exit_code] { exit_code = runSimulate(*o); });
}

}  // namespace netdiag::cli
