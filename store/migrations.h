#pragma once

// Forward-only schema migrations. The schema_version table records each
// applied migration; the current version is the highest one. Adding a table
// later means appending a Migration to the list in migrations.cc.

#include <span>
#include <string>
#include <string_view>

#include "store/sqlite.h"
#include "store/status.h"

namespace netdiag::store {

struct Migration {
  int version;  // strictly increasing, starting at 1
  std::string_view description;
  std::string_view sql;
};

// netdiag's migrations in order.
std::span<const Migration> migrations();
// The version a fully migrated database has.
int latestSchemaVersion();

// 0 for a database that has never been migrated.
Result<int> schemaVersion(Database& db);

// Applies every migration above the current version, each in its own
// transaction, so a failure leaves the database at the last good version.
// Refuses a database whose version is newer than the list knows (written by
// a newer netdiag) and a non-empty database without schema_version.
// Safe to run concurrently from several processes.
Status migrate(Database& db);
// The same with an explicit list, for tests.
Status migrate(Database& db, std::span<const Migration> list);

// Open then migrate: what the daemon and the CLI do at start.
Result<Database> openAndMigrate(const std::string& path, const OpenOptions& options = {});

}  // namespace netdiag::store
