// The telemetry log (formats.md §2) from untrusted bytes, through the reader
// into the analyzer engine: every line is validated against the fabric, and
// the records that pass drive the engine's passes, incidents and report.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "analyzer/engine.h"
#include "fuzz/fuzz_fabric.h"
#include "telemetry/jsonl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace netdiag;
  const topology::Topology& topo = fuzz::fuzzFabric();
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  analyzer::Engine engine(topo);
  telemetry::ReadStats stats;
  // A bounded skew, as `netdiag analyze` runs it, and the unbounded default
  // on alternate inputs, so both paths of the reader are fuzzed.
  telemetry::ReadOptions options;
  if (size % 2 == 0) options.max_future_s = 3600;
  telemetry::readJsonl(in, topo, engine, stats, options);
  engine.finish();
  (void)engine.report();
  (void)engine.backgroundLoss();
  return 0;
}
