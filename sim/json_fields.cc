#include "sim/json_fields.h"

#include "topology/model.h"

namespace netdiag::sim::detail {

using nlohmann::json;

void fail(const std::string& where, const std::string& what) {
  throw FieldError{where + ": " + what};
}

std::string field(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

const json* find(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string typeOf(const json& v) { return v.type_name(); }

double requireNumber(const json& obj, const char* key, const std::string& where) {
  const json* v = find(obj, key);
  if (!v) fail(field(where, key), "missing (expected a number)");
  if (!v->is_number()) fail(field(where, key), "expected a number, got " + typeOf(*v));
  return v->get<double>();
}

std::optional<double> nullableNumber(const json& obj, const char* key, const std::string& where,
                                     bool required) {
  const json* v = find(obj, key);
  if (!v) {
    if (required) fail(field(where, key), "missing (expected a number or null)");
    return std::nullopt;
  }
  if (v->is_null()) return std::nullopt;
  if (!v->is_number()) fail(field(where, key), "expected a number or null, got " + typeOf(*v));
  return v->get<double>();
}

std::string requireString(const json& obj, const char* key, const std::string& where) {
  const json* v = find(obj, key);
  if (!v) fail(field(where, key), "missing (expected a string)");
  if (!v->is_string()) fail(field(where, key), "expected a string, got " + typeOf(*v));
  std::string s = v->get<std::string>();
  if (s.empty()) fail(field(where, key), "must not be empty");
  return s;
}

std::string optionalString(const json& obj, const char* key, const std::string& where) {
  const json* v = find(obj, key);
  if (!v || v->is_null()) return {};
  if (!v->is_string()) fail(field(where, key), "expected a string, got " + typeOf(*v));
  return v->get<std::string>();
}

std::optional<std::pair<std::string, std::string>> splitDirLink(std::string_view link) {
  auto arrow = link.find("->");
  if (arrow == std::string_view::npos || link.find("->", arrow + 2) != std::string_view::npos) {
    return std::nullopt;
  }
  auto src = link.substr(0, arrow);
  auto dst = link.substr(arrow + 2);
  if (!topology::splitPortRef(src) || !topology::splitPortRef(dst)) return std::nullopt;
  return std::make_pair(std::string(src), std::string(dst));
}

void checkDirLink(const std::string& link, const std::string& where) {
  if (!splitDirLink(link)) fail(where, "'" + link + "' is not a directed link X:p->Y:q");
}

}  // namespace netdiag::sim::detail
