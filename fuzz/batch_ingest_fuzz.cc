// An agent batch (the wire's v1::Batch) from untrusted bytes, as the gRPC
// stream would hand it to the analyzer after protobuf decoding, through
// LiveAnalyzer::ingest (name or port-id resolution, dedup, the time-ordered hold) and
// tick (the engine's pass, incident bookkeeping). No network, no database:
// the analyzer is fresh per input with a fixed clock, so runs reproduce.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz/fuzz_fabric.h"
#include "netdiag/v1/collector.pb.h"
#include "server/live_analyzer.h"

namespace {

constexpr double kNow = 1.7e9;  // the seeds' records are stamped near it

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace netdiag;
  netdiag::v1::Batch batch;
  if (!batch.ParseFromArray(data, static_cast<int>(size))) return 0;
  std::string error;
  auto live = server::LiveAnalyzer::create(
      fuzz::fuzzFabric(), {}, nullptr, [] { return kNow; }, &error, nullptr);
  if (!live) {
    std::fprintf(stderr, "LiveAnalyzer::create: %s\n", error.c_str());
    std::abort();
  }
  // Topology 1 stands for the analyzer's own fingerprint, so that mutated
  // inputs reach the compact-port-id path (a random 64-bit value never would).
  if (batch.topology() == 1) batch.set_topology(live->topologyFingerprint());
  server::BatchResult r = live->ingest(batch);
  // A batch that delivered records is remembered: again, it is a duplicate.
  if (r.accepted > 0 && !live->ingest(batch).duplicate) std::abort();
  (void)live->tick(kNow);
  (void)live->flush();
  (void)live->locate();
  (void)live->incidents({});
  return 0;
}
