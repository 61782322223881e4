#pragma once

// The localizers the accuracy benchmark compares side by side: netdiag's
// analyzer and the published baselines, each a RecordSink with a report.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/incident.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::bench {

struct Localizer {
  std::string name;
  std::unique_ptr<telemetry::RecordSink> sink;
  std::function<analyzer::Report()> report;
};

// Names: netdiag, 007, boolean, netbouncer. Unknown names are skipped.
std::vector<Localizer> makeLocalizers(const topology::Topology& topo,
                                      const std::vector<std::string>& names);

}  // namespace netdiag::bench
