// `netdiag explain INCIDENT`: all the evidence behind one incident — the
// flows that crossed the link and how many of their probes were lost, the
// link against the fabric's background and its own reverse direction, the
// port counters, the alternatives ruled out — from the incident's evidence
// (database or analyzer) and, with --analyzer, the link's live tallies
// (GET /api/v1/incidents/<id>). While it is open, the drain advice for its
// link: the analyzer's, or with --db and --topology made the same way from
// the database's open incidents (drain/context.h).

#include <cstdio>
#include <iostream>
#include <memory>
#include <set>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/incident_source.h"
#include "topology/loader.h"

namespace netdiag::cli {
namespace {

using nlohmann::json;

struct ExplainOptions {
  std::string id;
  std::string analyzer;
  std::string db;
  std::string topology;
  bool json = false;
};

std::string pct(double ratio) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f%%", 100 * ratio);
  return b;
}

double num(const json& j, const char* key, double fallback = 0) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

std::string scalar(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v.get<double>());
    return b;
  }
  return v.dump();
}

void printEvidence(const json& inc) {
  const json ev =
      inc.contains("evidence") && inc["evidence"].is_object() ? inc["evidence"] : json::object();
  std::set<std::string> shown;
  auto used = [&](const char* k) {
    shown.insert(k);
    return ev.contains(k);
  };
  std::printf("\nEvidence");
  if (used("method")) std::printf(" (method: %s)", scalar(ev["method"]).c_str());
  std::printf(":\n");
  if (used("summary")) std::printf("  %s\n", scalar(ev["summary"]).c_str());
  if (used("probes") && used("lost")) {
    const double n = num(ev, "probes"), k = num(ev, "lost");
    std::printf("  flows crossing the link: %.0f probes of known path, %.0f lost (%s)", n, k,
                n > 0 ? pct(k / n).c_str() : "-");
    if (used("lossy_flow_windows"))
      std::printf(" in %.0f lossy flow-windows", num(ev, "lossy_flow_windows"));
    std::printf("\n");
    if (used("background_loss")) {
      const double q0 = num(ev, "background_loss");
      std::printf("  clean elsewhere: these probes' background loss is %s", pct(q0).c_str());
      if (q0 > 0 && n > 0) std::printf("; this link loses %.0fx that", (k / n) / q0);
      std::printf("\n");
    }
  }
  if (used("llr_nats")) {
    std::printf("  log-likelihood ratio for this link against no fault: %.1f nats\n",
                num(ev, "llr_nats"));
  }
  if (used("counters") && ev["counters"].is_object()) {
    std::printf("  port counters over the horizon:");
    for (auto& [k, v] : ev["counters"].items()) std::printf(" %s=%s", k.c_str(), scalar(v).c_str());
    std::printf("\n");
  }
  if (used("carrier_changes"))
    std::printf("  carrier changes: %s\n", scalar(ev["carrier_changes"]).c_str());
  if (used("ruled_out")) {
    const json& r = ev["ruled_out"];
    if (r.is_object()) {
      std::printf("  alternative ruled out: %s (%s nats): %s\n",
                  scalar(r.value("hypothesis", json("?"))).c_str(),
                  scalar(r.value("llr_nats", json("?"))).c_str(),
                  scalar(r.value("why", json("-"))).c_str());
    } else {
      std::printf("  alternatives ruled out: %s\n", r.dump().c_str());
    }
  }
  if (used("host")) std::printf("  note: %s\n", scalar(ev["host"]).c_str());
  if (used("ports") && ev["ports"].is_array()) {
    for (const json& p : ev["ports"]) {
      std::printf("  port %s: LLDP sees %s, topology says %s\n",
                  scalar(p.value("port", json("?"))).c_str(),
                  scalar(p.value("lldp_neighbor", json("?"))).c_str(),
                  scalar(p.value("topology_peer", json("?"))).c_str());
    }
  }
  if (used("added_latency_us"))
    std::printf("  added latency: %s us\n", scalar(ev["added_latency_us"]).c_str());
  for (auto& [k, v] : ev.items()) {
    if (!shown.contains(k))
      std::printf("  %s: %s\n", k.c_str(),
                  v.is_structured() ? v.dump().c_str() : scalar(v).c_str());
  }
}

