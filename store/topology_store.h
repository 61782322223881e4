#pragma once

// Topology snapshots in SQLite: the fabric the analyzer ran against, kept so
// incidents can be replayed and `netdiag locate --db` can work without the
// original file. A load rebuilds the same ids, so stored directed-link ids
// stay meaningful. The database must have been migrated (see migrations.h).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/sqlite.h"
#include "store/status.h"
#include "topology/model.h"

namespace netdiag::store {

struct SnapshotInfo {
  int64_t id = 0;
  std::string label;
  std::string name;                                  // Topology::name
  std::chrono::system_clock::time_point created_at;  // millisecond precision
  int64_t node_count = 0;
  int64_t port_count = 0;
  int64_t link_count = 0;
};

// Saves the whole graph in one transaction; returns the new snapshot's id.
// created_at is a parameter so tests and replays can fix the clock.
Result<int64_t> saveTopology(
    Database& db, const topology::Topology& topo, std::string_view label,
    std::chrono::system_clock::time_point created_at = std::chrono::system_clock::now());

// Rebuilds a finalized Topology with the ids, names, roles, pods, addresses,
// speeds and source lines it was saved with. Fails on an unknown id or on
// rows that do not form a valid graph.
Result<topology::Topology> loadTopology(Database& db, int64_t snapshot_id);

// The most recently saved snapshot, nullopt when there is none.
Result<std::optional<int64_t>> latestTopologySnapshot(Database& db);

// All snapshots, oldest first.
Result<std::vector<SnapshotInfo>> listTopologySnapshots(Database& db);

}  // namespace netdiag::store
