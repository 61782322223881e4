// `netdiag agent`: runs the collector agent (collector/agent.h) until SIGTERM
// or SIGINT. Every flag is also a key of the YAML file given with --config
// (flags win); see collector/agent_config.h for the keys.

#include <iostream>
#include <map>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/stop_signals.h"
#include "collector/agent.h"
#include "collector/agent_config.h"

namespace netdiag::cli {
namespace {

void logLine(const std::string& msg) {
  // One line per message, timestamped, on stderr (data would go to stdout).
  // Called from the agent's thread and the signal-waiting one: one string,
  // one write, so lines do not interleave.
  std::cerr << (utcTimestamp(std::time(nullptr)) + " netdiag agent: " + msg + "\n") << std::flush;
}

int runAgent(const std::string& config_file, const std::map<std::string, CLI::Option*>& flags,
             const std::map<std::string, std::string>& values) {
  collector::AgentConfig cfg;
  bool bad = false;
  if (!config_file.empty()) {
    for (const std::string& e : collector::applyAgentConfigFile(cfg, config_file)) {
      std::cerr << "netdiag agent: " << e << '\n';
      bad = true;
    }
  }
  for (const collector::AgentConfigKey& k : collector::agentConfigKeys()) {
    if (flags.at(k.key)->count() == 0) continue;
    const std::string err = collector::setAgentConfigValue(cfg, k.key, values.at(k.key));
    if (!err.empty()) {
      std::cerr << "netdiag agent: " << k.flag() << ": " << err << '\n';
      bad = true;
    }
  }
  for (const std::string& e : collector::validateAgentConfig(cfg)) {
    std::string flag;
    for (const collector::AgentConfigKey& k : collector::agentConfigKeys()) {
      if (e.compare(0, k.key.size() + 1, k.key + ":") == 0) flag = " (" + k.flag() + ")";
    }
    std::cerr << "netdiag agent: " << e << flag << '\n';
    bad = true;
  }
  if (bad) return kExitError;

  // Before any thread (gRPC, metrics, prober) starts.
  StopSignals signals;

  std::string error;
  auto agent = collector::Agent::create(cfg, logLine, &error);
  if (!agent) {
    std::cerr << "netdiag agent: " << error << '\n';
    return kExitError;
  }
  if (agent->metricsPort() != 0) {
    logLine("metrics on http://" + cfg.metrics_address.substr(0, cfg.metrics_address.rfind(':')) +
            ":" + std::to_string(agent->metricsPort()) + "/metrics");
  }
  signals.runUntilStopped([&] { agent->run(); }, [&] { agent->requestStop(); }, logLine);
  return kExitOk;
}

}  // namespace

void addAgentCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "agent",
      "Run the collector agent: probe the plan's peers, answer their probes, read port counters "
      "and LLDP, stream batches to the analyzer");
  auto config_file = std::make_shared<std::string>();
  auto values = std::make_shared<std::map<std::string, std::string>>();
  auto flags = std::make_shared<std::map<std::string, CLI::Option*>>();
  cmd->add_option("--config", *config_file,
                  "YAML file of settings; every flag below is also a key (batch_interval: 1)");
  for (const collector::AgentConfigKey& k : collector::agentConfigKeys()) {
    (*flags)[k.key] = cmd->add_option(k.flag(), (*values)[k.key], k.help);
  }
  cmd->footer(
      "Privileges: none for probing, responding and path discovery; CAP_NET_RAW for LLDP "
      "capture only (without it LLDP is reported as unavailable and the rest runs).");
  cmd->callback([config_file, values, flags, &exit_code] {
    exit_code = runAgent(*config_file, *flags, *values);
  });
}

}  // namespace netdiag::cli
