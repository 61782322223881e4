// `netdiag replay`: runs the analyzer over a telemetry log on the log's own
// clock, as fast as it can, and prints the incident report (formats.md §3).

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <tuple>

#include "analyzer/engine.h"
#include "analyzer/lookahead_sink.h"
#include "analyzer/persist.h"
#include "cli/app.h"
#include "cli/commands.h"
#include "cli/engine_options.h"
#include "cli/output.h"
#include "store/incident_store.h"
#include "store/migrations.h"
#include "telemetry/jsonl.h"
#include "topology/loader.h"

namespace netdiag::cli {
namespace {

struct ReplayOptions {
  std::string topology;
  std::string telemetry = "-";
  bool json = false;
  bool strict = false;
  double max_future_s = 60;
  std::string db;
  analyzer::EngineConfig engine;
};

std::string timeText(const std::optional<double>& t) {
  if (!t) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", *t);
  return buf;
}

void printTable(const topology::Topology& topo, const analyzer::Report& report) {
  std::printf("%-8s %-16s %-44s %8s %6s %8s %9s %9s\n", "ID", "KIND", "WHERE", "LOSS", "CONF",
              "OPENED", "LOCALIZED", "RESOLVED");
  for (const auto& i : report.incidents) {
    std::string where;
    if (i.link != topology::kNone) {
      where = topo.dirLinkName(i.link) + (i.both_directions ? " (both)" : "");
    } else if (i.node != topology::kNone) {
      where = topo.node(i.node).name;
    } else {
      for (auto p : i.ports) where += (where.empty() ? "" : ",") + topo.portRef(p);
    }
    char loss[16];
    std::snprintf(loss, sizeof loss, "%.3f%%", 100 * i.loss_ratio);
    std::printf("%-8s %-16s %-44s %8s %6.3f %8.1f %9s %9s\n", i.id.c_str(),
                analyzer::kindName(i.kind), where.c_str(), loss, i.confidence, i.opened_at,
                timeText(i.localized_at).c_str(), timeText(i.resolved_at).c_str());
  }
}

int runReplay(const ReplayOptions& o) {
  auto loaded = topology::loadTopologyFile(o.topology);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) std::cerr << e.str() << '\n';
    return kExitError;
  }
  const topology::Topology& topo = loaded.topology;
  std::ifstream file;
  std::istream* in = &std::cin;
  if (o.telemetry != "-") {
    file.open(o.telemetry, std::ios::binary);
    if (!file) {
      std::cerr << "netdiag replay: cannot open " << o.telemetry << '\n';
      return kExitError;
    }
    in = &file;
  }
  analyzer::Engine engine(topo, o.engine);
  std::optional<store::Database> db;
  if (!o.db.empty()) {
    // A restarted analyzer keeps its incidents: load them, continue, save.
    auto opened = store::openAndMigrate(o.db);
    if (!opened) {
      std::cerr << "netdiag replay: " << opened.message() << '\n';
      return kExitError;
    }
    db.emplace(std::move(*opened));
    auto rows = store::loadIncidents(*db);
    if (!rows) {
      std::cerr << "netdiag replay: " << rows.message() << '\n';
      return kExitError;
    }
    std::vector<std::string> problems;
    engine.restore(analyzer::fromRows(topo, *rows, problems));
    for (const auto& p : problems) std::cerr << "netdiag replay: " << o.db << ": " << p << '\n';
  }
  telemetry::ReadStats stats;
  telemetry::ReadOptions ro;
  ro.strict = o.strict;
  ro.max_future_s = o.max_future_s;
  analyzer::LookaheadSink sink(engine);
  bool ok = telemetry::readJsonl(*in, topo, sink, stats, ro);
  sink.flush();
  const std::string name = o.telemetry == "-" ? "(stdin)" : o.telemetry;
  uint64_t last_line = 0;  // under --strict, the line it stopped at
  for (auto [lines, count, what] :
       {std::tuple{&stats.first_bad, stats.bad, "bad record"},
        std::tuple{&stats.first_future, stats.future, "record from the future"}}) {
    for (const auto& bad : *lines) {
      std::cerr << name << ':' << bad.line << ": " << what << ": " << bad.message << '\n';
      last_line = std::max(last_line, bad.line);
    }
    if (count > lines->size()) {
      std::cerr << "... and " << withCommas(count - lines->size()) << " more\n";
    }
  }
  // Kept (the contract allows them) but beyond a netdiag limit: say where.
  for (const auto& w : stats.first_implausible) {
    std::cerr << name << ':' << w.line << ": warning: implausible record: " << w.message << '\n';
  }
  if (stats.implausible > stats.first_implausible.size()) {
    std::cerr << "... and " << withCommas(stats.implausible - stats.first_implausible.size())
              << " more\n";
  }
  if (!ok) {
    std::cerr << "netdiag replay: stopped at " << name << ':' << last_line
              << ", the first bad or future record (--strict)\n";
    return kExitError;
  }
  engine.finish();
  analyzer::Report report = engine.report();
  if (db) {
    std::vector<store::IncidentRow> rows;
    for (const auto& i : report.incidents) {
      rows.push_back(analyzer::toRow(topo, i, report.generated_at));
    }
    auto saved = store::upsertIncidents(*db, rows);
    if (!saved) {
      std::cerr << "netdiag replay: cannot save incidents to " << o.db << ": " << saved.message()
                << '\n';
      return kExitError;
    }
  }
  const auto& es = engine.stats();
  if (o.json) {
    nlohmann::json j = analyzer::reportToJson(topo, report);
    // An optional field (formats.md §3 allows them): what was read and how.
    j["ingest"] = {{"records", stats.records},
                   {"probes", es.probes},
                   {"ports", es.ports},
                   {"lldp", es.lldp},
                   {"bad", stats.bad},
                   {"unknown_kind", stats.unknown_kind},
                   {"future", stats.future},
                   {"late", es.late},
                   {"too_late", es.too_late},
                   {"passes", es.passes},
                   {"max_future_s", o.max_future_s}};
    j["ingest"]["implausible"] = stats.implausible;  // beyond a netdiag limit, kept
    std::cout << j.dump(2) << '\n';
  } else {
    printTable(topo, report);
  }
  std::cerr << "replayed " << withCommas(stats.records) << " records (" << withCommas(es.probes)
            << " probe, " << withCommas(es.ports) << " port, " << withCommas(es.lldp) << " lldp; "
            << withCommas(stats.bad) << " bad, " << withCommas(stats.unknown_kind)
            << " unknown kind, " << withCommas(stats.future) << " future, " << withCommas(es.late)
            << " late, " << withCommas(es.too_late) << " too late";
  if (stats.implausible > 0) std::cerr << ", " << withCommas(stats.implausible) << " implausible";
  std::cerr << ") in " << es.passes << " passes; " << report.incidents.size() << " incident(s)\n";
  bool findings = false;
  for (const auto& i : report.incidents) findings |= i.localized_at && !i.resolved_at;
  return findings ? kExitFindings : kExitOk;
}

}  // namespace

void addReplayCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ReplayOptions>();
  auto* cmd = app.add_subcommand(
      "replay",
      "Run the analyzer over a telemetry log and print its incidents (exit 1: faults "
      "still open at the end)");
  cmd->add_option("--topology", o->topology, "Topology file")->required();
  cmd->add_option("--telemetry", o->telemetry, "Telemetry log (JSON Lines); '-' reads stdin")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print the incident report (formats.md §3) as JSON");
  cmd->add_flag("--strict", o->strict, "Stop at the first bad line or record from the future");
  cmd->add_option("--max-future", o->max_future_s,
                  "Records stamped more than this many seconds beyond the newest one so far are "
                  "skipped and counted as future")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--db", o->db,
                  "SQLite file: continue from the incidents saved there, and save them back");
  addEngineOptions(cmd, o->engine);
  cmd->callback([o, &exit_code] {
    exit_code = checkEngineOptions(o->engine, "replay") ? runReplay(*o) : kExitError;
  });
}

}  // namespace netdiag::cli