void printLinkState(const json& link) {
  std::printf("\nLink now (analyzer, over its horizon):\n");
  auto line = [](const char* what, const json& j) {
    const double n = num(j, "probes"), k = num(j, "lost");
    std::printf("  %-14s %8.0f probes %6.0f lost  loss %s\n", what, n, k,
                n > 0 ? pct(k / n).c_str() : "-");
  };
  line("this direction", link);
  if (link.contains("reverse") && link["reverse"].is_object()) line("reverse", link["reverse"]);
  if (link.contains("background_loss")) {
    std::printf("  %-14s %s\n", "background", pct(num(link, "background_loss")).c_str());
  }
  if (link.contains("incidents") && link["incidents"].is_array() && link["incidents"].size() > 1) {
    std::printf("  incidents on this link: %s\n", link["incidents"].dump().c_str());
  }
}

void printDrain(const json& drain) {
  std::printf("\nDrain: %s\n", scalar(drain.value("summary", json("-"))).c_str());
  std::string out;
  for (const json& l : drain.value("out_of_service", json::array())) {
    if (!l.is_object()) continue;
    out += (out.empty() ? "" : ", ") + scalar(l.value("link", json("?"))) + " (" +
           scalar(l.value("why", json("?"))) + ")";
  }
  if (!out.empty()) std::printf("  counted out of service: %s\n", out.c_str());
  if (const json d = drain.value("netdiag_drain", json()); d.is_object()) {
    std::printf(
        "  netdiag's drain: %s at %s by %s%s\n", scalar(d.value("state", json("?"))).c_str(),
        scalar(d.value("port", json("?"))).c_str(), scalar(d.value("by", json("?"))).c_str(),
        d.contains("detail") ? (" (" + scalar(d["detail"]) + ")").c_str() : "");
  }
  const json decision = drain.value("decision", json::object());
  if (!decision.is_object() || !decision.contains("checks")) return;
  std::string failed;
  for (const json& c : decision.value("checks", json::array())) {
    if (!c.is_object() || c.value("ok", true)) continue;
    failed += "\n    - " + scalar(c.value("name", json("?"))) + ": " +
              scalar(c.value("detail", json("-")));
  }
  std::printf("  policy %s, verdict %s: %s%s\n", scalar(decision.value("mode", json("?"))).c_str(),
              scalar(decision.value("verdict", json("?"))).c_str(),
              decision.value("would_act", false) ? "every safety check holds (auto would drain it)"
                                                 : "auto would not drain it:",
              failed.c_str());
}

