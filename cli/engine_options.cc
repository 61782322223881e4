#include "cli/engine_options.h"

#include <iostream>

namespace netdiag::cli {

void addEngineOptions(CLI::App* cmd, analyzer::EngineConfig& config) {
  cmd->add_option("--horizon", config.horizon_s,
                  "Seconds of evidence each decision weighs (the long horizon; a multiple of 5)")
      ->capture_default_str();
  cmd->add_option("--short-horizon", config.short_horizon_s,
                  "Seconds of the fast horizon, for faults that just began (a multiple of 5)")
      ->capture_default_str();
  cmd->add_option("--resolve-after", config.resolve_after_s,
                  "Seconds an incident must stay explained away (or its rate rejected by the "
                  "newest evidence) before it resolves")
      ->capture_default_str();
  cmd->add_option("--busy-host-max", config.busy_host_max_s,
                  "Seconds a busy host (dropping or answering late on all its flows) lasts at "
                  "most; a one-NIC host's loss that lasts longer is paged on its access link")
      ->capture_default_str();
  cmd->add_option("--false-page-budget", config.false_pages_per_link_hour,
                  "Expected false pages per directed link and hour of a healthy fabric; sets the "
                  "evidence a page needs, ln(passes per hour / budget) nats")
      ->capture_default_str();
}

bool checkEngineOptions(const analyzer::EngineConfig& config, const char* command) {
  const auto problems = analyzer::validate(config);
  for (const auto& p : problems) std::cerr << "netdiag " << command << ": " << p << '\n';
  return problems.empty();
}

}  // namespace netdiag::cli
