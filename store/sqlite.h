#pragma once

// A thin RAII layer over the sqlite3 C API: owning handles, Status instead of
// return codes, and the connection settings every netdiag process must agree
// on (WAL, foreign keys, busy timeout) applied in one place.
//
// Thread-safety: a Database and its Statements belong to one thread at a
// time. Several processes (the analyzer daemon and `netdiag locate --db`) may
// open the same file: WAL lets readers run beside one writer, and the busy
// timeout makes a second writer wait instead of failing at once.

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "store/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace netdiag::store {

class Statement;

struct OpenOptions {
  // How long a connection waits for another process's write lock.
  int busy_timeout_ms = 5000;
  // False for readers such as the CLI, so a mistyped --db path is an error
  // rather than a new empty database.
  bool create_if_missing = true;
};

class Database {
 public:
  // Opens (or creates) the file and applies the shared connection settings.
  // Errors name the path and carry SQLite's message; a file that is not a
  // SQLite database is rejected here, not at first use.
  static Result<Database> open(const std::string& path, const OpenOptions& options = {});

  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Runs one or more ';'-separated statements that return no needed rows.
  Status exec(std::string_view sql);
  Result<Statement> prepare(std::string_view sql);

  int64_t lastInsertRowId() const;
  bool inTransaction() const;
  const std::string& path() const { return path_; }
  // For the odd call this wrapper does not cover.
  sqlite3* handle() { return db_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  void close();

  sqlite3* db_ = nullptr;
  std::string path_;
};

// A prepared statement, reused across rows with reset() and new binds.
// Bind and column indexes follow SQLite: binds count from 1, columns from 0.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Distinct names rather than overloads: bind(i, 3) would otherwise be
  // ambiguous between the integer and the double form.
  Status bindInt64(int index, int64_t value);
  Status bindDouble(int index, double value);
  // The text is copied, so the caller's buffer may go away before step().
  Status bindText(int index, std::string_view value);
  Status bindNull(int index);
  // Binds values to parameters 1..N in order: integers, floating point,
  // text (anything convertible to string_view) and std::optional of those,
  // where nullopt binds NULL. Stops at the first failure.
  template <typename... Values>
  Status bindAll(const Values&... values) {
    Status status;
    int index = 0;
    ((status = status ? bindValue(++index, values) : status), ...);
    return status;
  }

  // True when a row is ready to read, false when the statement is done.
  Result<bool> step();
  // step() for statements that return no rows (INSERT, UPDATE, ...).
  Status run();
  // Makes the statement runnable again; binds are kept until rebound.
  // Errors of the last step were already reported by step() itself.
  void reset();
  void clearBindings();

  int columnCount() const;
  bool columnIsNull(int column) const;
  int64_t columnInt64(int column) const;
  double columnDouble(int column) const;
  // Valid until the next step(), reset() or destruction.
  std::string_view columnText(int column) const;

 private:
  friend class Database;
  Statement(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  Status bindStatus(int rc, int index) const;
  template <typename V>
  Status bindValue(int index, const V& value) {
    if constexpr (std::is_integral_v<V>) {
      return bindInt64(index, static_cast<int64_t>(value));
    } else if constexpr (std::is_floating_point_v<V>) {
      return bindDouble(index, static_cast<double>(value));
    } else if constexpr (requires { value.has_value(); }) {
      return value.has_value() ? bindValue(index, *value) : bindNull(index);
    } else {
      return bindText(index, std::string_view(value));
    }
  }

  sqlite3_stmt* stmt_ = nullptr;
  sqlite3* db_ = nullptr;
};

// Rolls back on destruction unless commit() succeeded, so an early return on
// error never leaves half a snapshot behind. Not nestable.
class Transaction {
 public:
  enum class Mode {
    kDeferred,
    // Takes the write lock at BEGIN, where the busy timeout applies. A
    // deferred transaction that later writes can fail with SQLITE_BUSY
    // without waiting if another process wrote in between.
    kImmediate,
  };

  static Result<Transaction> begin(Database& db, Mode mode = Mode::kImmediate);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  Status commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_ = nullptr;  // null once committed or rolled back
};

}  // namespace netdiag::store
