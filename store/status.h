#pragma once

// Result types for the store's expected failures (missing directory, locked or
// corrupt database, schema from a newer netdiag). They carry a message meant
// for an operator instead of throwing, so callers decide how to report it.

#include <cassert>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace netdiag::store {

class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  static Status ok() { return {}; }
  static Status error(std::string message) {
    Status s;
    s.failed_ = true;
    s.message_ = std::move(message);
    return s;
  }

  bool isOk() const { return !failed_; }
  explicit operator bool() const { return isOk(); }
  // Empty on success.
  const std::string& message() const { return message_; }

 private:
  bool failed_ = false;
  std::string message_;
};

// A value or a failed Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  // Accepts anything T can be built from, so `return id;` works for
  // Result<std::optional<int64_t>>.
  template <typename U = T>
  requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::remove_cvref_t<U>, Status> &&
           !std::is_same_v<std::remove_cvref_t<U>, Result>) Result(U&& value)
      : value_(std::forward<U>(value)) {}            // NOLINT: implicit by design
  Result(Status error) : error_(std::move(error)) {  // NOLINT: implicit by design
    assert(!error_.isOk() && "a Result needs a value or a failed Status");
  }

  bool isOk() const { return value_.has_value(); }
  explicit operator bool() const { return isOk(); }

  T& value() & {
    assert(isOk());
    return *value_;
  }
  const T& value() const& {
    assert(isOk());
    return *value_;
  }
  T&& value() && {
    assert(isOk());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const std::string& message() const { return error_.message(); }
  Status status() const { return isOk() ? Status::ok() : error_; }

 private:
  std::optional<T> value_;
  Status error_;
};

}  // namespace netdiag::store
