#include "cli/incident_source.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>

#include <httplib.h>
#include <unistd.h>

#include "analyzer/incident.h"
#include "store/migrations.h"

namespace netdiag::cli {

using nlohmann::json;

namespace {

std::optional<json> getOne(const std::string& base_url, const std::string& path, std::string* error,
                           int* status, bool* answered) {
  *answered = false;
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0) base = "http://" + base;
  const std::string url = base + path;
  httplib::Client client(base);
  if (!client.is_valid()) {
    *error = "bad analyzer URL " + base_url;
    return std::nullopt;
  }
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(30, 0);
  auto res = client.Get(path.c_str());
  if (!res) {
    *error = "cannot reach " + url + " (" + httplib::to_string(res.error()) +
             " error): is the analyzer running there?";
    return std::nullopt;
  }
  *answered = true;
  if (status) *status = res->status;
  json body = json::parse(res->body, nullptr, false);
  if (res->status != 200) {
    std::string why = body.is_object() && body.contains("error") && body["error"].is_string()
                          ? body["error"].get<std::string>()
                          : res->body.substr(0, 200);
    *error =
        url + " answered HTTP " + std::to_string(res->status) + (why.empty() ? "" : ": " + why);
    return std::nullopt;
  }
  if (body.is_discarded()) {
    *error = url + " answered something that is not JSON";
    return std::nullopt;
  }
  return body;
}

}  // namespace

