#pragma once

// The drain audit in SQLite (table drain_event, migration 3): every
// decision and action of the analyzer's drain policy, appended in order,
// never rewritten. `netdiag drain list` shows the latest; a restarted
// analyzer rebuilds the links it holds drained from them.
//
// Thread-safety: as for Database, one thread per connection.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/sqlite.h"
#include "store/status.h"

namespace netdiag::store {

struct DrainEvent {
  int64_t seq = 0;    // set by the store
  double at = 0;      // the analyzer's wall clock, Unix seconds
  std::string link;   // "X:p->Y:q"; not empty
  std::string event;  // "issued", "done", ...; not empty
  std::string port, incident, actor, nonce;
  std::string detail;  // JSON text, or empty

  bool operator==(const DrainEvent&) const = default;
};

// Appends `e` (its seq is ignored). Refuses an empty link or event, a NaN time.
Status appendDrainEvent(Database& db, const DrainEvent& e);

// The events after `after_seq` in order, at most `limit` (0: all); with
// newest_first the latest `limit` events, newest first.
Result<std::vector<DrainEvent>> loadDrainEvents(Database& db, int64_t after_seq = 0,
                                                int64_t limit = 0, bool newest_first = false);

}  // namespace netdiag::store
