// `netdiag incidents`: the incident history (resolved ones too), from a
// running analyzer (GET /api/v1/incidents) or its database offline. A table
// or, with --json, the formats.md §3 report. Exit 0, or 2 on error.

#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/incident_source.h"

namespace netdiag::cli {
namespace {

using nlohmann::json;

struct IncidentsOptions {
  std::string analyzer;
  std::string db;
  bool json = false;
  bool open = false;
  std::string since;
  std::string kind;
  int64_t limit = 0;
};

std::string timeOr(const json& i, const char* key) { return numberOr(i, key, "-", 1); }

int runIncidents(const IncidentsOptions& o) {
  if (o.analyzer.empty() == o.db.empty()) {
    std::cerr << "netdiag incidents: give exactly one of --analyzer URL or --db FILE\n";
    return kExitError;
  }
  std::string error;
  std::optional<IncidentSet> set;
  if (!o.analyzer.empty()) {
    std::string path = "/api/v1/incidents?state=" + std::string(o.open ? "open" : "all");
    if (!o.kind.empty()) path += "&kind=" + o.kind;
    auto body = httpGetJson(o.analyzer, path, &error);
    if (body) set = reportFromJson(*body, &error);
  } else {
    store::IncidentQuery q;
    q.only_open = o.open;
    std::vector<std::string> problems;
    set = loadFromDb(o.db, q, &error, &problems);
    for (const auto& p : problems) std::cerr << "netdiag incidents: " << p << '\n';
  }
  if (!set) {
    std::cerr << "netdiag incidents: " << error << '\n';
    return kExitError;
  }
  // Filters apply here for both sources, so the two agree.
  std::optional<double> since;
  if (!o.since.empty() && !(since = parseSince(o.since, set->generated_at))) {
    std::cerr << "netdiag incidents: bad --since '" << o.since
              << "': want a telemetry time or an age like 15m, 2h\n";
    return kExitError;
  }
  std::vector<json> kept;
  for (json& i : set->incidents) {
    if (o.open && !isOpen(i)) continue;
    if (!o.kind.empty() && i.value("kind", "") != o.kind) continue;
    // Opened or resolved since T, as the store's own filter means it.
    if (since && i.value("opened_at", 0.0) < *since &&
        !(i.contains("resolved_at") && i["resolved_at"].is_number() &&
          i["resolved_at"].get<double>() >= *since)) {
      continue;
    }
    kept.push_back(std::move(i));
  }
  std::stable_sort(kept.begin(), kept.end(), [](const json& a, const json& b) {
    return a.value("opened_at", 0.0) < b.value("opened_at", 0.0);
  });
  if (o.limit > 0 && kept.size() > static_cast<size_t>(o.limit)) {
    kept.erase(kept.begin(), kept.end() - o.limit);  // the latest
  }
  if (o.json) {
    std::cout << json{{"generated_at", set->generated_at}, {"incidents", kept}}.dump(2) << '\n';
    return kExitOk;
  }
  const bool colour = useColour();
  std::printf("%-8s %-16s %-44s %8s %6s %10s %10s %10s %9s\n", "ID", "KIND", "WHERE", "LOSS",
              "CONF", "OPENED", "LOCALIZED", "RESOLVED", "LASTED");
  for (const json& i : kept) {
    char loss[24] = "-";
    if (i.contains("loss_ratio") && i["loss_ratio"].is_number()) {
      std::snprintf(loss, sizeof loss, "%.3f%%", 100 * i["loss_ratio"].get<double>());
    }
    const double opened = i.value("opened_at", 0.0);
    const double end = i.contains("resolved_at") && i["resolved_at"].is_number()
                           ? i["resolved_at"].get<double>()
                           : set->generated_at;
    std::string lasted = durationText(end - opened) + (isOpen(i) ? "+" : "");
    char id[16];
    std::snprintf(id, sizeof id, "%-8s", i.value("id", "?").c_str());
    std::printf("%s %-16s %-44s %8s %6s %10s %10s %10s %9s\n",
                paint(id, isOpen(i) ? (isLocalized(i) ? "1;31" : "33") : "2", colour).c_str(),
                i.value("kind", "?").c_str(), whereInWords(i).c_str(), loss,
                numberOr(i, "confidence", "-", 3).c_str(), timeOr(i, "opened_at").c_str(),
                timeOr(i, "localized_at").c_str(), timeOr(i, "resolved_at").c_str(),
                lasted.c_str());
  }
  std::printf("%zu incident(s) (as of t=%.1f)\n", kept.size(), set->generated_at);
  return kExitOk;
}

}  // namespace

void addIncidentsCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<IncidentsOptions>();
  auto* cmd = app.add_subcommand("incidents", "The incident history, resolved incidents too");
  cmd->add_option("--analyzer", o->analyzer,
                  "Analyzer HTTP address, e.g. http://127.0.0.1:9600; a replica pair as A,B "
                  "(the first that answers)");
  cmd->add_option("--db", o->db, "Read the analyzer's SQLite database instead (offline)");
  cmd->add_flag("--json", o->json, "Print the incident report (formats.md §3) as JSON");
  cmd->add_flag("--open", o->open, "Only incidents not resolved");
  cmd->add_option("--since", o->since,
                  "Only incidents opened or resolved at or after T (telemetry time) or within an "
                  "age (15m, 2h)");
  cmd->add_option("--kind", o->kind, "Only incidents of this kind");
  cmd->add_option("--limit", o->limit, "Only the latest N")->check(CLI::NonNegativeNumber);
  cmd->callback([o, &exit_code] { exit_code = runIncidents(*o); });
}

}  // namespace netdiag::cli
