#include "store/sqlite.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include <sqlite3.h>

namespace netdiag::store {
namespace {

std::string quote(std::string_view s) {
  std::string out = "'";
  out += s;
  out += '\'';
  return out;
}

std::string openError(const std::string& path, std::string_view what) {
  std::string msg = "cannot open database " + quote(path) + ": ";
  msg += what;
  // SQLite only says "unable to open database file"; name the likely cause.
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    msg += " (directory " + quote(parent.string()) + " does not exist)";
  }
  return msg;
}

std::string_view sqlPreview(std::string_view sql) {
  constexpr size_t kMaxPreview = 80;
  return sql.substr(0, kMaxPreview);
}

// Runs a pragma or query whose first column of the first row is text.
Result<std::string> queryText(Database& db, std::string_view sql) {
  auto stmt = db.prepare(sql);
  if (!stmt) return stmt.status();
  auto row = stmt->step();
  if (!row) return row.status();
  if (!*row) return std::string();
  return std::string(stmt->columnText(0));
}

}  // namespace

// ---- Database ----

Result<Database> Database::open(const std::string& path, const OpenOptions& options) {
  if (!options.create_if_missing && path != ":memory:") {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return Status::error("cannot open database " + quote(path) + ": no such file");
    }
  }
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_READWRITE | (options.create_if_missing ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  // Own the handle before checking rc: a failed open still allocates one.
  Database db(raw, path);
  if (rc != SQLITE_OK) {
    return Status::error(openError(path, raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_extended_result_codes(raw, 1);
  // Before the pragmas: switching to WAL itself needs a lock.
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);

  // synchronous=NORMAL is durable across process crashes in WAL mode and
  // only risks the last commits on power loss, which a monitor can afford.
  if (auto s = db.exec("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL"); !s) {
    return Status::error(openError(path, s.message()));
  }
  // Reads the header, so a file that is not a database fails here.
  auto mode = queryText(db, "PRAGMA journal_mode=WAL");
  if (!mode) return Status::error(openError(path, mode.message()));
  if (*mode != "wal" && path != ":memory:" && !path.empty()) {
    return Status::error(openError(path, "cannot enable WAL journal mode (got " + *mode + ")"));
  }
  // Parses the schema now, so a damaged schema page is an open error too.
  auto schema = queryText(db, "SELECT count(*) FROM sqlite_schema");
  if (!schema) return Status::error(openError(path, schema.message()));
  return db;
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    close();
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Database::~Database() { close(); }

void Database::close() {
  // close_v2 defers the close until any leaked statement is finalized
  // instead of failing with SQLITE_BUSY.
  if (db_ != nullptr) sqlite3_close_v2(db_);
  db_ = nullptr;
}

Status Database::exec(std::string_view sql) {
  std::string owned(sql);  // sqlite3_exec wants a NUL-terminated string
  char* err = nullptr;
  int rc = sqlite3_exec(db_, owned.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::ok();
  std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return Status::error(std::move(msg));
}

Result<Statement> Database::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    std::string msg = sqlite3_errmsg(db_);
    msg += " (preparing: ";
    msg += sqlPreview(sql);
    msg += ')';
    return Status::error(std::move(msg));
  }
  return Statement(stmt, db_);
}

int64_t Database::lastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

bool Database::inTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

// ---- Statement ----

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), db_(std::exchange(other.db_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Status Statement::bindStatus(int rc, int index) const {
  if (rc == SQLITE_OK) return Status::ok();
  return Status::error("cannot bind parameter " + std::to_string(index) + ": " +
                       sqlite3_errmsg(db_));
}

Status Statement::bindInt64(int index, int64_t value) {
  return bindStatus(sqlite3_bind_int64(stmt_, index, value), index);
}

Status Statement::bindDouble(int index, double value) {
  return bindStatus(sqlite3_bind_double(stmt_, index, value), index);
}

Status Statement::bindText(int index, std::string_view value) {
  return bindStatus(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
}

Status Statement::bindNull(int index) { return bindStatus(sqlite3_bind_null(stmt_, index), index); }

Result<bool> Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Status::error(sqlite3_errmsg(db_));
}

Status Statement::run() {
  auto row = step();
  if (!row) return row.status();
  return Status::ok();
}

void Statement::reset() { sqlite3_reset(stmt_); }

void Statement::clearBindings() { sqlite3_clear_bindings(stmt_); }

int Statement::columnCount() const { return sqlite3_column_count(stmt_); }

bool Statement::columnIsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::columnInt64(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::columnDouble(int column) const { return sqlite3_column_double(stmt_, column); }

std::string_view Statement::columnText(int column) const {
  // column_text before column_bytes: the conversion to text sets the length.
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return {};
  auto size = static_cast<size_t>(sqlite3_column_bytes(stmt_, column));
  return {reinterpret_cast<const char*>(text), size};
}

// ---- Transaction ----

Result<Transaction> Transaction::begin(Database& db, Mode mode) {
  auto s = db.exec(mode == Mode::kImmediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
  if (!s) return Status::error("cannot begin transaction: " + s.message());
  return Transaction(&db);
}

Transaction::Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

Transaction::~Transaction() {
  // SQLite may already have rolled back on its own (e.g. after SQLITE_FULL).
  if (db_ != nullptr && db_->inTransaction()) {
    (void)db_->exec("ROLLBACK");
  }
}

Status Transaction::commit() {
  if (db_ == nullptr) return Status::error("transaction already finished");
  auto s = db_->exec("COMMIT");
  if (s) {
    db_ = nullptr;
    return s;
  }
  // A failed COMMIT (e.g. SQLITE_BUSY) leaves the transaction open; the
  // destructor then rolls it back.
  return Status::error("cannot commit transaction: " + s.message());
}

}  // namespace netdiag::store
