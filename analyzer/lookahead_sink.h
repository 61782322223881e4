#pragma once

// A record sink in front of the engine for a caller that hands records over
// one at a time (replay): it holds the newest few probe records back and
// starts loading each one's flow state (Engine::prefetch) when it comes in,
// so that by the time the engine ingests it its cache misses have been
// overlapping the records before it instead of following them. Records
// reach the engine in the order they came; flush() at the end of the input.

#include <array>
#include <cstddef>

#include "analyzer/engine.h"
#include "telemetry/record.h"

namespace netdiag::analyzer {

class LookaheadSink : public telemetry::RecordSink {
 public:
  explicit LookaheadSink(Engine& engine) : engine_(engine) {}
  void onProbe(const telemetry::ProbeRecord& r) override;
  // Port and LLDP records are rare (a port's counters every few seconds):
  // the probes before them go in first, then they do.
  void onPort(const telemetry::PortRecord& r) override;
  void onLldp(const telemetry::LldpRecord& r) override;

  // Ingests every record held back: call it before reading the engine.
  void flush();

 private:
  // Far enough ahead to cover a flow-table miss with the work of a few
  // records; each slot keeps its paths' capacity, so holding costs no
  // allocation after the first records.
  static constexpr size_t kDepth = 4;
  Engine& engine_;
  std::array<telemetry::ProbeRecord, kDepth> ring_;
  size_t head_ = 0, count_ = 0;
};

}  // namespace netdiag::analyzer