int runExplain(const ExplainOptions& o) {
  if (o.analyzer.empty() == o.db.empty()) {
    std::cerr << "netdiag explain: give exactly one of --analyzer URL or --db FILE\n";
    return kExitError;
  }
  std::string error;
  json inc, link, drain;
  if (!o.analyzer.empty()) {
    auto body = httpGetJson(o.analyzer, "/api/v1/incidents/" + o.id, &error);
    if (!body || !body->contains("incident") || !(*body)["incident"].is_object()) {
      std::cerr << "netdiag explain: " << (body ? "answer without an \"incident\" object" : error)
                << '\n';
      return kExitError;
    }
    inc = (*body)["incident"];
    if (body->contains("link") && (*body)["link"].is_object()) link = (*body)["link"];
    if (body->contains("drain") && (*body)["drain"].is_object()) drain = (*body)["drain"];
  } else {
    auto one = loadOneFromDb(o.db, o.id, &error);
    if (!one) {
      std::cerr << "netdiag explain: " << error << '\n';
      return kExitError;
    }
    inc = *one;
  }
  if (o.analyzer.empty() && !o.topology.empty() && isOpen(inc) && inc.contains("link") &&
      inc["link"].is_string()) {
    auto loaded = topology::loadTopologyFile(o.topology);
    if (!loaded.ok()) {
      for (const auto& e : loaded.errors) std::cerr << e.str() << '\n';
      return kExitError;
    }
    const topology::Topology& topo = loaded.topology;
    auto d = topo.findDirLink(inc["link"].get<std::string>());
    if (!d) {
      std::cerr << "netdiag explain: " << o.topology << " has no link " << inc["link"] << '\n';
      return kExitError;
    }
    std::vector<std::string> problems;
    store::IncidentQuery open_only;
    open_only.only_open = true;
    auto open = loadFromDb(o.db, open_only, &error, &problems);
    if (!open) {
      std::cerr << "netdiag explain: " << error << '\n';
      return kExitError;
    }
    const drain::Context context = drainContextOf(topo, open->incidents);
    drain = context.planJson(context.plan(topology::Topology::linkOf(*d)));
  }
  if (o.json) {
    json out = {{"incident", inc}};
    if (!link.is_null()) out["link"] = link;
    if (!drain.is_null()) out["drain"] = drain;
    std::cout << out.dump(2) << '\n';
    return kExitOk;
  }
  const bool colour = useColour();
  const std::string state = !isOpen(inc)       ? "resolved"
                            : isLocalized(inc) ? "localized"
                                               : "suspected";
  const std::string sev = isOpen(inc) ? severityOf(inc) : "resolved";
  std::printf("%s  %s  %s  %s\n", inc.value("id", "?").c_str(), inc.value("kind", "?").c_str(),
              paint(sev,
                    sev == "critical"  ? "1;31"
                    : sev == "warning" ? "33"
                                       : "2",
                    colour)
                  .c_str(),
              state.c_str());
  std::printf("  where:      %s\n", whereInWords(inc).c_str());
  const double opened = num(inc, "opened_at");
  std::printf("  opened:     %s\n", clockText(opened).c_str());
  if (isLocalized(inc)) {
    std::printf("  localized:  %s (%s after opening)\n",
                clockText(num(inc, "localized_at")).c_str(),
                durationText(num(inc, "localized_at") - opened).c_str());
  } else if (const std::string group = candidatesLine(inc); !group.empty()) {
    std::printf("  localized:  not yet: the evidence fits these as well (an ambiguity group)\n");
    std::printf("  could be:   %s\n", group.c_str());
  } else {
    std::printf("  localized:  not yet (evidence below paging confidence)\n");
  }
  if (!isOpen(inc)) {
    std::printf("  resolved:   %s (lasted %s)\n", clockText(num(inc, "resolved_at")).c_str(),
                durationText(num(inc, "resolved_at") - opened).c_str());
  }
  std::string interval;
  if (auto it = inc.find("loss_interval"); it != inc.end() && it->is_array() && it->size() == 2 &&
                                           (*it)[0].is_number() && (*it)[1].is_number()) {
    interval = " (90 % interval " + pct((*it)[0].get<double>()) + " to " +
               pct((*it)[1].get<double>()) + ")";
  }
  std::printf("  estimate:   loss %s%s, confidence %s\n", pct(num(inc, "loss_ratio")).c_str(),
              interval.c_str(), numberOr(inc, "confidence", "-", 4).c_str());
  printEvidence(inc);
  if (!link.is_null()) printLinkState(link);
  if (!drain.is_null()) printDrain(drain);
  return kExitOk;
}

}  // namespace

void addExplainCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ExplainOptions>();
  auto* cmd = app.add_subcommand("explain", "All the evidence behind one incident");
  cmd->add_option("incident", o->id, "Incident id, e.g. inc-17")->required();
  cmd->add_option("--analyzer", o->analyzer,
                  "Analyzer HTTP address, e.g. http://127.0.0.1:9600; a replica pair as A,B "
                  "(the first that answers)");
  cmd->add_option("--db", o->db, "Read the analyzer's SQLite database instead (offline)");
  cmd->add_option("--topology", o->topology,
                  "With --db: the topology file, for the drain advice (an analyzer gives its own)");
  cmd->add_flag("--json", o->json, "Print the incident (and link state) as JSON");
  cmd->callback([o, &exit_code] { exit_code = runExplain(*o); });
}

}  // namespace netdiag::cli
