#pragma once

// Each subcommand group registers itself on the app and stores its exit
// code (see app.h) in `exit_code` when it runs.

#include <CLI/CLI.hpp>

namespace netdiag::cli {

void addTopoCommands(CLI::App& app, int& exit_code);
void addPlanCommand(CLI::App& app, int& exit_code);
void addSimulateCommand(CLI::App& app, int& exit_code);
void addScoreCommand(CLI::App& app, int& exit_code);
void addReplayCommand(CLI::App& app, int& exit_code);
void addLocateCommand(CLI::App& app, int& exit_code);
void addIncidentsCommand(CLI::App& app, int& exit_code);
void addExplainCommand(CLI::App& app, int& exit_code);
void addDrainCommand(CLI::App& app, int& exit_code);
void addDrainActionsCommand(CLI::App& app, int& exit_code);
void addAgentCommand(CLI::App& app, int& exit_code);
void addAnalyzerCommand(CLI::App& app, int& exit_code);
void addPollCommand(CLI::App& app, int& exit_code);

}  // namespace netdiag::cli
