#pragma once

#include <CLI/CLI.hpp>

namespace netdiag::cli {

// Registers `netdiag topo validate|generate|show|paths`; the chosen command
// stores its exit code in `exit_code`.
void addTopoCommands(CLI::App& app, int& exit_code);

}  // namespace netdiag::cli
