#pragma once

// The `netdiag` command line: one binary, one subcommand per job.

namespace netdiag::cli {

// Exit codes shared by every subcommand (documented in --help and README).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;  // ran fine and found problems
inline constexpr int kExitError = 2;     // bad usage or bad input

int run(int argc, char** argv);

}  // namespace netdiag::cli
