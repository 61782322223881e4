// How long a loss incident stays open after its fault is gone, per loss
// rate (issue #11: within --resolve-after plus the time the newest evidence
// needs to reject the rate it paged at). Each run injects link_loss on a
// random fabric link from t=60 to t=300 and runs to t=600 at the default
// plan; the incident on that link is timed from the fault's end to its
// resolution. An incident that resolves while its fault is still on is
// counted apart: it must never happen.
//
//   resolve_time [--seeds N] [--fabric SPEC] [--rates 0.001,0.01,...]

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/engine.h"
#include "planner/plan.h"
#include "sim/rng.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace {

using namespace netdiag;

constexpr double kOnset = 60, kEnd = 300, kDuration = 600;

struct Outcome {
  bool localized = false;
  bool resolved_while_on = false;
  double after_end = NAN;   // resolved_at - kEnd
  double probes_per_s = 0;  // on the faulty link, over the horizon
};

Outcome runOne(const std::string& fabric, double rate, uint64_t seed) {
  Outcome out;
  sim::Scenario sc;
  sc.file = "resolve_time";
  sc.duration_s = kDuration;
  sim::parseFabricSpec(fabric, sc.fabric);
  sim::FaultSpec f;
  f.kind = "link_loss";
  f.line = 1;
  f.link.from = "switch";
  f.link.to = "switch";
  f.loss = rate;
  f.onset = kOnset;
  f.end = kEnd;
  sc.faults.push_back(f);
  std::vector<topology::Diagnostic> errors;
  auto topo = sim::buildFabric(sc.fabric, errors);
  if (!topo) return out;
  planner::Plan plan = planner::makePlan(*topo, sc.budget, {}, seed);
  sim::SimOptions opt;
  opt.seed = seed;
  opt.ecmp_seed = sim::mix64(seed * 7919 + 17);
  auto simulator = sim::Simulator::create(*topo, sc, plan, opt, errors);
  if (!simulator) return out;
  analyzer::EngineConfig cfg;
  analyzer::Engine engine(*topo, cfg);
  simulator->run(engine);
  engine.finish();
  const auto& faults = simulator->truth().faults;
  if (faults.empty()) return out;
  const auto bad_link = topo->findDirLink(faults[0].link);
  if (!bad_link) return out;
  const topology::DirLinkId bad = *bad_link;
  for (const analyzer::Incident& i : engine.report().incidents) {
    if (i.link != bad || !i.localized_at) continue;
    out.localized = true;
    if (i.resolved_at && *i.resolved_at < kEnd) out.resolved_while_on = true;
    if (i.resolved_at && *i.resolved_at >= kEnd) out.after_end = *i.resolved_at - kEnd;
    if (i.evidence.probes) out.probes_per_s = *i.evidence.probes / cfg.horizon_s;
  }
  return out;
}

std::vector<double> parseRates(const char* text) {
  std::vector<double> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::atof(item.c_str()));
  return out;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::lround(q * static_cast<double>(v.size() - 1)))];
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 4;
  std::string fabric = "leaf-spine:spines=4,leaves=16,hosts_per_leaf=16";
  std::vector<double> rates = {0.001, 0.003, 0.005, 0.01, 0.02, 0.05, 0.2};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seeds")) {
      seeds = std::max(1, std::atoi(argv[i + 1]));
    } else if (!std::strcmp(argv[i], "--fabric")) {
      fabric = argv[i + 1];
    } else if (!std::strcmp(argv[i], "--rates")) {
      rates = parseRates(argv[i + 1]);
    } else {
      std::fprintf(stderr, "resolve_time: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const analyzer::EngineConfig cfg;
  std::printf("fabric %s, fault %g..%g s, resolve-after %g s, horizon %g s, %d seeds\n",
              fabric.c_str(), kOnset, kEnd, cfg.resolve_after_s, cfg.horizon_s, seeds);
  std::printf("%8s %5s %9s %13s %11s %11s %14s\n", "loss", "runs", "localized", "resolved-early",
              "median s", "max s", "probes/s/link");
  int early_total = 0;
  for (double rate : rates) {
    std::vector<double> after, pps;
    int localized = 0, early = 0, unresolved = 0;
    for (int s = 1; s <= seeds; ++s) {
      Outcome o = runOne(fabric, rate, 1000 + static_cast<uint64_t>(s));
      localized += o.localized;
      early += o.resolved_while_on;
      if (o.localized && !o.resolved_while_on && std::isnan(o.after_end)) ++unresolved;
      if (!std::isnan(o.after_end)) after.push_back(o.after_end);
      if (o.probes_per_s > 0) pps.push_back(o.probes_per_s);
    }
    early_total += early;
    char max_text[32];
    std::snprintf(max_text, sizeof max_text, unresolved ? ">%.0f" : "%.0f",
                  unresolved ? kDuration - kEnd : quantile(after, 1));
    std::printf("%7.2f%% %5d %9d %13d %11.0f %11s %14.0f\n", 100 * rate, seeds, localized, early,
                quantile(after, 0.5), max_text, quantile(pps, 0.5));
  }
  return early_total == 0 ? 0 : 1;
}
