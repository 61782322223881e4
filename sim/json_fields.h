#pragma once

// Internal to sim/: the field checks shared by the truth and report parsers.
// Each failure throws FieldError whose message carries the path of the
// offending field ("faults[2].onset: missing (expected a number)");
// parseObject() catches it and hands the message back as the error.

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

namespace netdiag::sim::detail {

struct FieldError {
  std::string message;
};

// Throws FieldError{where + ": " + what}.
[[noreturn]] void fail(const std::string& where, const std::string& what);

// "where.key", or just "key" at the top level (empty `where`).
std::string field(const std::string& where, const char* key);

// The member `key` of `obj`, or nullptr when absent.
const nlohmann::json* find(const nlohmann::json& obj, const char* key);

std::string typeOf(const nlohmann::json& v);

double requireNumber(const nlohmann::json& obj, const char* key, const std::string& where);

// Absent or null gives nullopt. `required`: the key must be present, though
// it may be null.
std::optional<double> nullableNumber(const nlohmann::json& obj, const char* key,
                                     const std::string& where, bool required = false);

// Present, a string and not empty.
std::string requireString(const nlohmann::json& obj, const char* key, const std::string& where);

// Absent or null gives "".
std::string optionalString(const nlohmann::json& obj, const char* key, const std::string& where);

// Splits "X:p->Y:q" into its two port refs; nullopt when malformed.
std::optional<std::pair<std::string, std::string>> splitDirLink(std::string_view link);

// Fails at `where` unless `link` is a directed link X:p->Y:q.
void checkDirLink(const std::string& link, const std::string& where);

// Parses `text` as a JSON object (`what` names it in the error when it is
// not one: "truth", "report") and hands the root to `parse`. Invalid JSON or
// a FieldError thrown by `parse` sets `error` and gives nullopt.
template <class Parse>
auto parseObject(const std::string& text, const char* what, std::string& error, Parse parse)
    -> std::optional<std::invoke_result_t<Parse&, const nlohmann::json&>> {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    error = std::string("not valid JSON: ") + e.what();
    return std::nullopt;
  }
  try {
    if (!root.is_object()) fail(what, "expected a JSON object, got " + typeOf(root));
    return parse(std::as_const(root));
  } catch (const FieldError& e) {
    error = e.message;
    return std::nullopt;
  }
}

}  // namespace netdiag::sim::detail
