#pragma once

// Incidents to and from the SQLite store (store/incident_store.h), so that a
// restarted analyzer keeps them and `netdiag locate --db` can read them.

#include <string>
#include <vector>

#include "analyzer/incident.h"
#include "store/incident_store.h"
#include "topology/model.h"

namespace netdiag::analyzer {

store::IncidentRow toRow(const topology::Topology& topo, const Incident& incident,
                         double updated_at);
// Rows whose names the topology no longer has are skipped with a message in
// `problems` (the fabric changed since they were written).
std::vector<Incident> fromRows(const topology::Topology& topo,
                               const std::vector<store::IncidentRow>& rows,
                               std::vector<std::string>& problems);

}  // namespace netdiag::analyzer
