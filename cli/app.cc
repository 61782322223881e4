#include "cli/app.h"

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "netdiag/version.h"

namespace netdiag::cli {

int run(int argc, char** argv) {
  CLI::App app{"netdiag: fabric telemetry and fault localization for GPU cluster networks",
               "netdiag"};
  app.set_version_flag("--version", std::string("netdiag ") + kVersion);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok, 1 findings (the command ran and found problems), 2 usage or input "
      "error.\nData goes to stdout, diagnostics to stderr; --json where the output is data.");

  int exit_code = kExitOk;
  addTopoCommands(app, exit_code);
  addPlanCommand(app, exit_code);
  addSimulateCommand(app, exit_code);
  addScoreCommand(app, exit_code);
  addReplayCommand(app, exit_code);
  addLocateCommand(app, exit_code);
  addIncidentsCommand(app, exit_code);
  addExplainCommand(app, exit_code);
  addDrainCommand(app, exit_code);
  addDrainActionsCommand(app, exit_code);
  addAgentCommand(app, exit_code);
  addPollCommand(app, exit_code);
  addAnalyzerCommand(app, exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitError;
  }
  return exit_code;
}

}  // namespace netdiag::cli
