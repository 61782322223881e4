#pragma once

// What netdiag's own drains did to the fabric, as the engine weighs it.
// server/drain_coordinator.h publishes it after every pass.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "topology/model.h"

namespace netdiag::analyzer {

struct DrainState {
  // Links held out of service: they leave the ECMP graph (formats.md §1),
  // and their incidents do not resolve while out (no probe crosses them).
  std::set<topology::LinkId> out;
  // Incident id -> the telemetry time its drain mended it (mitigated_at).
  std::map<std::string, double> mitigated;
  // When netdiag changed a link's routing, a drain or a restore: from the
  // action's issue to the pass that saw the switch's answer, in telemetry
  // time (`to` is +inf while the answer is pending). Like a carrier change,
  // it makes the switches at the link's ends reconverge, and the probes
  // lost meanwhile are the change's, not a fault's.
  struct Change {
    double from = 0, to = 0;
  };
  std::map<topology::LinkId, std::vector<Change>> changes;
};

}  // namespace netdiag::analyzer