std::optional<json> httpGetJson(const std::string& base_urls, const std::string& path,
                                std::string* error, int* status) {
  if (status) *status = 0;
  // A replica pair (docs/operations.md) is interchangeable: the first that
  // answers at all is the answer, its errors included.
  std::string failures;
  size_t from = 0;
  for (;;) {
    const size_t comma = base_urls.find(',', from);
    const std::string url =
        base_urls.substr(from, comma == std::string::npos ? comma : comma - from);
    bool answered = false;
    if (!url.empty()) {
      auto body = getOne(url, path, error, status, &answered);
      if (answered) return body;
      failures += (failures.empty() ? "" : "; ") + *error;
    }
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  *error = failures.empty() ? "no analyzer URL given" : failures;
  return std::nullopt;
}

std::optional<IncidentSet> reportFromJson(const json& j, std::string* error) {
  if (!j.is_object() || !j.contains("incidents") || !j["incidents"].is_array()) {
    *error = "not an incident report (formats.md §3): no \"incidents\" array";
    return std::nullopt;
  }
  IncidentSet set;
  if (j.contains("generated_at") && j["generated_at"].is_number()) {
    set.generated_at = j["generated_at"].get<double>();
  }
  for (const json& i : j["incidents"]) {
    if (!i.is_object() || !i.contains("id") || !i["id"].is_string() || !i.contains("kind") ||
        !i["kind"].is_string()) {
      *error = "an incident without a string id and kind: " + i.dump().substr(0, 120);
      return std::nullopt;
    }
    set.incidents.push_back(i);
  }
  return set;
}

drain::Context drainContextOf(const topology::Topology& topo, const std::vector<json>& incidents) {
  drain::Context context(topo);
  for (const json& i : incidents) {
    if (!i.is_object() || !i.contains("link") || !i["link"].is_string()) continue;
    const auto kind = analyzer::parseKind(i.value("kind", ""));
    if (!drain::takesLinkOut(kind, isLocalized(i), !isOpen(i))) continue;
    if (auto d = topo.findDirLink(i["link"].get<std::string>())) {
      context.takeOut(topology::Topology::linkOf(*d), drain::OutReason::kReportedDown);
    }
  }
  return context;
}

std::optional<IncidentSet> loadFromDb(const std::string& file, const store::IncidentQuery& query,
                                      std::string* error, std::vector<std::string>* problems) {
  auto db = store::openAndMigrate(file, {.create_if_missing = false});
  if (!db) {
    *error = db.message();
    return std::nullopt;
  }
  auto rows = store::loadIncidents(*db, query);
  if (!rows) {
    *error = file + ": " + rows.message();
    return std::nullopt;
  }
  IncidentSet set;
  // The newest decision stored stands in for "now" on the telemetry clock.
  auto last = store::getState(*db, store::kStateLastTelemetryTime);
  if (last && *last) set.generated_at = std::strtod((*last)->c_str(), nullptr);
  for (const auto& row : *rows) {
    set.generated_at = std::max(set.generated_at, row.updated_at);
    json j = json::parse(row.report_json, nullptr, false);
    if (!j.is_object()) {
      problems->push_back(file + ": incident " + row.id + " has unreadable JSON; skipped");
      continue;
    }
    set.incidents.push_back(std::move(j));
  }
  return set;
}

std::optional<json> loadOneFromDb(const std::string& file, const std::string& id,
                                  std::string* error) {
  auto db = store::openAndMigrate(file, {.create_if_missing = false});
  if (!db) {
    *error = db.message();
    return std::nullopt;
  }
  auto row = store::loadIncident(*db, id);
  if (!row) {
    *error = file + ": " + row.message();
    return std::nullopt;
  }
  if (!*row) {
    *error = file + ": no incident " + id;
    return std::nullopt;
  }
  json j = json::parse((*row)->report_json, nullptr, false);
  if (!j.is_object()) {
    *error = file + ": incident " + id + " has unreadable JSON";
    return std::nullopt;
  }
  return j;
}

std::optional<double> parseSince(const std::string& text, double now) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v) || v < 0) return std::nullopt;
  const std::string unit(end);
  if (unit.empty()) return v;
  static const std::map<std::string, double> kUnits = {
      {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
  auto it = kUnits.find(unit);
  if (it == kUnits.end()) return std::nullopt;
  return now - v * it->second;
}

bool isOpen(const json& i) { return !i.contains("resolved_at") || i["resolved_at"].is_null(); }
bool isLocalized(const json& i) {
  return i.contains("localized_at") && i["localized_at"].is_number();
}

namespace {

std::string str(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}
double num(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

int kindRank(const std::string& kind) {
  static const std::vector<std::string> order = {
      "host_unreachable", "link_down",  "link_blackhole", "link_flap", "link_loss",
      "link_corruption",  "miscabling", "link_latency",   "congestion"};
  auto it = std::find(order.begin(), order.end(), kind);
  return static_cast<int>(it - order.begin());
}

}  // namespace

std::string severityOf(const json& i) {
  const std::string kind = str(i, "kind");
  if (!isLocalized(i) || !isOpen(i)) return "warning";
  if (kind == "congestion" || kind == "link_latency" || kind == "miscabling" ||
      kind == "link_down") {
    return "warning";
  }
  return "critical";
}

void sortBySeverity(std::vector<json>& incidents) {
  std::stable_sort(incidents.begin(), incidents.end(), [](const json& a, const json& b) {
    auto key = [](const json& i) {
      return std::make_tuple(severityOf(i) == "critical" ? 0 : 1, isLocalized(i) ? 0 : 1,
                             kindRank(str(i, "kind")), -num(i, "loss_ratio"));
    };
    return key(a) < key(b);
  });
}

std::string whereInWords(const json& i) {
  if (i.contains("link") && i["link"].is_string()) {
    std::string link = i["link"];
    size_t arrow = link.find("->");
    if (arrow == std::string::npos) return link;
    const bool both = i.contains("both_directions") && i["both_directions"] == true;
    return link.substr(0, arrow) + (both ? " <-> " : " -> ") + link.substr(arrow + 2);
  }
  if (i.contains("node") && i["node"].is_string()) return "host " + i["node"].get<std::string>();
  if (i.contains("ports") && i["ports"].is_array()) {
    std::string out = "ports ";
    for (size_t k = 0; k < i["ports"].size(); ++k) {
      if (k) out += ", ";
      out += i["ports"][k].is_string() ? i["ports"][k].get<std::string>() : "?";
    }
    return out;
  }
  return "-";
}

std::string evidenceLine(const json& i) {
  if (!i.contains("evidence") || !i["evidence"].is_object()) return "-";
  const json& ev = i["evidence"];
  std::string line = str(ev, "summary");
  if (line.empty()) line = str(ev, "method");
  if (line.empty()) return "-";
  std::replace(line.begin(), line.end(), '\n', ' ');
  return line;
}

std::string candidatesLine(const json& i) {
  auto it = i.find("candidates");
  if (it == i.end() || !it->is_array()) return "";
  std::string out;
  for (const json& c : *it) {
    if (!c.is_object()) continue;
    std::string one = c.contains("link") && c["link"].is_string() ? c["link"].get<std::string>()
                      : c.contains("node") && c["node"].is_string()
                          ? "host " + c["node"].get<std::string>()
                          : "";
    if (one.empty()) continue;
    out += (out.empty() ? "" : ", ") + one;
  }
  return out;
}

std::string clockText(double t) {
  char buf[48];
  if (t >= 1e9 && t < 1e11) {
    std::time_t secs = static_cast<std::time_t>(t);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  } else {
    std::snprintf(buf, sizeof buf, "t=%.1f", t);
  }
  return buf;
}

std::string durationText(double s) {
  if (!std::isfinite(s) || s < 0) return "-";
  // Times from a hostile log can be any double; llround beyond long long is
  // unspecified. A thousand years is "long" enough.
  if (s >= 3.2e10) return ">1000y";
  auto v = static_cast<long long>(std::llround(s));
  char buf[48];
  if (v < 60) {
    std::snprintf(buf, sizeof buf, "%llds", v);
  } else if (v < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", v / 60, v % 60);
  } else if (v < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", v / 3600, (v % 3600) / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", v / 86400, (v % 86400) / 3600);
  }
  return buf;
}

std::string numberOr(const json& j, const char* key, const char* fallback, int precision) {
  if (!j.contains(key) || !j[key].is_number()) return fallback;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", precision, j[key].get<double>());
  return buf;
}

bool useColour() {
  const char* no = std::getenv("NO_COLOR");
  return ::isatty(STDOUT_FILENO) && (no == nullptr || *no == '\0');
}

std::string paint(const std::string& text, const char* ansi, bool colour) {
  return colour ? std::string("\033[") + ansi + "m" + text + "\033[0m" : text;
}

}  // namespace netdiag::cli
