// `netdiag locate`: what is wrong in the fabric now, for the person paged at
// 3 a.m. Asks a running analyzer (`--analyzer URL`, GET /api/v1/locate) or
// reads its database offline (`--db FILE`); prints the open incidents most
// urgent first (link in words, kind, loss, confidence, since when, one line
// of evidence) or, with --json, the formats.md §3 report. Exit 0 nothing
// wrong, 1 a localized fault is open, 2 error.

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/incident_source.h"

namespace netdiag::cli {
namespace {

using nlohmann::json;

struct LocateOptions {
  std::string analyzer;
  std::string db;
  bool json = false;
  double watch_s = 0;
  std::string since;
  std::string kind;
};

std::optional<IncidentSet> fetchOpen(const LocateOptions& o, std::string* error) {
  if (!o.analyzer.empty()) {
    auto body = httpGetJson(o.analyzer, "/api/v1/locate", error);
    if (!body) return std::nullopt;
    return reportFromJson(*body, error);
  }
  store::IncidentQuery q;
  q.only_open = true;
  std::vector<std::string> problems;
  auto set = loadFromDb(o.db, q, error, &problems);
  for (const auto& p : problems) std::cerr << "netdiag locate: " << p << '\n';
  return set;
}

// Keeps open incidents matching --kind and --since (opened at or after).
std::optional<IncidentSet> filter(IncidentSet set, const LocateOptions& o, std::string* error) {
  std::optional<double> since;
  if (!o.since.empty()) {
    since = parseSince(o.since, set.generated_at);
    if (!since) {
      *error = "bad --since '" + o.since + "': want a telemetry time or an age like 15m, 2h";
      return std::nullopt;
    }
  }
  std::vector<json> kept;
  for (json& i : set.incidents) {
    if (!isOpen(i)) continue;
    if (!o.kind.empty() && i.value("kind", "") != o.kind) continue;
    if (since && i.value("opened_at", 0.0) < *since) continue;
    kept.push_back(std::move(i));
  }
  sortBySeverity(kept);
  set.incidents = std::move(kept);
  return set;
}

void printTable(const IncidentSet& set, bool colour) {
  if (set.incidents.empty()) {
    std::printf("OK: no open incident (as of %s)\n", clockText(set.generated_at).c_str());
    return;
  }
  size_t faults = 0;
  for (const json& i : set.incidents) faults += isLocalized(i);
  std::printf("%zu localized fault(s), %zu suspect(s) (as of %s)\n", faults,
              set.incidents.size() - faults, clockText(set.generated_at).c_str());
  std::printf("%-9s %-44s %-16s %8s %6s %-16s %s\n", "SEVERITY", "WHERE", "KIND", "LOSS", "CONF",
              "SINCE", "EVIDENCE");
  for (const json& i : set.incidents) {
    const std::string group = candidatesLine(i);
    const std::string sev = isLocalized(i)  ? severityOf(i)
                            : group.empty() ? "suspect"
                                            : "ambiguous";
    char sev_col[16];
    std::snprintf(sev_col, sizeof sev_col, "%-9s", sev.c_str());
    const char* ansi = sev == "critical" ? "1;31" : sev == "warning" ? "33" : "2";
    std::string loss = "-";
    if (i.contains("loss_ratio") && i["loss_ratio"].is_number()) {
      char b[24];
      std::snprintf(b, sizeof b, "%.3f%%", 100 * i["loss_ratio"].get<double>());
      loss = b;
    }
    const double opened = i.value("opened_at", 0.0);
    std::string since = durationText(set.generated_at - opened) + " ago";
    std::printf("%s %-44s %-16s %8s %6s %-16s %s [%s]\n", paint(sev_col, ansi, colour).c_str(),
                whereInWords(i).c_str(), i.value("kind", "?").c_str(), loss.c_str(),
                numberOr(i, "confidence", "-", 3).c_str(), since.c_str(), evidenceLine(i).c_str(),
                i.value("id", "?").c_str());
    if (!group.empty() && !isLocalized(i)) {
      std::printf("%-9s   or one of: %s (not told apart yet: not paged)\n", "", group.c_str());
    }
  }
  std::printf("details and drain advice: netdiag explain <id>\n");
}

// The links the analyzer's drain policy holds drained (netdiag drain list),
// under the table; nothing when the analyzer has none or does not say.
void printDrained(const LocateOptions& o) {
  std::string error;
  auto body = httpGetJson(o.analyzer, "/api/v1/drain", &error);
  if (!body || !body->contains("drained") || !(*body)["drained"].is_array()) return;
  for (const json& d : (*body)["drained"]) {
    if (!d.is_object()) continue;
    std::printf("drained by netdiag: %s (%s, %s, by %s)\n", d.value("link", "?").c_str(),
                d.value("state", "?").c_str(), d.value("incident", "?").c_str(),
                d.value("by", "?").c_str());
  }
}

int locateOnce(const LocateOptions& o, bool colour) {
  std::string error;
  auto set = fetchOpen(o, &error);
  if (set) set = filter(std::move(*set), o, &error);
  if (!set) {
    std::cerr << "netdiag locate: " << error << '\n';
    return kExitError;
  }
  if (o.json) {
    json out = {{"generated_at", set->generated_at}, {"incidents", set->incidents}};
    std::cout << out.dump(2) << std::endl;
  } else {
    printTable(*set, colour);
    if (!o.analyzer.empty()) printDrained(o);
    std::fflush(stdout);
  }
  for (const json& i : set->incidents) {
    if (isLocalized(i)) return kExitFindings;
  }
  return kExitOk;
}

int runLocate(const LocateOptions& o) {
  if (o.analyzer.empty() == o.db.empty()) {
    std::cerr << "netdiag locate: give exactly one of --analyzer URL or --db FILE\n";
    return kExitError;
  }
  const bool colour = useColour() && !o.json;
  if (o.watch_s <= 0) return locateOnce(o, colour);
  // --watch: redraw every S seconds until interrupted; a failed fetch is
  // reported and retried, not fatal.
  for (;;) {
    if (colour) std::printf("\033[H\033[2J");
    locateOnce(o, colour);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.watch_s));
  }
}

}  // namespace

void addLocateCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<LocateOptions>();
  auto* cmd = app.add_subcommand(
      "locate",
      "What is wrong in the fabric now: open incidents, most urgent first (exit 1: a "
      "localized fault is open)");
  cmd->add_option("--analyzer", o->analyzer,
                  "Analyzer HTTP address, e.g. http://127.0.0.1:9600; a replica pair as A,B "
                  "(the first that answers)");
  cmd->add_option("--db", o->db, "Read the analyzer's SQLite database instead (offline)");
  cmd->add_flag("--json", o->json, "Print the incident report (formats.md §3) as JSON");
  cmd->add_option("--watch", o->watch_s, "Refresh every S seconds until interrupted")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option(
      "--since", o->since,
      "Only incidents opened at or after T (telemetry time) or within an age (15m, 2h)");
  cmd->add_option("--kind", o->kind, "Only incidents of this kind (link_loss, link_down, ...)");
  cmd->callback([o, &exit_code] { exit_code = runLocate(*o); });
}

}  // namespace netdiag::cli
