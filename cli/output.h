#pragma once

// Small helpers shared by subcommands: number and time formatting for
// humans and writing a file atomically (so a failed run never leaves half a
// file).

#include <cstdint>
#include <ctime>
#include <functional>
#include <ostream>
#include <string>

namespace netdiag::cli {

// 102400 -> "102,400".
std::string withCommas(uint64_t n);

// 0 -> "1970-01-01T00:00:00Z". Safe on any thread (gmtime_r: gmtime's one
// static buffer is shared by all threads, and log lines come from several).
std::string utcTimestamp(std::time_t t);

// Writes via `write` to `path` through a temporary file renamed into place;
// "-" writes to stdout. Returns an error message, empty on success.
std::string writeFileAtomically(const std::string& path,
                                const std::function<void(std::ostream&)>& write);

}  // namespace netdiag::cli
