#include "store/migrations.h"

#include <array>

namespace netdiag::store {
namespace {

// Topology snapshots: one row per saved fabric, its graph in three tables
// keyed by (snapshot_id, dense id) so a load rebuilds identical ids.
// Only snapshot_id is a foreign key: the ids inside a snapshot are written in
// one transaction and checked on load, and per-row foreign keys between
// nodes, ports and links would need extra indexes to keep a cascading delete
// of a 400k-port snapshot from scanning the tables once per row.
constexpr std::string_view kTopologySnapshotsSql = R"sql(
CREATE TABLE topology_snapshot (
  id          INTEGER PRIMARY KEY,
  label       TEXT    NOT NULL,
  name        TEXT    NOT NULL,
  created_at  INTEGER NOT NULL,  -- Unix time, milliseconds, UTC
  node_count  INTEGER NOT NULL,
  port_count  INTEGER NOT NULL,
  link_count  INTEGER NOT NULL
);
CREATE TABLE topology_node (
  snapshot_id INTEGER NOT NULL REFERENCES topology_snapshot(id) ON DELETE CASCADE,
  node_id     INTEGER NOT NULL,
  name        TEXT    NOT NULL,
  role        TEXT    NOT NULL,  -- canonical role word, 'other' for unknown ones
  role_name   TEXT    NOT NULL,  -- as written in the topology file
  pod         INTEGER,
  addr        TEXT    NOT NULL,
  line        INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id, node_id)
) WITHOUT ROWID;
CREATE TABLE topology_port (
  snapshot_id INTEGER NOT NULL REFERENCES topology_snapshot(id) ON DELETE CASCADE,
  port_id     INTEGER NOT NULL,
  node_id     INTEGER NOT NULL,
  name        TEXT    NOT NULL,
  addr        TEXT    NOT NULL,
  PRIMARY KEY (snapshot_id, port_id)
) WITHOUT ROWID;
CREATE TABLE topology_link (
  snapshot_id INTEGER NOT NULL REFERENCES topology_snapshot(id) ON DELETE CASCADE,
  link_id     INTEGER NOT NULL,
  a_port      INTEGER NOT NULL,
  b_port      INTEGER NOT NULL,
  speed_gbps  REAL    NOT NULL,
  line        INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id, link_id)
) WITHOUT ROWID;
)sql";

// Incidents: one row per analyzer incident, updated in place as it moves from
// open to localized to resolved. The columns repeat the fields queries filter
// on; report_json is the whole incident as formats.md §3 writes it and is
// what readers print. Times are telemetry times (the `t` of the newest record
// ingested), except created_wall, the wall clock when the row was first
// written. analyzer_state holds what a restarted analyzer needs to carry on
// (its next incident number, the newest telemetry time it saw).
constexpr std::string_view kIncidentsSql = R"sql(
CREATE TABLE incident (
  id              TEXT    PRIMARY KEY,  -- "inc-<n>"
  kind            TEXT    NOT NULL,
  link            TEXT,                 -- directed link "X:p->Y:q"
  node            TEXT,                 -- host_unreachable
  ports           TEXT,                 -- JSON array of "node:port" (miscabling)
  opened_at       REAL    NOT NULL,
  localized_at    REAL,
  resolved_at     REAL,
  confidence      REAL,
  loss_ratio      REAL,
  both_directions INTEGER NOT NULL DEFAULT 0 CHECK (both_directions IN (0, 1)),
  report_json     TEXT    NOT NULL,
  updated_at      REAL    NOT NULL,     -- telemetry time of the last change
  created_wall    INTEGER               -- Unix time, milliseconds, UTC
);
CREATE INDEX incident_open ON incident (opened_at, id) WHERE resolved_at IS NULL;
CREATE INDEX incident_link ON incident (link, opened_at);
CREATE INDEX incident_opened ON incident (opened_at, id);
CREATE TABLE analyzer_state (
  key   TEXT PRIMARY KEY,
  value TEXT
) WITHOUT ROWID;
)sql";

// Every drain decision and action of the analyzer's drain policy, in the
// order they happened (store/drain_store.h): the audit, and what a
// restarted analyzer rebuilds its drained links from.
constexpr std::string_view kDrainEventsSql = R"sql(
CREATE TABLE drain_event (
  seq       INTEGER PRIMARY KEY AUTOINCREMENT,
  at        REAL    NOT NULL,  -- the analyzer's wall clock, Unix seconds
  link      TEXT    NOT NULL,  -- "X:p->Y:q", the link's first direction
  event     TEXT    NOT NULL,  -- issued, done, failed, restoring, restored, ...
  port      TEXT,              -- the port acted on, "node:port"
  incident  TEXT,              -- "inc-<n>"
  actor     TEXT,              -- "policy auto", "operator <name>"
  nonce     TEXT,              -- the action's
  detail    TEXT               -- JSON: the decision's checks, or the switch's reason
);
CREATE INDEX drain_event_link ON drain_event (link, seq);
)sql";

