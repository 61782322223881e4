// The baseline localizers (007, Boolean tomography, NetBouncer) on a small
// simulated leaf-spine fabric: each finds a 5 % lossy leaf->spine link, and
// a fault-free run with background loss shows how many false positives each
// raises. Also the shared pass loop and incident lifecycle on hand-made
// records.

#include <cstdio>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "bench/baselines/boolean_tomography.h"
#include "bench/baselines/netbouncer.h"
#include "bench/baselines/vote007.h"
#include "planner/plan.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "telemetry/tee.h"
#include "topology/generators.h"

namespace netdiag::baselines {
namespace {

using topology::DirLinkId;
using topology::Role;
using topology::Topology;

DirLinkId firstLeafToSpine(const Topology& t) {
  for (DirLinkId d = 0; d < t.dirLinkCount(); ++d) {
    if (t.node(t.dirSrcNode(d)).role == Role::kLeaf &&
        t.node(t.dirDstNode(d)).role == Role::kSpine) {
      return d;
    }
  }
  return topology::kNone;
}

struct SimRun {
  std::vector<std::unique_ptr<WindowedLocalizer>> baselines;
};

// Simulates `scenario` on `topo` into the three baselines with defaults.
SimRun simulate(const Topology& topo, const sim::Scenario& scenario) {
  SimRun run;
  run.baselines.push_back(std::make_unique<Vote007>(topo));
  run.baselines.push_back(std::make_unique<BooleanTomography>(topo));
  run.baselines.push_back(std::make_unique<NetBouncerFit>(topo));
  planner::Plan plan = planner::makePlan(topo, scenario.budget, {}, 1);
  std::vector<topology::Diagnostic> errors;
  auto sim = sim::Simulator::create(topo, scenario, plan, {}, errors);
  EXPECT_NE(sim, nullptr) << (errors.empty() ? "" : errors[0].str());
  if (!sim) return run;
  telemetry::TeeSink fan;
  for (auto& b : run.baselines) fan.add(b.get());
  sim->run(fan);
  for (auto& b : run.baselines) b->finish();
  return run;
}

sim::Scenario baseScenario() {
  sim::Scenario s;
  s.file = "baselines_test";
  s.name = "baselines";
  s.duration_s = 200;
  s.noise.path_unknown = 0;
  return s;
}

Topology smallFabric() {
  topology::LeafSpineParams p;  // 4 spines, 8 leaves, 8 hosts per leaf
  return topology::generateLeafSpine(p);
}

void printReport(const Topology& topo, const WindowedLocalizer& b) {
  const auto report = b.report();
  std::printf("[%s] %zu incident(s); records %llu, skipped (no path) %llu, passes %llu\n",
              b.method().c_str(), report.incidents.size(),
              static_cast<unsigned long long>(b.stats().probes),
              static_cast<unsigned long long>(b.stats().skipped_no_path),
              static_cast<unsigned long long>(b.stats().passes));
  for (const auto& inc : report.incidents) {
    std::printf("  %s %s localized_at=%.0f resolved_at=%s loss=%.4f conf=%.3f\n", inc.id.c_str(),
                topo.dirLinkName(inc.link).c_str(), inc.localized_at.value_or(-1),
                inc.resolved_at ? std::to_string(*inc.resolved_at).c_str() : "null", inc.loss_ratio,
                inc.confidence);
  }
}

TEST(Baselines, EachLocalizesALossyLeafToSpineLink) {
  const Topology topo = smallFabric();
  const DirLinkId bad = firstLeafToSpine(topo);
  ASSERT_NE(bad, topology::kNone);
  sim::Scenario s = baseScenario();
  sim::FaultSpec f;
  f.kind = "link_loss";
  f.line = 1;
  f.link.exact = topo.dirLinkName(bad);
  f.loss = 0.05;
  f.onset = 20;
  s.faults.push_back(f);

  SimRun run = simulate(topo, s);
  ASSERT_EQ(run.baselines.size(), 3u);
  std::printf("fault on %s from t=20\n", topo.dirLinkName(bad).c_str());
  for (const auto& b : run.baselines) {
    printReport(topo, *b);
    const auto report = b->report();
    bool found = false;
    int false_positives = 0;
    for (const auto& inc : report.incidents) {
      const bool on_link = Topology::linkOf(inc.link) == Topology::linkOf(bad);
      if (on_link && inc.localized_at && *inc.localized_at >= f.onset) {
        found = true;
      } else if (!on_link) {
        ++false_positives;
      }
    }
    EXPECT_TRUE(found) << b->method() << " did not localize " << topo.dirLinkName(bad);
    // Side effects of the fault on other links. Observed over sim seeds 1-4:
    // 007 0-1, Boolean tomography 0, NetBouncer (lambda 0.01) 3-5, all on
    // access links of the faulty leaf's hosts: the least-squares fit spreads
    // the residual of the lossy paths onto links few paths cross (a larger
    // lambda trades them for later localization: 0.1 gives 0-2, 1.0 gives 0
    // but localizes 20-40 s later). This seed gives NetBouncer 3.
    EXPECT_LE(false_positives, 6) << b->method();
  }
}

TEST(Baselines, FalsePositivesWithoutFault) {
  const Topology topo = smallFabric();
  sim::Scenario s = baseScenario();
  s.noise.background_loss = 1e-5;
  SimRun run = simulate(topo, s);
  ASSERT_EQ(run.baselines.size(), 3u);
  for (const auto& b : run.baselines) {
    printReport(topo, *b);
    // Observed over sim seeds 1-4: 007 0-1, Boolean tomography 0, NetBouncer 0.
    EXPECT_LE(b->report().incidents.size(), 3u) << b->method();
  }
}

// Hand-made records: the pass loop labels decisions with the newest t
// ingested, opens an incident once, and resolves it after 60 s of silence.
TEST(Baselines, IncidentLifecycle) {
  const Topology topo = smallFabric();
  const DirLinkId bad = firstLeafToSpine(topo);
  const topology::NodeId leaf = topo.dirSrcNode(bad);
  const topology::NodeId spine = topo.dirDstNode(bad);
  std::vector<DirLinkId> access;  // host -> leaf
  for (DirLinkId d = 0; d < topo.dirLinkCount(); ++d) {
    if (topo.dirDstNode(d) == leaf && topo.node(topo.dirSrcNode(d)).isHost()) access.push_back(d);
  }
  ASSERT_GE(access.size(), 3u);
  // Three flows from three hosts of that leaf, each to a host of a different
  // leaf: `bad` is the only link all three share.
  std::vector<DirLinkId> down, out;  // spine -> leaf, leaf -> host
  for (DirLinkId d : topo.outLinks(spine)) {
    if (topo.dirDstNode(d) == leaf || topo.node(topo.dirDstNode(d)).role != Role::kLeaf) continue;
    for (DirLinkId e : topo.outLinks(topo.dirDstNode(d))) {
      if (topo.node(topo.dirDstNode(e)).isHost()) {
        down.push_back(d);
        out.push_back(e);
        break;
      }
    }
    if (down.size() == 3) break;
  }
  ASSERT_EQ(down.size(), 3u);

  Vote007 v(topo);
  // Lossy from t=5 to t=30, clean afterwards until t=150.
  for (double t = 5; t <= 150; t += 5) {
    for (size_t i = 0; i < 3; ++i) {
      telemetry::ProbeRecord r;
      r.t = t;
      r.src = topo.dirSrcPort(access[i]);
      r.dst = topo.dirDstPort(out[i]);
      r.flow = 40000 + i;
      r.sent = 5;
      r.lost = t <= 30 ? 2 : 0;
      r.path = {access[i], bad, down[i], out[i]};
      v.onProbe(r);
    }
  }
  v.finish();
  const auto report = v.report();
  ASSERT_EQ(report.incidents.size(), 1u);
  const auto& inc = report.incidents[0];
  EXPECT_EQ(inc.link, bad);  // the only link with votes from >= 3 flows
  EXPECT_EQ(inc.kind, analyzer::IncidentKind::kLinkLoss);
  EXPECT_DOUBLE_EQ(inc.opened_at, 5);
  ASSERT_TRUE(inc.localized_at.has_value());
  EXPECT_DOUBLE_EQ(*inc.localized_at, 5);
  // Last blamed at the pass labeled 85 (the window still holds t=30's loss
  // until t=90), resolved 60 s later.
  ASSERT_TRUE(inc.resolved_at.has_value());
  EXPECT_DOUBLE_EQ(*inc.resolved_at, 145);
  EXPECT_EQ(report.generated_at, 150);
  // The report serializes as formats.md §3.
  const auto json = analyzer::reportToJson(topo, report);
  EXPECT_EQ(json["incidents"][0]["link"], topo.dirLinkName(bad));
}

}  // namespace
}  // namespace netdiag::baselines
