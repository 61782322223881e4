// `netdiag poll snmp`: the SNMP poller (collector/snmp/poller_process.h) for
// switches that cannot run the agent. Settings and credentials come from
// its YAML file only (collector/snmp/poller_config.h): secrets never appear
// on a command line. --once polls every switch once and prints the records
// as the telemetry log of formats.md §2 (a check of a new config).

#include <iostream>

#include <prometheus/registry.h>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/stop_signals.h"
#include "collector/snmp/poller_config.h"
#include "collector/snmp/poller_process.h"
#include "collector/snmp/snmp_poller.h"
#include "collector/source_stats.h"
#include "proto/convert.h"
#include "telemetry/jsonl.h"
#include "topology/loader.h"

namespace netdiag::cli {
namespace {

void logLine(const std::string& msg) {
  std::cerr << (utcTimestamp(std::time(nullptr)) + " netdiag poll snmp: " + msg + "\n")
            << std::flush;
}

struct PollFlags {
  std::string config, analyzer, topology, metrics_address, spool_dir;
  bool once = false;
  double once_timeout = 60;
  int rounds = 1;
};

int runOnce(const collector::snmp::PollerConfig& cfg, const topology::Topology* topo,
            std::map<std::string, std::set<std::string>> known, double timeout_s, int rounds) {
  prometheus::Registry registry;
  collector::SourceStats stats(std::max<size_t>(cfg.targets.size(), 1));
  std::vector<std::string> problems;
  collector::snmp::SnmpPoller poller(cfg, std::move(known), registry, stats, &problems);
  bool all = true;
  v1::Batch batch;
  for (int r = 0; r < rounds; ++r) {
    all = poller.runOnce(timeout_s) && all;
    if (r + 1 < rounds) {
      v1::Batch ignored;
      poller.take(ignored, &problems);
    }
  }
  poller.take(batch, &problems);
  for (const std::string& p : problems) std::cerr << "netdiag poll snmp: " << p << '\n';
  if (topo) {
    proto::Resolver resolver(*topo);
    telemetry::JsonlWriter writer(*topo, std::cout);
    for (const std::string& e : proto::deliver(batch, resolver, writer))
      std::cerr << "netdiag poll snmp: " << e << '\n';
    writer.flush();
  }
  const auto totals = poller.totals();
  std::cerr << "netdiag poll snmp: " << totals.polls << " polls, " << totals.requests
            << " requests, " << totals.varbinds << " varbinds\n";
  size_t failed = 0;
  for (const auto& [target, s] : stats.snapshot()) failed += s.failures > 0 ? 1 : 0;
  std::cerr << "netdiag poll snmp: " << cfg.targets.size() << " targets, " << failed << " failed; "
            << batch.ports_size() << " port and " << batch.lldp_size() << " lldp records"
            << (all ? "" : "; stopped at --once-timeout") << '\n';
  return failed > 0 || !all ? kExitFindings : kExitOk;
}

int runPoll(const PollFlags& f) {
  collector::snmp::PollerConfig cfg;
  std::vector<std::string> warnings;
  const std::vector<std::string> errors =
      collector::snmp::loadPollerConfig(f.config, &cfg, &warnings);
  for (const std::string& w : warnings) std::cerr << "netdiag poll snmp: warning: " << w << '\n';
  for (const std::string& e : errors) std::cerr << "netdiag poll snmp: " << e << '\n';
  if (!errors.empty()) return kExitError;
  if (!f.analyzer.empty()) cfg.analyzer = f.analyzer;
  if (!f.topology.empty()) cfg.topology = f.topology;
  if (!f.metrics_address.empty()) cfg.metrics_address = f.metrics_address;
  if (!f.spool_dir.empty()) cfg.spool_dir = f.spool_dir;

  // The topology, when given, says which interfaces are ports worth reporting.
  std::map<std::string, std::set<std::string>> known;
  topology::LoadResult topo;
  if (!cfg.topology.empty()) {
    topo = topology::loadTopologyFile(cfg.topology);
    for (const auto& e : topo.errors) std::cerr << e.str() << '\n';
    if (!topo.ok()) return kExitError;
    bool bad = false;
    for (const auto& t : cfg.targets) {
      if (!topo.topology.findNode(t.node)) {
        std::cerr << "netdiag poll snmp: " << t.where << ": node \"" << t.node
                  << "\" is not in the topology " << cfg.topology << '\n';
        bad = true;
      }
    }
    if (bad) return kExitError;
    for (const topology::Port& p : topo.topology.ports())
      known[topo.topology.nodes()[p.node].name].insert(p.name);
  }
  if (f.once) {
    return runOnce(cfg, cfg.topology.empty() ? nullptr : &topo.topology, std::move(known),
                   f.once_timeout, f.rounds);
  }

  StopSignals signals;  // before the poller's threads start
  std::string error;
  auto poller = collector::snmp::PollerProcess::create(cfg, std::move(known), logLine, &error);
  if (!poller) {
    std::cerr << "netdiag poll snmp: " << error << '\n';
    return kExitError;
  }
  if (poller->metricsPort() != 0) {
    logLine("metrics on http://" + cfg.metrics_address.substr(0, cfg.metrics_address.rfind(':')) +
            ":" + std::to_string(poller->metricsPort()) + "/metrics");
  }
  signals.runUntilStopped([&] { poller->run(); }, [&] { poller->requestStop(); }, logLine);
  return kExitOk;
}

}  // namespace

void addPollCommand(CLI::App& app, int& exit_code) {
  auto* poll = app.add_subcommand(
      "poll",
      "Poll switches that cannot run the agent and stream what they report to the analyzer");
  poll->require_subcommand(1);
  auto* snmp = poll->add_subcommand(
      "snmp",
      "Poll switches over SNMP (IF-MIB counters, EtherLike FCS errors, LLDP-MIB neighbours)");
  auto f = std::make_shared<PollFlags>();
  snmp->add_option("--config", f->config,
                   "YAML file of targets and settings, credentials included (see "
                   "docs/operations.md)")
      ->required();
  snmp->add_option("--analyzer", f->analyzer,
                   "the analyzer's gRPC address HOST:PORT (overrides analyzer:)");
  snmp->add_option("--topology", f->topology,
                   "topology file: report only its ports, check the targets' node names");
  snmp->add_option("--metrics-address", f->metrics_address, "HOST:PORT of the poller's /metrics");
  snmp->add_option("--spool-dir", f->spool_dir, "directory of the on-disk spool");
  snmp->add_flag("--once", f->once,
                 "poll every target once, print the records as a telemetry log (JSONL; only with "
                 "the topology, which names the ports) and exit (1 when a target failed)");
  snmp->add_option("--rounds", f->rounds,
                   "with --once: poll every target this many times back to back (a benchmark); "
                   "the last round's records are printed")
      ->check(CLI::Range(1, 1000000));
  snmp->add_option("--once-timeout", f->once_timeout, "seconds --once waits at most")
      ->check(CLI::PositiveNumber);
  snmp->footer(
      "Secrets (communities, SNMPv3 passphrases) only in the config file or files it names; "
      "never on the command line.");
  snmp->callback([f, &exit_code] { exit_code = runPoll(*f); });
}

}  // namespace netdiag::cli
