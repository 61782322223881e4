#pragma once

// Small helpers shared by subcommands: number formatting for humans and
// writing a file atomically (so a failed run never leaves half a file).

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace netdiag::cli {

// 102400 -> "102,400".
std::string withCommas(uint64_t n);

// Writes via `write` to `path` through a temporary file renamed into place;
// "-" writes to stdout. Returns an error message, empty on success.
std::string writeFileAtomically(const std::string& path,
                                const std::function<void(std::ostream&)>& write);

}  // namespace netdiag::cli
