// `netdiag drain-plan --topology T LINK`: is it safe to drain (take out of
// service) this link? The ECMP width left between the tiers it joins and the
// hosts that would lose every path to some other host (topology/drain.h).
// Exit 0 safe, 1 unsafe, 2 error.

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "topology/drain.h"
#include "topology/loader.h"

namespace netdiag::cli {
namespace {

struct DrainOptions {
  std::string topology;
  std::string link;
  std::vector<std::string> down;
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
  topology::Router router(topo);
  for (const auto& d : o.down) {
    auto l = parseLink(topo, d, &error);
    if (!l) {
      std::cerr << "netdiag drain-plan: --down: " << error << '\n';
      return kExitError;
    }
    router.setLinkDown(*l, true);
  }
  topology::DrainPlan plan = topology::planDrain(router, *link);
  const auto& lk = topo.link(*link);
  const std::string name = topo.portRef(lk.a) + "<->" + topo.portRef(lk.b);
  if (o.json) {
    nlohmann::json hosts = nlohmann::json::array();
    for (auto h : plan.stranded_hosts) hosts.push_back(topo.node(h).name);
    nlohmann::json j = {{"link", name},
                        {"safe", plan.safe},
                        {"already_down", plan.already_down},
                        {"lower", topo.node(plan.lower).name},
                        {"upper", topo.node(plan.upper).name},
                        {"lower_tier", plan.lower_tier},
                        {"upper_tier", plan.upper_tier},
                        {"ecmp_width_before", plan.width_before},
                        {"ecmp_width_after", plan.width_after},
                        {"stranded_hosts", hosts},
                        {"summary", plan.summary}};
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << "drain " << name << ": " << plan.summary << '\n';
    if (plan.stranded_hosts.size() > 3) {
      std::cout << "hosts that would lose every path to some hosts:";
      for (auto h : plan.stranded_hosts) std::cout << ' ' << topo.node(h).name;
      std::cout << '\n';
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
  cmd->add_flag("--json", o->json, "Print the plan as JSON");
  cmd->callback([o, &exit_code] { exit_code = runDrain(*o); });
}

}  // namespace netdiag::cli