constexpr std::array kMigrations = {
    Migration{1, "topology snapshots", kTopologySnapshotsSql},
    Migration{2, "incidents and analyzer state", kIncidentsSql},
    Migration{3, "drain audit", kDrainEventsSql},
};

constexpr std::string_view kCreateVersionTableSql = R"sql(
CREATE TABLE IF NOT EXISTS schema_version (
  version     INTEGER PRIMARY KEY,
  description TEXT    NOT NULL,
  applied_at  TEXT    NOT NULL
))sql";

std::string migrationName(const Migration& m) {
  return "migration " + std::to_string(m.version) + " (" + std::string(m.description) + ")";
}

Result<bool> hasTable(Database& db, std::string_view table) {
  auto stmt = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1");
  if (!stmt) return stmt.status();
  if (auto s = stmt->bindText(1, table); !s) return s;
  return stmt->step();
}

Status applyOne(Database& db, const Migration& m) {
  auto txn = Transaction::begin(db);
  if (!txn) return Status::error(migrationName(m) + ": " + txn.message());
  // Another process may have applied it while we waited for the lock.
  auto current = schemaVersion(db);
  if (!current) return Status::error(migrationName(m) + ": " + current.message());
  if (*current >= m.version) return Status::ok();

  if (auto s = db.exec(m.sql); !s)
    return Status::error(migrationName(m) + " failed: " + s.message());
  auto insert = db.prepare(
      "INSERT INTO schema_version (version, description, applied_at) "
      "VALUES (?1, ?2, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))");
  if (!insert) return Status::error(migrationName(m) + ": " + insert.message());
  if (auto s = insert->bindInt64(1, m.version); !s) return s;
  if (auto s = insert->bindText(2, m.description); !s) return s;
  if (auto s = insert->run(); !s) return Status::error(migrationName(m) + ": " + s.message());
  if (auto s = txn->commit(); !s) return Status::error(migrationName(m) + ": " + s.message());
  return Status::ok();
}

// Creates schema_version in a fresh database. In one write transaction so two
// processes migrating a new file at once do not take each other's tables for
// a foreign database.
Status ensureVersionTable(Database& db) {
  // Checked first without a lock: the common case is an existing database.
  auto present = hasTable(db, "schema_version");
  if (!present) return present.status();
  if (*present) return Status::ok();

  auto txn = Transaction::begin(db);
  if (!txn) return txn.status();
  present = hasTable(db, "schema_version");
  if (!present) return present.status();
  if (*present) return Status::ok();
  // Refuse to add our tables to some other program's database.
  auto stmt = db.prepare("SELECT count(*) FROM sqlite_schema");
  if (!stmt) return stmt.status();
  auto row = stmt->step();
  if (!row) return row.status();
  if (stmt->columnInt64(0) > 0) {
    return Status::error("it has tables but no schema_version: not a netdiag database");
  }
  if (auto s = db.exec(kCreateVersionTableSql); !s) {
    return Status::error("cannot create schema_version: " + s.message());
  }
  return txn->commit();
}

}  // namespace

std::span<const Migration> migrations() { return kMigrations; }

int latestSchemaVersion() { return kMigrations.back().version; }

Result<int> schemaVersion(Database& db) {
  auto present = hasTable(db, "schema_version");
  if (!present) return present.status();
  if (!*present) return 0;
  auto stmt = db.prepare("SELECT coalesce(max(version), 0) FROM schema_version");
  if (!stmt) return stmt.status();
  auto row = stmt->step();
  if (!row) return row.status();
  return static_cast<int>(stmt->columnInt64(0));
}

Status migrate(Database& db) { return migrate(db, migrations()); }

Status migrate(Database& db, std::span<const Migration> list) {
  for (size_t i = 1; i < list.size(); ++i) {
    if (list[i].version <= list[i - 1].version) {
      return Status::error("migration list out of order at version " +
                           std::to_string(list[i].version));
    }
  }
  const std::string where = "database '" + db.path() + "'";
  if (auto s = ensureVersionTable(db); !s) return Status::error(where + ": " + s.message());
  auto current = schemaVersion(db);
  if (!current) return Status::error(where + ": " + current.message());
  const int known = list.empty() ? 0 : list.back().version;
  if (*current > known) {
    return Status::error(where + " has schema version " + std::to_string(*current) +
                         ", newer than the " + std::to_string(known) +
                         " this netdiag knows; upgrade netdiag to use it");
  }
  for (const Migration& m : list) {
    if (m.version <= *current) continue;
    if (auto s = applyOne(db, m); !s) return Status::error(where + ": " + s.message());
  }
  return Status::ok();
}

Result<Database> openAndMigrate(const std::string& path, const OpenOptions& options) {
  auto db = Database::open(path, options);
  if (!db) return db.status();
  if (auto s = migrate(*db); !s) return s;
  return std::move(db).value();
}

}  // namespace netdiag::store
