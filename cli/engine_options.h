#pragma once

// The engine's settings that `analyzer` and `replay` share (the evidence
// horizons and when an incident resolves), so a log replays under the
// settings the live analyzer ran with.

#include <CLI/CLI.hpp>

#include "analyzer/engine.h"

namespace netdiag::cli {

void addEngineOptions(CLI::App* cmd, analyzer::EngineConfig& config);

// Prints what is wrong with the settings; false when they are unusable.
bool checkEngineOptions(const analyzer::EngineConfig& config, const char* command);

}  // namespace netdiag::cli
