#pragma once

// What the engine thread publishes after each pass (and each tick): an
// immutable view of the engine for every reader, so HTTP and the history
// never take the engine's time. Readers hold a shared_ptr to one snapshot as
// long as they like; the engine thread builds the next one beside it.

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "analyzer/engine.h"
#include "analyzer/incident.h"

namespace netdiag::server {

struct Snapshot {
  // Every open incident and the most recent resolved ones, up to
  // LiveOptions::recent_incidents, in the engine's report order.
  analyzer::Report report;
  // Per directed link (its id as index), the evidence over the horizon.
  std::vector<analyzer::LinkEvidence> evidence;
  analyzer::IngestStats stats;  // the engine's, when it was taken
  double background_loss = 0;   // per probe over a round trip (Engine::backgroundLoss)
  // The port counters of the links netdiag holds drained, over
  // LiveOptions::drained_counter_window_s.
  std::map<topology::LinkId, analyzer::LinkCounters> drained_counters;
};

using SnapshotPtr = std::shared_ptr<const Snapshot>;

}  // namespace netdiag::server
