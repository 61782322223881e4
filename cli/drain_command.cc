// `netdiag drain-plan --topology T LINK`: is it safe to drain (take out of
// service) this link? The ECMP width left between the tiers it joins and the
// hosts that would lose every path to some other host (topology/drain.h),
// with the links out of service counted the way the analyzer counts them
// (drain/context.h): those its open incidents report down (--analyzer or
// --db) and those given with --down. Exit 0 safe, 1 unsafe, 2 error.

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/incident_source.h"
#include "drain/context.h"
#include "topology/loader.h"

namespace netdiag::cli {
namespace {

struct DrainOptions {
  std::string topology;
  std::string link;
  std::vector<std::string> down;
  std::string analyzer;
  std::string db;
  bool json = false;
};

// "X:p->Y:q" (either direction), "X:p<->Y:q", or one port "X:p".
std::optional<topology::LinkId> parseLink(const topology::Topology& topo, std::string text,
                                          std::string* error) {
  if (auto both = text.find("<->"); both != std::string::npos) text.replace(both, 3, "->");
  if (text.find("->") != std::string::npos) {
    if (auto d = topo.findDirLink(text)) return topology::Topology::linkOf(*d);
    *error = "no link " + text + " in the topology";
    return std::nullopt;
  }
  auto p = topo.findPort(text);
  if (!p) {
    *error = "no port " + text + " in the topology (want X:p->Y:q or X:p)";
    return std::nullopt;
  }
  if (topo.port(*p).link == topology::kNone) {
    *error = "port " + text + " has no link";
    return std::nullopt;
  }
  return topo.port(*p).link;
}

int runDrain(const DrainOptions& o) {
  auto loaded = topology::loadTopologyFile(o.topology);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) std::cerr << e.str() << '\n';
    return kExitError;
  }
  const topology::Topology& topo = loaded.topology;
  std::string error;
  auto link = parseLink(topo, o.link, &error);
  if (!link) {
    std::cerr << "netdiag drain-plan: " << error << '\n';
    return kExitError;
  }
  if (!o.analyzer.empty() && !o.db.empty()) {
    std::cerr << "netdiag drain-plan: give at most one of --analyzer URL or --db FILE\n";
    return kExitError;
  }
  std::optional<IncidentSet> open;
  if (!o.analyzer.empty()) {
    auto body = httpGetJson(o.analyzer, "/api/v1/locate", &error);
    if (body) open = reportFromJson(*body, &error);
  } else if (!o.db.empty()) {
    std::vector<std::string> problems;
    store::IncidentQuery open_only;
    open_only.only_open = true;
    open = loadFromDb(o.db, open_only, &error, &problems);
  }
  if ((!o.analyzer.empty() || !o.db.empty()) && !open) {
    std::cerr << "netdiag drain-plan: " << error << '\n';
    return kExitError;
  }
  drain::Context context = open ? drainContextOf(topo, open->incidents) : drain::Context(topo);
  for (const auto& d : o.down) {
    auto l = parseLink(topo, d, &error);
    if (!l) {
      std::cerr << "netdiag drain-plan: --down: " << error << '\n';
      return kExitError;
    }
    context.takeOut(*l, drain::OutReason::kGiven);
  }
  const topology::DrainPlan plan = context.plan(*link);
  const nlohmann::json j = context.planJson(plan);
  if (o.json) {
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << "drain " << j["link"].get<std::string>() << ": " << plan.summary << '\n';
    if (plan.stranded_hosts.size() > 3) {
      std::cout << "hosts that would lose every path to some hosts:";
      for (auto h : plan.stranded_hosts) std::cout << ' ' << topo.node(h).name;
      std::cout << '\n';
    }
    for (const auto& l : j["out_of_service"]) {
      std::cout << "counted out of service: " << l["link"].get<std::string>() << " ("
                << l["why"].get<std::string>() << ")\n";
    }
  }
  return plan.safe ? kExitOk : kExitFindings;
}

}  // namespace

void addDrainCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<DrainOptions>();
  auto* cmd = app.add_subcommand(
      "drain-plan",
      "Whether draining a link is safe: ECMP width left, hosts cut off (exit 1: unsafe)");
  cmd->add_option("--topology", o->topology, "Topology file")->required();
  cmd->add_option("link", o->link, "The link: X:p->Y:q, X:p<->Y:q or one of its ports X:p")
      ->required();
  cmd->add_option("--down", o->down, "Links already down or drained (repeatable)");
  cmd->add_option("--analyzer", o->analyzer,
                  "Analyzer HTTP address: the links its open incidents report down count as out "
                  "(A,B: the first that answers)");
  cmd->add_option("--db", o->db, "The analyzer's SQLite database instead (offline)");
  cmd->add_flag("--json", o->json, "Print the plan as JSON");
  cmd->callback([o, &exit_code] { exit_code = runDrain(*o); });
}

}  // namespace netdiag::cli
