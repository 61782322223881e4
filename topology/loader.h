#pragma once

// Loads a topology file of formats.md §1 (YAML, or JSON which is read by the
// same parser) and checks every rule of the contract, collecting all problems
// with their file and line instead of stopping at the first.

#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "topology/model.h"

namespace netdiag::topology {

struct Diagnostic {
  std::string file;
  uint32_t line = 0;  // 0: not tied to a line
  std::string message;

  // "file:line: message", the form compilers use, so editors can jump to it;
  // control and bidi characters escaped (display_text.h). `message` itself
  // keeps the offending text verbatim. With a level: "file:line: level: message".
  std::string str(std::string_view level = {}) const;
};

struct LoadResult {
  Topology topology;  // finalized; meaningful only when ok()
  std::vector<Diagnostic> errors;
  // Legal per the contract but probably a mistake (e.g. a duplicated
  // interface address, which would make traceroute hops ambiguous).
  std::vector<Diagnostic> warnings;

  bool ok() const { return errors.empty(); }
};

LoadResult loadTopology(std::istream& in, std::string_view source_name);
LoadResult loadTopologyFile(const std::string& path);

}  // namespace netdiag::topology
