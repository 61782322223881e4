#include "store/incident_store.h"

#include <cmath>
#include <utility>

namespace netdiag::store {
namespace {

// Column order shared by the INSERT and every SELECT.
constexpr std::string_view kColumns =
    "id, kind, link, node, ports, opened_at, localized_at, resolved_at, confidence, loss_ratio, "
    "both_directions, report_json, updated_at, created_wall";

// created_wall records the first write, so an update keeps the stored value.
constexpr std::string_view kUpsertSql =
    "INSERT INTO incident (id, kind, link, node, ports, opened_at, localized_at, resolved_at, "
    "confidence, loss_ratio, both_directions, report_json, updated_at, created_wall) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
    "ON CONFLICT (id) DO UPDATE SET "
    "kind = excluded.kind, link = excluded.link, node = excluded.node, "
    "ports = excluded.ports, opened_at = excluded.opened_at, "
    "localized_at = excluded.localized_at, resolved_at = excluded.resolved_at, "
    "confidence = excluded.confidence, loss_ratio = excluded.loss_ratio, "
    "both_directions = excluded.both_directions, report_json = excluded.report_json, "
    "updated_at = excluded.updated_at, "
    "created_wall = coalesce(incident.created_wall, excluded.created_wall)";

std::string incidentName(const IncidentRow& row) {
  return row.id.empty() ? std::string("incident with an empty id") : "incident " + row.id;
}

// SQLite binds NaN as NULL, which would silently turn a number into "unknown"
// (or fail a NOT NULL constraint with a vague message), so say so up front.
Status checkNumber(const IncidentRow& row, std::string_view column, std::optional<double> v) {
  if (v.has_value() && std::isnan(*v)) {
    std::string msg = incidentName(row) + ": ";
    msg += column;
    msg += " is NaN";
    return Status::error(std::move(msg));
  }
  return Status::ok();
}

Status checkRow(const IncidentRow& row) {
  if (row.id.empty()) return Status::error(incidentName(row));
  if (row.kind.empty()) return Status::error(incidentName(row) + ": empty kind");
  if (row.report_json.empty()) return Status::error(incidentName(row) + ": empty report_json");
  const std::pair<std::string_view, std::optional<double>> numbers[] = {
      {"opened_at", row.opened_at},     {"localized_at", row.localized_at},
      {"resolved_at", row.resolved_at}, {"confidence", row.confidence},
      {"loss_ratio", row.loss_ratio},   {"updated_at", row.updated_at}};
  for (const auto& [column, value] : numbers) {
    if (auto s = checkNumber(row, column, value); !s) return s;
  }
  return Status::ok();
}

Status writeRows(Database& db, const std::vector<IncidentRow>& rows) {
  auto stmt = db.prepare(kUpsertSql);
  if (!stmt) return stmt.status();
  for (const IncidentRow& r : rows) {
    auto s = stmt->bindAll(r.id, r.kind, r.link, r.node, r.ports, r.opened_at, r.localized_at,
                           r.resolved_at, r.confidence, r.loss_ratio, r.both_directions,
                           r.report_json, r.updated_at, r.created_wall);
    if (s) s = stmt->run();
    stmt->reset();
    if (!s) return Status::error(incidentName(r) + ": " + s.message());
  }
  return Status::ok();
}

// Runs `body` in the caller's open transaction, or in a new one committed
// here.
template <typename Body>
Status runInTransaction(Database& db, Body&& body) {
  if (db.inTransaction()) return body();
  auto txn = Transaction::begin(db);
  if (!txn) return txn.status();
  if (auto s = body(); !s) return s;
  return txn->commit();
}

std::optional<std::string> optionalText(const Statement& stmt, int column) {
  if (stmt.columnIsNull(column)) return std::nullopt;
  return std::string(stmt.columnText(column));
}

std::optional<double> optionalDouble(const Statement& stmt, int column) {
  if (stmt.columnIsNull(column)) return std::nullopt;
  return stmt.columnDouble(column);
}

IncidentRow rowFrom(const Statement& stmt) {
  IncidentRow r;
  r.id = stmt.columnText(0);
  r.kind = stmt.columnText(1);
  r.link = optionalText(stmt, 2);
  r.node = optionalText(stmt, 3);
  r.ports = optionalText(stmt, 4);
  r.opened_at = stmt.columnDouble(5);
  r.localized_at = optionalDouble(stmt, 6);
  r.resolved_at = optionalDouble(stmt, 7);
  r.confidence = optionalDouble(stmt, 8);
  r.loss_ratio = optionalDouble(stmt, 9);
  r.both_directions = stmt.columnInt64(10) != 0;
  r.report_json = stmt.columnText(11);
  r.updated_at = stmt.columnDouble(12);
  if (!stmt.columnIsNull(13)) r.created_wall = stmt.columnInt64(13);
  return r;
}

Result<std::vector<IncidentRow>> readRows(Statement& stmt) {
  std::vector<IncidentRow> rows;
  for (;;) {
    auto row = stmt.step();
    if (!row) return row.status();
    if (!*row) break;
    rows.push_back(rowFrom(stmt));
  }
  return rows;
}

Status loadError(const Status& s) { return Status::error("load incidents: " + s.message()); }

}  // namespace

Status upsertIncidents(Database& db, const std::vector<IncidentRow>& rows) {
  if (rows.empty()) return Status::ok();
  for (const IncidentRow& r : rows) {
    if (auto s = checkRow(r); !s) return Status::error("save incidents: " + s.message());
  }
  auto s = runInTransaction(db, [&] { return writeRows(db, rows); });
  if (!s) return Status::error("save incidents: " + s.message());
  return s;
}

Result<std::vector<IncidentRow>> loadIncidents(Database& db, const IncidentQuery& query) {
  if (query.limit.has_value() && *query.limit < 0) {
    return Status::error("load incidents: negative limit " + std::to_string(*query.limit));
  }
  // The SQL is assembled from fixed fragments; every value is a bound
  // parameter. Writing `resolved_at IS NULL` literally (rather than as
  // `?1 = 0 OR ...`) lets SQLite use the partial index incident_open.
  std::string sql = "SELECT ";
  sql += kColumns;
  sql += " FROM incident WHERE 1";
  if (query.only_open) sql += " AND resolved_at IS NULL";
  if (query.kind) sql += " AND kind = ?";
  if (query.since) sql += " AND (opened_at >= ? OR resolved_at >= ?)";
  if (query.link) sql += query.link_exact ? " AND link = ?" : " AND instr(link, ?) > 0";
  sql += query.newest_first ? " ORDER BY opened_at DESC, id DESC" : " ORDER BY opened_at, id";
  if (query.limit) sql += " LIMIT ?";

  auto stmt = db.prepare(sql);
  if (!stmt) return loadError(stmt.status());
  int index = 0;
  Status s;
  if (s && query.kind) s = stmt->bindText(++index, *query.kind);
  if (s && query.since) s = stmt->bindDouble(++index, *query.since);
  if (s && query.since) s = stmt->bindDouble(++index, *query.since);
  if (s && query.link) s = stmt->bindText(++index, *query.link);
  if (s && query.limit) s = stmt->bindInt64(++index, *query.limit);
  if (!s) return loadError(s);
  auto rows = readRows(*stmt);
  if (!rows) return loadError(rows.status());
  return rows;
}

Result<std::optional<IncidentRow>> loadIncident(Database& db, std::string_view id) {
  std::string sql = "SELECT ";
  sql += kColumns;
  sql += " FROM incident WHERE id = ?1";
  auto stmt = db.prepare(sql);
  if (!stmt) return loadError(stmt.status());
  if (auto s = stmt->bindText(1, id); !s) return loadError(s);
  auto row = stmt->step();
  if (!row) return loadError(row.status());
  if (!*row) return std::optional<IncidentRow>();
  return std::optional<IncidentRow>(rowFrom(*stmt));
}

Status setState(Database& db, std::string_view key, std::string_view value) {
  auto s = runInTransaction(db, [&]() -> Status {
    auto stmt = db.prepare(
        "INSERT INTO analyzer_state (key, value) VALUES (?1, ?2) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    if (!stmt) return stmt.status();
    if (auto b = stmt->bindAll(key, value); !b) return b;
    return stmt->run();
  });
  if (!s) return Status::error("set analyzer state '" + std::string(key) + "': " + s.message());
  return s;
}

Result<std::optional<std::string>> getState(Database& db, std::string_view key) {
  auto fail = [&](const Status& s) {
    return Status::error("get analyzer state '" + std::string(key) + "': " + s.message());
  };
  auto stmt = db.prepare("SELECT value FROM analyzer_state WHERE key = ?1");
  if (!stmt) return fail(stmt.status());
  if (auto s = stmt->bindText(1, key); !s) return fail(s);
  auto row = stmt->step();
  if (!row) return fail(row.status());
  if (!*row) return std::optional<std::string>();
  return optionalText(*stmt, 0);
}

}  // namespace netdiag::store
