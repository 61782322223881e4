#pragma once

// Incidents in SQLite, so a restarted analyzer keeps its incidents and
// `netdiag locate --db` / `netdiag incidents` can read them offline.
//
// The store knows nothing of the analyzer (the analyzer depends on the store,
// not the other way round): it works with IncidentRow, which mirrors the
// `incident` table, and with the incident as JSON text (formats.md §3). The
// analyzer converts its Incident to a row; readers print report_json.
//
// JSON is not parsed here. report_json and ports are stored and returned
// byte for byte as given, so a bad blob never costs an incident's state
// columns, and the store needs no JSON library. Readers must parse and report
// bad rows themselves. upsertIncidents only rejects what is certainly a bug:
// an empty id, kind or report_json, a NaN time or number.
//
// The database must have been migrated (see migrations.h).
//
// Thread-safety: as for Database, one thread per connection. Several
// processes may use the same file: writes take the write lock (waiting up to
// the busy timeout), and readers in other processes see only committed rows.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/sqlite.h"
#include "store/status.h"

namespace netdiag::store {

// One row of the `incident` table. Times are telemetry times (seconds, the
// `t` of the telemetry records) except created_wall.
struct IncidentRow {
  std::string id;                    // "inc-<n>", the primary key; not empty
  std::string kind;                  // "link_loss", "host_unreachable", ...; not empty
  std::optional<std::string> link;   // directed link "X:p->Y:q", for link kinds
  std::optional<std::string> node;   // for host_unreachable
  std::optional<std::string> ports;  // JSON array text, for miscabling
  double opened_at = 0;
  std::optional<double> localized_at;
  std::optional<double> resolved_at;  // nullopt while open
  std::optional<double> confidence;
  std::optional<double> loss_ratio;
  bool both_directions = false;
  std::string report_json;  // the whole incident as formats.md §3's object; not empty
  double updated_at = 0;    // telemetry time of the last change
  // Wall clock (Unix ms) when the row was first written. Set once: an update
  // keeps the stored value and only fills it in when it was NULL. The store
  // never reads the clock itself.
  std::optional<int64_t> created_wall;

  bool isOpen() const { return !resolved_at.has_value(); }
  bool operator==(const IncidentRow&) const = default;
};

// Filters for loadIncidents; the default returns every incident. Filters
// combine with AND.
struct IncidentQuery {
  bool only_open = false;           // resolved_at IS NULL
  std::optional<std::string> kind;  // exact kind
  // Incidents that opened or resolved at or after this telemetry time
  // (opened_at >= since OR resolved_at >= since). An incident opened earlier
  // and still open does not match; combine with a second, only_open query
  // for "active since".
  std::optional<double> since;
  // Rows whose link contains this text (case-sensitive, no wildcards), or
  // equals it when link_exact. Never matches rows without a link.
  std::optional<std::string> link;
  bool link_exact = false;
  // Ordered by (opened_at, id); newest_first reverses it, which with limit
  // gives the latest incidents.
  bool newest_first = false;
  std::optional<int64_t> limit;  // at most this many rows; negative is an error
};

// Inserts each row or, when its id exists, replaces every column with the
// row's (created_wall excepted, see above). All rows or none: the rows are
// checked before anything is written and the writes share one transaction.
// When the caller already has a transaction open on db the writes join it
// instead, so incidents and analyzer state can be committed together; on an
// error the caller must then not commit. Rows with the same id in one call:
// the last wins. An empty list writes nothing.
Status upsertIncidents(Database& db, const std::vector<IncidentRow>& rows);

Result<std::vector<IncidentRow>> loadIncidents(Database& db, const IncidentQuery& query = {});

// One incident by id, nullopt when there is none.
Result<std::optional<IncidentRow>> loadIncident(Database& db, std::string_view id);

// The analyzer's key/value state. Values are opaque text; the well-known keys
// below are the analyzer's. setState inserts or replaces and, like
// upsertIncidents, joins an open transaction.
inline constexpr std::string_view kStateNextIncidentNumber = "next_incident_number";
inline constexpr std::string_view kStateLastTelemetryTime = "last_telemetry_time";

Status setState(Database& db, std::string_view key, std::string_view value);
// nullopt when the key is absent (or its value NULL).
Result<std::optional<std::string>> getState(Database& db, std::string_view key);

}  // namespace netdiag::store
