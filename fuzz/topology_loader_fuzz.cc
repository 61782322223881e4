// Topology files (formats.md §1, YAML or JSON) from untrusted bytes: the
// loader must diagnose, never crash, and a topology it accepts is finalized
// and consistent enough to walk.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "topology/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace netdiag::topology;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  LoadResult r = loadTopology(in, "fuzz");
  for (const Diagnostic& d : r.errors) (void)d.str();
  for (const Diagnostic& d : r.warnings) (void)d.str();
  if (!r.ok()) return 0;
  const Topology& t = r.topology;
  // Every port's node exists, and every directed link reverses to itself.
  for (PortId p = 0; p < t.portCount(); ++p) {
    if (t.port(p).node >= t.nodeCount()) std::abort();
  }
  for (NodeId n = 0; n < t.nodeCount(); ++n) {
    for (DirLinkId d : t.outLinks(n)) {
      if (t.reverse(t.reverse(d)) != d) std::abort();
    }
  }
  return 0;
}
