// `netdiag plan TOPO`: plan probes for a fabric within a budget and report
// per-link coverage (docs/planner.md states the guarantee behind the table).

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/plan_sizing.h"
#include "planner/coverage.h"
#include "planner/fabric_index.h"
#include "planner/plan.h"
#include "planner/sizing.h"
#include "topology/loader.h"

namespace netdiag::cli {
namespace {

using nlohmann::json;
using namespace netdiag::planner;
using topology::Topology;

struct PlanOptions {
  std::string file;
  Budget budget;
  uint64_t seed = 1;
  std::vector<std::string> drain;
  std::vector<std::string> absent;
  CoverageTarget target;
  double max_probes_per_second = kDefaultMaxProbesPerSecond;
  bool json = false;
  std::string output_plan;
};

std::string num(double v, int precision = 3) {
  std::ostringstream s;
  s.precision(precision);
  s << v;
  return s.str();
}

// A link given as "X:p->Y:q" or as one of its ports "X:p".
std::optional<LinkId> parseLink(const Topology& t, const std::string& s) {
  if (auto d = t.findDirLink(s)) return Topology::linkOf(*d);
  if (auto p = t.findPort(s); p && t.port(*p).link != topology::kNone) return t.port(*p).link;
  return std::nullopt;
}

// The plan for agents: port references and flows, streamed (a 100k-port
// plan has millions of flows; building one json object would triple memory).
void writePlanJson(const Topology& t, const Plan& plan, std::ostream& out) {
  const Budget& b = plan.budget;
  out << "{\"version\": " << plan.version << ", \"seed\": " << plan.seed
      << ", \"budget\": {\"probes_per_second\": " << json(b.probes_per_second).dump()
      << ", \"flows_per_peer\": " << b.flows_per_peer << ", \"peers\": " << plan.peers
      << ", \"window_s\": " << json(b.window_s).dump()
      << ", \"first_source_port\": " << b.first_source_port << "},\n \"ports\": [";
  for (size_t i = 0; i < plan.ports.size(); ++i) {
    const PortPlan& pp = plan.ports[i];
    out << (i ? ",\n  " : "\n  ") << "{\"src\": " << json(t.portRef(pp.src)).dump()
        << ", \"probes_per_second_per_flow\": " << json(pp.probes_per_second_per_flow).dump()
        << ", \"flows\": [";
    for (size_t j = 0; j < pp.flows.size(); ++j) {
      out << (j ? ", " : "") << "{\"dst\": " << json(t.portRef(pp.flows[j].dst)).dump()
          << ", \"flow\": " << pp.flows[j].source_port << '}';
    }
    out << "]}";
  }
  out << "\n ]}\n";
}

json tierJson(const TierCoverage& tc) {
  return {{"tier", tc.name},
          {"links", tc.links},
          {"below_target", tc.below},
          {"min_flows_per_minute", tc.min_flows},
          {"median_flows_per_minute", tc.median_flows},
          {"min_probes_per_minute", tc.min_probes_per_minute},
          {"median_probes_per_minute", tc.median_probes_per_minute},
          {"min_probability_at_least_m", tc.min_probability}};
}

int runPlan(const PlanOptions& o) {
  auto problems = validate(o.budget);
  if (o.target.min_flows < 1) problems.push_back("--min-flows must be >= 1");
  if (!(o.max_probes_per_second > 0) || o.max_probes_per_second > kMaxProbesPerSecond) {
    problems.push_back("--max-probes-per-second must be in (0, " + num(kMaxProbesPerSecond, 6) +
                       "]");
  }
  if (!problems.empty()) {
    for (const auto& p : problems) std::cerr << "netdiag plan: " << p << '\n';
    return kExitError;
  }
  auto load = std::make_unique<topology::LoadResult>(topology::loadTopologyFile(o.file));
  if (!load->ok()) {
    for (const auto& d : load->errors) std::cerr << d.str() << '\n';
    std::cerr << o.file << ": " << withCommas(load->errors.size())
              << " error(s); fix them and run again\n";
    return kExitError;
  }
  const Topology& t = load->topology;
  Constraints c;
  bool bad = false;
  for (const std::string& d : o.drain) {
    if (auto l = parseLink(t, d)) {
      c.drained_links.push_back(*l);
    } else {
      std::cerr << "netdiag plan: --drain '" << d
                << "' is not a link (X:p->Y:q) or a linked port (X:p) of " << o.file << '\n';
      bad = true;
    }
  }
  for (const std::string& h : o.absent) {
    auto n = t.findNode(h);
    if (!n || !t.node(*n).isHost()) {
      std::cerr << "netdiag plan: --absent '" << h << "' is not a host of " << o.file << '\n';
      bad = true;
    } else {
      c.absent_hosts.push_back(*n);
    }
  }
  if (bad) return kExitError;

  auto start = std::chrono::steady_clock::now();
  FabricIndex idx(t, c);
  SizedPlan sized = sizePlan(idx, o.budget, o.seed, {o.target, o.max_probes_per_second}, 10);
  const Plan& plan = sized.plan;
  const CoverageReport& r = sized.coverage;
  const Sizing& sizing = sized.sizing;
  auto done = std::chrono::steady_clock::now();
  std::cerr << "netdiag plan: planned and covered in "
            << num(std::chrono::duration<double>(done - start).count()) << " s\n";

  if (!o.output_plan.empty()) {
    std::string err =
        writeFileAtomically(o.output_plan, [&](std::ostream& out) { writePlanJson(t, plan, out); });
    if (!err.empty()) {
      std::cerr << "netdiag plan: " << err << '\n';
      return kExitError;
    }
  }

  const size_t flows = plan.flowCount();
  const double rate = plan.budget.probes_per_second;
  const double per_flow = plan.ports.empty() ? 0 : plan.ports.front().probes_per_second_per_flow;
  if (o.json) {
    json tiers = json::array();
    for (const auto& tc : r.tiers) tiers.push_back(tierJson(tc));
    json weakest = json::array();
    for (DirLinkId d : r.weakest) {
      weakest.push_back({{"link", t.dirLinkName(d)},
                         {"flows_per_minute", r.flows[d]},
                         {"probes_per_minute", r.probes_per_minute[d]},
                         {"probability_at_least_m", r.p_at_least[d]},
                         {"below_target", r.status[d] == LinkStatus::kBelow}});
    }
    json out = {{"file", o.file},
                {"budget",
                 {{"probes_per_second", rate},
                  {"base_probes_per_second", sizing.base_probes_per_second},
                  {"max_probes_per_second", sizing.cap_probes_per_second},
                  {"flows_per_peer", o.budget.flows_per_peer},
                  {"peers", plan.peers},
                  {"peers_derived", o.budget.peers == 0},
                  {"window_s", o.budget.window_s}}},
                {"plan",
                 {{"version", plan.version},
                  {"seed", plan.seed},
                  {"ports", plan.ports.size()},
                  {"flows", flows},
                  {"unroutable_flows", r.unroutable_flows}}},
                {"target",
                 {{"min_flows", o.target.min_flows},
                  {"max_miss_probability", o.target.max_miss_probability},
                  {"required_mean_flows", r.required_mean_flows},
                  {"min_probes_per_minute", o.target.min_probes_per_minute}}},
                {"coverage",
                 {{"directed_links", r.links},
                  {"excluded", r.excluded},
                  {"below_target", r.below},
                  {"min_flows_per_minute", r.min_flows},
                  {"median_flows_per_minute", r.median_flows},
                  {"min_probes_per_minute", r.min_probes_per_minute},
                  {"median_probes_per_minute", r.median_probes_per_minute},
                  {"min_probability_at_least_m", r.min_probability},
                  {"union_bound_miss", r.union_miss},
                  {"below_target_flows", r.below_flows},
                  {"below_target_probes", r.below_probes},
                  {"tiers", tiers},
                  {"weakest", weakest}}},
                {"sizing",
                 {{"base_probes_per_second", sizing.base_probes_per_second},
                  {"needed_probes_per_second", sizing.needed_probes_per_second},
                  {"max_probes_per_second", sizing.cap_probes_per_second},
                  {"served_probes_per_second", sizing.served_probes_per_second},
                  {"below_target_at_base", sizing.below_at_base},
                  {"raised", sizing.raised()},
                  {"capped", sizing.capped()}}}};
    std::cout << out.dump(2) << '\n';
    return r.below == 0 ? kExitOk : kExitFindings;
  }

  std::cout << "fabric      " << (t.name.empty() ? o.file : t.name) << " ("
            << withCommas(idx.hostPorts().size()) << " plannable host ports, "
            << withCommas(t.dirLinkCount()) << " directed links)\n"
            << "budget      " << num(rate) << " probes/s per host port"
            << (sizing.raised() ? " (raised from " + num(sizing.base_probes_per_second) + ")" : "")
            << ", " << o.budget.flows_per_peer << " flows per peer, " << plan.peers << " peers"
            << (o.budget.peers == 0 ? " (derived)" : "") << ", " << num(o.budget.window_s)
            << " s windows\n"
            << "plan        version " << plan.version << ", seed " << plan.seed << ": "
            << withCommas(plan.ports.size()) << " ports, " << withCommas(flows) << " flows, "
            << num(per_flow) << " probes/s per flow\n"
            << "target      >= " << o.target.min_flows << " distinct flows per directed link "
            << "with P >= 1 - " << num(o.target.max_miss_probability)
            << " (expected >= " << num(r.required_mean_flows)
            << "), >= " << withCommas(static_cast<uint64_t>(o.target.min_probes_per_minute))
            << " probes/min\n\n";
  char line[200];
  std::snprintf(line, sizeof line, "%-16s %9s %10s %10s %12s %12s %11s %7s\n", "TIER", "LINKS",
                "MIN FLOWS", "MED FLOWS", "MIN PROBES", "MED PROBES", "MIN P(>=m)", "BELOW");
  std::cout << line;
  for (const TierCoverage& tc : r.tiers) {
    std::snprintf(line, sizeof line, "%-16s %9s %10.1f %10.1f %12.0f %12.0f %11.3g %7s\n",
                  tc.name.c_str(), withCommas(tc.links).c_str(), tc.min_flows, tc.median_flows,
                  tc.min_probes_per_minute, tc.median_probes_per_minute, tc.min_probability,
                  withCommas(tc.below).c_str());
    std::cout << line;
  }
  std::cout << "(flows and probes per minute per directed link, expected; m = "
            << o.target.min_flows << ")\n\nweakest directed links:\n";
  for (DirLinkId d : r.weakest) {
    std::snprintf(line, sizeof line, "  %8.1f flows %9.0f probes/min  P(>=m) %-9.3g %s", r.flows[d],
                  r.probes_per_minute[d], r.p_at_least[d],
                  r.status[d] == LinkStatus::kBelow ? "BELOW " : "");
    std::cout << line << t.dirLinkName(d) << '\n';
  }
  std::cout << '\n';
  for (const std::string& l : sizingLines(sizing, "--max-probes-per-second")) {
    std::cout << "sizing      " << l << '\n';
  }
  if (r.excluded > 0) {
    std::cout << withCommas(r.excluded)
              << " directed links excluded (drained, or access links of absent hosts)\n";
  }
  if (r.unroutable_flows > 0) {
    std::cout << withCommas(r.unroutable_flows) << " planned flows have no path\n";
  }
  if (r.below == 0) {
    std::cout << "coverage ok: all " << withCommas(r.links)
              << " directed links meet the target; P(some link gets < " << o.target.min_flows
              << " flows) <= " << num(r.union_miss) << " (union bound)\n";
    return kExitOk;
  }
  std::cout << "coverage BELOW TARGET on " << withCommas(r.below) << " of " << withCommas(r.links)
            << " directed links\n";
  return kExitFindings;
}

}  // namespace

void addPlanCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<PlanOptions>();
  auto* plan = app.add_subcommand(
      "plan",
      "Plan probes (peers and flows per host port) within a budget and report per-link "
      "coverage (exit 1: some link below the coverage target)");
  plan->add_option("TOPO", o->file, "Topology file (YAML or JSON)")->required();
  plan->add_option("--probes-per-second", o->budget.probes_per_second,
                   "Probes per second per host port (the base; raised within "
                   "--max-probes-per-second where the coverage target needs it)")
      ->capture_default_str();
  plan->add_option("--max-probes-per-second", o->max_probes_per_second,
                   "Cap of the raised rate (at or below --probes-per-second: never raised)")
      ->capture_default_str();
  plan->add_option("--flows-per-peer", o->budget.flows_per_peer,
                   "Flows (UDP source ports) per peer")
      ->capture_default_str();
  plan->add_option("--peers", o->budget.peers, "Peers per host port (0: derive from the fabric)")
      ->capture_default_str();
  plan->add_option("--window", o->budget.window_s, "Seconds each probe record summarizes")
      ->capture_default_str();
  plan->add_option("--seed", o->seed, "Seed of the deterministic peer choice")
      ->capture_default_str();
  plan->add_option("--drain", o->drain,
                   "A drained link (X:p->Y:q or X:p), left out of the ECMP graph; repeatable");
  plan->add_option("--absent", o->absent,
                   "A host that neither probes nor is probed (node name); repeatable");
  plan->add_option("--min-flows", o->target.min_flows,
                   "Coverage target: distinct flows per directed link (m)")
      ->capture_default_str();
  plan->add_option("--max-miss", o->target.max_miss_probability,
                   "Coverage target: largest P(fewer than m flows) per link")
      ->capture_default_str();
  plan->add_option("--min-probes-per-minute", o->target.min_probes_per_minute,
                   "Coverage target: probes crossing each directed link per minute")
      ->capture_default_str();
  plan->add_flag("--json", o->json, "Print the report as JSON");
  plan->add_option("--output-plan", o->output_plan,
                   "Write the plan (port references and flows) as JSON for agents ('-': stdout)");
  plan->callback([o, &exit_code] { exit_code = runPlan(*o); });
}

}  // namespace netdiag::cli
