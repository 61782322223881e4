#include "sim/truth.h"

#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "sim/json_fields.h"
#include "topology/model.h"

namespace netdiag::sim {
namespace {

using nlohmann::json;
using namespace detail;  // the shared field checks of json_fields.h

uint64_t optionalUnsigned(const json& obj, const char* key) {
  const json* v = find(obj, key);
  if (!v || v->is_null()) return 0;
  if (!v->is_number_unsigned()) {
    fail(key, "expected a non-negative integer, got " + (v->is_number() ? v->dump() : typeOf(*v)));
  }
  return v->get<uint64_t>();
}

TruthItem parseItem(const json& j, const std::string& where, bool fault) {
  if (!j.is_object()) fail(where, "expected an object, got " + typeOf(j));
  TruthItem item;
  item.id = requireString(j, "id", where);
  item.kind = requireString(j, "kind", where);
  item.link = optionalString(j, "link", where);
  item.node = optionalString(j, "node", where);
  item.cause = optionalString(j, "cause", where);
  item.note = optionalString(j, "note", where);
  if (const json* ports = find(j, "ports"); ports && !ports->is_null()) {
    if (!ports->is_array()) fail(where + ".ports", "expected an array, got " + typeOf(*ports));
    for (size_t i = 0; i < ports->size(); ++i) {
      const json& p = (*ports)[i];
      std::string pw = where + ".ports[" + std::to_string(i) + "]";
      if (!p.is_string()) fail(pw, "expected a port ref node:port, got " + typeOf(p));
      if (!topology::splitPortRef(p.get<std::string>())) {
        fail(pw, "'" + p.get<std::string>() + "' is not a port ref node:port");
      }
      item.ports.push_back(p.get<std::string>());
    }
  }
  item.onset = requireNumber(j, "onset", where);
  item.end = nullableNumber(j, "end", where);
  if (item.end && *item.end < item.onset) {
    fail(where + ".end", "ends (" + json(*item.end).dump() + ") before its onset (" +
                             json(item.onset).dump() + ")");
  }
  item.loss = nullableNumber(j, "loss", where).value_or(0);
  item.latency_us = nullableNumber(j, "latency_us", where).value_or(0);

  if (!item.link.empty()) checkDirLink(item.link, where + ".link");
  // What the scorer needs to match each kind must be there.
  if (fault) {
    if (!item.isLinkFault()) {
      fail(where + ".kind", "'" + item.kind + "' is not a link fault kind (link_*)");
    }
    if (item.link.empty()) fail(where + ".link", "missing (a fault names its directed link)");
  } else if (item.kind == "congestion" && item.link.empty()) {
    fail(where + ".link", "missing (a congestion trap names its directed link)");
  } else if (item.kind == "host_unreachable" && item.node.empty()) {
    fail(where + ".node", "missing (a host_unreachable trap names its node)");
  } else if (item.kind == "miscabling" && item.ports.empty()) {
    fail(where + ".ports", "missing or empty (a miscabling trap names its ports)");
  }
  return item;
}

std::vector<TruthItem> parseItems(const json& root, const char* key, bool fault,
                                  std::set<std::string>& ids) {
  const json* arr = find(root, key);
  if (!arr) fail(key, "missing (expected an array, possibly empty)");
  if (!arr->is_array()) fail(key, "expected an array, got " + typeOf(*arr));
  std::vector<TruthItem> items;
  for (size_t i = 0; i < arr->size(); ++i) {
    std::string where = std::string(key) + "[" + std::to_string(i) + "]";
    TruthItem item = parseItem((*arr)[i], where, fault);
    if (!ids.insert(item.id).second) fail(where + ".id", "duplicate id '" + item.id + "'");
    items.push_back(std::move(item));
  }
  return items;
}

json itemJson(const TruthItem& item) {
  json j = {{"id", item.id}, {"kind", item.kind}};
  if (!item.link.empty()) j["link"] = item.link;
  if (!item.node.empty()) j["node"] = item.node;
  if (!item.ports.empty()) j["ports"] = item.ports;
  if (!item.cause.empty()) j["cause"] = item.cause;
  j["onset"] = item.onset;
  j["end"] = item.end ? json(*item.end) : json(nullptr);
  if (item.loss != 0) j["loss"] = item.loss;
  if (item.latency_us != 0) j["latency_us"] = item.latency_us;
  if (!item.note.empty()) j["note"] = item.note;
  return j;
}

}  // namespace

std::string truthToJson(const Truth& truth) {
  json faults = json::array();
  for (const TruthItem& f : truth.faults) faults.push_back(itemJson(f));
  json traps = json::array();
  for (const TruthItem& t : truth.traps) traps.push_back(itemJson(t));
  json out = {{"seed", truth.seed},     {"ecmp_seed", truth.ecmp_seed},
              {"fabric", truth.fabric}, {"start", truth.start},
              {"end", truth.end},       {"faults", faults},
              {"traps", traps}};
  return out.dump(2) + "\n";
}

std::optional<Truth> truthFromJson(const std::string& text, std::string& error) {
  return parseObject(text, "truth", error, [](const json& root) {
    Truth truth;
    truth.seed = optionalUnsigned(root, "seed");
    truth.ecmp_seed = optionalUnsigned(root, "ecmp_seed");
    truth.fabric = optionalString(root, "fabric", "");
    truth.start = requireNumber(root, "start", "");
    truth.end = requireNumber(root, "end", "");
    if (truth.end < truth.start) fail("end", "before start");
    std::set<std::string> ids;
    truth.faults = parseItems(root, "faults", true, ids);
    truth.traps = parseItems(root, "traps", false, ids);
    return truth;
  });
}

}  // namespace netdiag::sim
