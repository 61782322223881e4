#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "sim/score.h"
#include "sim/truth.h"
#include "topology/loader.h"

namespace netdiag::cli {
namespace {

using nlohmann::json;
using namespace netdiag::sim;

struct ScoreOptions {
  std::string truth;
  std::string report;
  std::string topology;
  bool json = false;
  std::optional<double> min_precision;
  std::optional<double> min_recall;
};

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::string fixed(double v, int digits = 3) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string optionalFixed(const std::optional<double>& v, int digits = 1) {
  return v ? fixed(*v, digits) : "-";
}

std::string directionLine(const DirectionStats& s) {
  if (s.found == 0) return "n/a (no link fault found)";
  return withCommas(s.exact + s.both) + "/" + withCommas(s.found) + " correct (" +
         fixed(*s.accuracy()) + "; " + withCommas(s.both) + " only by both_directions, strict " +
         fixed(*s.strictAccuracy()) + ", " + withCommas(s.reversed) + " reversed)";
}

void printText(const ScoreResult& r, const ScoreOptions& o) {
  std::cout << "scored " << o.report << " against " << o.truth << ": " << withCommas(r.incidents)
            << " incidents, " << withCommas(r.positives) << " localized ("
            << withCommas(r.not_localized) << " not, ignored)\n\n";
  std::cout << "precision   " << fixed(r.precision) << "  (" << withCommas(r.found) << " found, "
            << withCommas(r.false_positives.size()) << " false positive"
            << (r.false_positives.size() == 1 ? "" : "s") << ", " << withCommas(r.duplicates)
            << " duplicate" << (r.duplicates == 1 ? "" : "s") << " not counted)\n";
  std::cout << "recall      " << fixed(r.recall) << "  (" << withCommas(r.found) << " of "
            << withCommas(r.faults + r.traps) << " items: link faults "
            << withCommas(r.faults_found) << "/" << withCommas(r.faults) << " = "
            << fixed(r.fault_recall) << ", traps " << withCommas(r.traps_found) << "/"
            << withCommas(r.traps) << " = " << fixed(r.trap_recall) << ")\n";
  std::cout << "F1          " << fixed(r.f1) << '\n';
  std::cout << "direction   " << directionLine(r.direction) << '\n';
  if (r.classified) {
    std::cout << "  fabric    " << directionLine(r.direction_fabric) << '\n';
    std::cout << "  access    " << directionLine(r.direction_access) << '\n';
  }
  const TimeStats& t = r.time_to_localize;
  std::cout << "time to localize (s, " << withCommas(t.count) << " link faults found): median "
            << optionalFixed(t.median) << ", p90 " << optionalFixed(t.p90) << ", max "
            << optionalFixed(t.max) << '\n';
  const TimeStats& d = r.open_delay;
  std::cout << "opened after onset (s): median " << optionalFixed(d.median) << ", p90 "
            << optionalFixed(d.p90) << ", max " << optionalFixed(d.max) << '\n';

  if (!r.items.empty()) {
    size_t target_width = 6;
    for (const ItemScore& row : r.items) target_width = std::max(target_width, row.target.size());
    std::cout << '\n';
    char line[512];
    std::snprintf(line, sizeof line, "%-8s %-17s %-*s %-5s %-10s %8s %8s %-9s %4s\n", "ITEM",
                  "KIND", static_cast<int>(target_width), "TARGET", "FOUND", "BY", "TTL", "OPENED",
                  "DIRECTION", "DUPS");
    std::cout << line;
    for (const ItemScore& row : r.items) {
      std::string dir(directionName(row.direction));
      if (r.classified && row.is_fault) dir += "/" + std::string(linkClassName(row.link_class));
      std::snprintf(
          line, sizeof line, "%-8s %-17s %-*s %-5s %-10s %8s %8s %-9s %4zu%s\n", row.id.c_str(),
          row.kind.c_str(), static_cast<int>(target_width), row.target.c_str(),
          row.found ? "yes" : "NO", row.found ? row.found_by.c_str() : "-",
          optionalFixed(row.time_to_localize).c_str(), optionalFixed(row.open_delay).c_str(),
          dir.c_str(), row.duplicates, row.after_end ? "  (localized after the end)" : "");
      std::cout << line;
    }
  }
  if (!r.false_positives.empty()) {
    std::cout << "\nfalse positives:\n";
    for (const FalsePositive& fp : r.false_positives) {
      std::cout << "  " << fp.incident_id << "  " << fp.kind << ' ' << fp.target << " at "
                << fixed(fp.localized_at, 1) << ": " << fp.reason << '\n';
    }
  }
}

int runScore(const ScoreOptions& o) {
  auto load = [](const std::string& path, const char* what) -> std::optional<std::string> {
    auto text = readFile(path);
    if (!text) std::cerr << "netdiag score: cannot read " << what << " file " << path << '\n';
    return text;
  };
  auto truth_text = load(o.truth, "truth");
  auto report_text = load(o.report, "report");
  if (!truth_text || !report_text) return kExitError;

  std::string error;
  auto truth = truthFromJson(*truth_text, error);
  if (!truth) {
    std::cerr << o.truth << ": " << error << '\n';
    return kExitError;
  }
  auto report = reportFromJson(*report_text, error);
  if (!report) {
    std::cerr << o.report << ": " << error << '\n';
    return kExitError;
  }
  std::unique_ptr<topology::LoadResult> topo;
  if (!o.topology.empty()) {
    topo = std::make_unique<topology::LoadResult>(topology::loadTopologyFile(o.topology));
    if (!topo->ok()) {
      for (const auto& d : topo->errors) {
        std::cerr << d.file;
        if (d.line > 0) std::cerr << ':' << d.line;
        std::cerr << ": error: " << d.message << '\n';
      }
      std::cerr << o.topology << ": not a valid topology\n";
      return kExitError;
    }
  }

  ScoreResult r = scoreReport(*truth, *report, topo ? &topo->topology : nullptr);
  for (const std::string& w : r.warnings) std::cerr << "netdiag score: warning: " << w << '\n';

  std::vector<std::string> missed;
  if (o.min_precision && r.precision < *o.min_precision) {
    missed.push_back("precision " + fixed(r.precision) + " < --min-precision " +
                     fixed(*o.min_precision));
  }
  if (o.min_recall && r.recall < *o.min_recall) {
    missed.push_back("recall " + fixed(r.recall) + " < --min-recall " + fixed(*o.min_recall));
  }

  if (o.json) {
    json out = json::parse(scoreToJson(r));
    out["truth_file"] = o.truth;
    out["report_file"] = o.report;
    if (!o.topology.empty()) out["topology_file"] = o.topology;
    if (o.min_precision || o.min_recall) {
      out["thresholds"] = {
          {"min_precision", o.min_precision ? json(*o.min_precision) : json(nullptr)},
          {"min_recall", o.min_recall ? json(*o.min_recall) : json(nullptr)},
          {"met", missed.empty()},
          {"missed", missed}};
    }
    std::cout << out.dump(2) << '\n';
  } else {
    printText(r, o);
  }
  for (const std::string& m : missed) std::cerr << "netdiag score: " << m << '\n';
  return missed.empty() ? kExitOk : kExitFindings;
}

}  // namespace

void addScoreCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ScoreOptions>();
  auto* score = app.add_subcommand(
      "score",
      "Score an incident report against a simulator's ground truth (formats.md §4): precision, "
      "recall, direction accuracy, time to localize (exit 1: below --min-precision/--min-recall)");
  score->add_option("--truth", o->truth, "Ground truth JSON (netdiag simulate --truth)")
      ->required();
  score->add_option("--report", o->report, "Incident report JSON (netdiag replay/locate --json)")
      ->required();
  score->add_option("--topology", o->topology,
                    "Topology file; splits direction accuracy into access and fabric links");
  score->add_flag("--json", o->json, "Print the score as JSON");
  score->add_option("--min-precision", o->min_precision, "Exit 1 when precision is below this")
      ->check(CLI::Range(0.0, 1.0));
  score->add_option("--min-recall", o->min_recall, "Exit 1 when recall is below this")
      ->check(CLI::Range(0.0, 1.0));
  score->callback([o, &exit_code] { exit_code = runScore(*o); });
}

}  // namespace netdiag::cli
