// The simulator's deployment knobs the accuracy sweep varies (docs/simulator.md):
// a busy host's noise touches every flow to and from that host and no other,
// per-flow path knowledge holds across windows, the CRC hash family routes
// differently but deterministically, peers are re-drawn on schedule (and a
// closed loop may replace the plan), and the
// leaf-spine with unequal parallel-link counts is a valid fabric.

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/score.h"
#include "sim/simulator.h"
#include "topology/generators.h"
#include "topology/loader.h"
#include "topology/writer.h"

namespace netdiag::sim {
namespace {

using ::testing::HasSubstr;
using namespace topology;
using telemetry::ProbeRecord;

struct Collect : telemetry::RecordSink {
  std::vector<ProbeRecord> probes;
  void onProbe(const ProbeRecord& r) override { probes.push_back(r); }
  void onPort(const telemetry::PortRecord&) override {}
  void onLldp(const telemetry::LldpRecord&) override {}
};

planner::Plan allPairs(const Topology& t, int flows, double probes_per_flow_per_s) {
  planner::Plan plan;
  std::vector<PortId> hosts;
  for (PortId p = 0; p < t.portCount(); ++p) {
    if (t.node(t.port(p).node).isHost()) hosts.push_back(p);
  }
  for (PortId s : hosts) {
    planner::PortPlan pp;
    pp.src = s;
    pp.probes_per_second_per_flow = probes_per_flow_per_s;
    for (PortId d : hosts) {
      if (d == s) continue;
      for (int f = 0; f < flows; ++f) pp.flows.push_back({d, static_cast<uint16_t>(40000 + f)});
    }
    plan.ports.push_back(pp);
  }
  return plan;
}

Topology fabric(int spines = 2, int leaves = 4, int hosts = 4) {
  return generateLeafSpine({.spines = spines,
                            .leaves = leaves,
                            .hosts_per_leaf = hosts,
                            .nics_per_host = 1,
                            .parallel = 1,
                            .addresses = false});
}

Scenario quiet(double duration) {
  Scenario s;
  s.file = "test.yaml";
  s.duration_s = duration;
  s.noise.background_loss = 0;
  s.noise.missing_records = 0;
  s.noise.path_unknown = 0;
  s.noise.path_partial = 0;
  s.noise.lossy_path_failure = 0;
  s.noise.counter_reset = false;
  return s;
}

std::vector<ProbeRecord> simulate(const Topology& t, const Scenario& s, const planner::Plan& plan,
                                  SimOptions o = {}, Truth* truth = nullptr) {
  std::vector<Diagnostic> errors;
  auto sim = Simulator::create(t, s, plan, o, errors);
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors[0].str());
  Collect c;
  if (!sim) return {};
  sim->run(c);
  if (truth) *truth = sim->truth();
  return c.probes;
}

using FlowKey = std::tuple<PortId, PortId, uint32_t>;
FlowKey keyOf(const ProbeRecord& p) { return {p.src, p.dst, p.flow}; }

TEST(BusyHost, LosesRepliesOfEveryFlowToAndFromTheHostAndNoOther) {
  Topology t = fabric();
  Scenario s = quiet(300);
  FaultSpec busy;
  busy.kind = "busy_host";
  busy.host.exact = "host6";
  busy.loss = 0.03;   // replies dropped
  busy.delay = 0.02;  // answered past the probe timeout
  busy.latency_us = 400;
  busy.onset = 60;
  busy.end = 240;
  busy.line = 1;
  s.faults.push_back(busy);
  Truth truth;
  auto probes = simulate(t, s, allPairs(t, 2, 10), {}, &truth);
  const NodeId h = *t.findNode("host6");
  std::map<FlowKey, std::pair<double, double>> per_flow;  // sent, lost while busy
  double other_lost = 0, lost_fwd = 0, outside = 0;
  for (const ProbeRecord& p : probes) {
    const bool touches = t.port(p.src).node == h || t.port(p.dst).node == h;
    const bool during = p.t - 5 >= 60 && p.t <= 240;
    if (!touches) {
      other_lost += p.lost;
      continue;
    }
    if (!during) {
      if (p.t <= 60 || p.t - 5 >= 240) outside += p.lost;  // windows that overlap it partly aside
      continue;
    }
    ASSERT_TRUE(p.hasOneWay() || p.lost == p.sent);
    if (p.hasOneWay()) lost_fwd += *p.lost_fwd;  // the responder counted them
    auto& [sent, lost] = per_flow[keyOf(p)];
    sent += p.sent;
    lost += p.lost;
  }
  EXPECT_EQ(other_lost, 0);  // flows between other hosts are untouched
  EXPECT_EQ(outside, 0);     // and the host's own flows outside the busy span
  EXPECT_EQ(lost_fwd, 0);    // everything shows as lost on the way back
  // Every flow to and from the host (15 peers x 2 flows, both ways) loses
  // about 5 %, alike.
  ASSERT_EQ(per_flow.size(), 2u * 15 * 2);
  double sent_all = 0, lost_all = 0;
  for (const auto& [k, v] : per_flow) {
    EXPECT_GT(v.second, 0) << std::get<0>(k) << "->" << std::get<1>(k);
    sent_all += v.first;
    lost_all += v.second;
  }
  EXPECT_NEAR(lost_all / sent_all, 0.05, 4 * std::sqrt(0.05 * 0.95 / sent_all));
  // The truth names it as a trap on the host; it is not an item to find.
  ASSERT_EQ(truth.traps.size(), 1u);
  EXPECT_EQ(truth.traps[0].kind, "busy_host");
  EXPECT_EQ(truth.traps[0].node, "host6");
}

TEST(BusyHost, IsNoItemAndExplainsALinkIncidentOnItsAccessLink) {
  Truth truth;
  TruthItem busy;
  busy.id = "t1";
  busy.kind = "busy_host";
  busy.node = "host6";
  busy.onset = 60;
  truth.traps.push_back(busy);
  IncidentReport report;
  Incident inc;
  inc.id = "inc-1";
  inc.kind = "link_loss";
  inc.link = "host6:eth0->leaf2:swp2";
  inc.localized_at = 100;
  report.incidents.push_back(inc);
  ScoreResult r = scoreReport(truth, report);
  EXPECT_EQ(r.items.size(), 0u);
  EXPECT_EQ(r.traps, 0u);
  EXPECT_EQ(r.recall, 1.0);
  ASSERT_EQ(r.false_positives.size(), 1u);
  EXPECT_THAT(r.false_positives[0].reason, HasSubstr("busy host host6"));
}

TEST(PathKnowledge, PerFlowIsTheSameInEveryWindow) {
  Topology t = fabric();
  Scenario s = quiet(200);
  s.noise.path_knowledge = "flow";
  s.noise.path_unknown = 0.4;
  s.noise.path_partial = 0.2;
  s.noise.reply_path_known = 0.5;
  s.noise.background_loss = 0.02;  // some records lose every probe (one per window)
  auto probes = simulate(t, s, allPairs(t, 2, 0.2));
  struct Seen {
    std::set<size_t> path_len;
    int with = 0, without = 0, reply = 0, no_reply = 0;
  };
  std::map<FlowKey, Seen> flows;
  size_t all_lost = 0;
  for (const ProbeRecord& p : probes) {
    Seen& f = flows[keyOf(p)];
    (p.path.empty() ? f.without : f.with) += 1;
    if (!p.path.empty()) f.path_len.insert(p.path.size() * 2 + p.path_partial);
    if (p.lost == p.sent) {
      ++all_lost;
      EXPECT_TRUE(p.reply_path.empty());  // nothing came back
      continue;
    }
    (p.reply_path.empty() ? f.no_reply : f.reply) += 1;
  }
  EXPECT_GT(all_lost, 0u);
  size_t known = 0, reply = 0;
  for (const auto& [k, f] : flows) {
    EXPECT_TRUE(f.with == 0 || f.without == 0) << "flow with a path in some windows only";
    EXPECT_LE(f.path_len.size(), 1u) << "flow cut to different prefixes";
    EXPECT_TRUE(f.reply == 0 || f.no_reply == 0) << "reply path in some windows only";
    known += f.with > 0;
    reply += f.reply > 0;
  }
  const double n = static_cast<double>(flows.size());  // 16 x 15 x 2 = 480
  ASSERT_EQ(flows.size(), 480u);
  EXPECT_NEAR(known / n, 0.6, 4 * std::sqrt(0.24 / n));
  EXPECT_NEAR(reply / n, 0.5, 4 * std::sqrt(0.25 / n));
}

TEST(PathKnowledge, PerRecordDefaultVariesAcrossWindows) {
  Topology t = fabric();
  Scenario s = quiet(200);
  s.noise.path_unknown = 0.4;
  auto probes = simulate(t, s, allPairs(t, 2, 2));
  std::map<FlowKey, std::pair<int, int>> flows;
  for (const ProbeRecord& p : probes)
    (p.path.empty() ? flows[keyOf(p)].second : flows[keyOf(p)].first)++;
  size_t mixed = 0;
  for (const auto& [k, v] : flows) mixed += v.first > 0 && v.second > 0;
  EXPECT_GT(mixed, flows.size() / 2);
}

std::map<FlowKey, std::vector<DirLinkId>> pathsOf(const std::vector<ProbeRecord>& probes) {
  std::map<FlowKey, std::vector<DirLinkId>> out;
  for (const ProbeRecord& p : probes) {
    if (p.t <= 10) out[keyOf(p)] = p.path;
  }
  return out;
}

TEST(EcmpHash, CrcFamilyRoutesDifferentlyButDeterministically) {
  Topology t = fabric(4, 4, 8);
  Scenario mix = quiet(10);
  Scenario crc = mix;
  crc.ecmp_hash = "crc";
  planner::Plan plan = allPairs(t, 4, 1);
  SimOptions o{.seed = 3, .ecmp_seed = 11};
  auto a = pathsOf(simulate(t, crc, plan, o));
  auto b = pathsOf(simulate(t, crc, plan, o));
  auto m = pathsOf(simulate(t, mix, plan, o));
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), m.size());
  size_t differ = 0;
  for (const auto& [k, p] : a) differ += m.at(k) != p;
  EXPECT_GT(differ, a.size() / 3);  // 4 uplinks: 3/4 differ by chance
  // Another ECMP seed moves flows too, and every leaf uplink still carries flows.
  auto c = pathsOf(simulate(t, crc, plan, {.seed = 3, .ecmp_seed = 12}));
  EXPECT_NE(a, c);
  std::map<DirLinkId, int> uplinks;
  for (const auto& [k, p] : a) {
    if (p.size() == 4) ++uplinks[p[1]];
  }
  EXPECT_EQ(uplinks.size(), 16u);
}

TEST(PeerRedraw, NewPeersEveryPeriodAndTheSamePlanWithout) {
  Topology t = fabric(2, 8, 4);
  Scenario s = quiet(200);
  planner::Budget budget;
  budget.peers = 3;
  budget.flows_per_peer = 1;
  budget.probes_per_second = 6;
  planner::Plan plan = planner::makePlan(t, budget, {}, 5);
  auto pairsIn = [](const std::vector<ProbeRecord>& probes, double lo, double hi) {
    std::set<std::pair<PortId, PortId>> out;
    for (const ProbeRecord& p : probes) {
      if (p.t - p.window_s >= lo && p.t <= hi) out.insert({p.src, p.dst});
    }
    return out;
  };
  auto fixed = simulate(t, s, plan);
  EXPECT_EQ(pairsIn(fixed, 0, 60), pairsIn(fixed, 60, 200));
  s.redraw_s = 60;
  auto redrawn = simulate(t, s, plan);
  auto first = pairsIn(redrawn, 0, 60), second = pairsIn(redrawn, 60, 120);
  EXPECT_EQ(first, pairsIn(fixed, 0, 60));  // epoch 0 is the given plan
  EXPECT_NE(first, second);
  EXPECT_NE(second, pairsIn(redrawn, 120, 180));
  EXPECT_EQ(second.size(), first.size());
}

TEST(PeerRedraw, AClosedLoopPlanReplacesTheBaseFromTheWindowItIsAskedFor) {
  Topology t = fabric(2, 8, 4);
  Scenario s = quiet(120);
  s.redraw_s = 60;
  planner::Budget budget;
  budget.peers = 2;
  budget.flows_per_peer = 1;
  budget.probes_per_second = 4;
  planner::Plan plan = planner::makePlan(t, budget, {}, 5);
  // From t = 30 on, each base plan with one more flow on its first port.
  planner::Plan extra;
  const planner::Plan* extended_from = nullptr;
  uint64_t extended_seed = 0;
  std::vector<double> asked;
  SimOptions o;
  o.plan_at = [&](const planner::Plan& base, double at) -> const planner::Plan* {
    asked.push_back(at);
    if (at < 30) return nullptr;
    if (extended_from != &base || extended_seed != base.seed) {
      extra = base;
      extra.version = base.version + 1;
      extra.ports[0].flows.push_back({extra.ports[1].src, 50000});
      extended_from = &base;
      extended_seed = base.seed;
    }
    return &extra;
  };
  const PortId src = plan.ports[0].src;
  std::vector<double> windows;  // starts of the added flow's windows
  for (const ProbeRecord& p : simulate(t, s, plan, o)) {
    if (p.src == src && p.flow == 50000) windows.push_back(p.t - p.window_s);
  }
  ASSERT_FALSE(asked.empty());
  EXPECT_TRUE(std::is_sorted(asked.begin(), asked.end()));
  ASSERT_FALSE(windows.empty());
  EXPECT_GE(*std::min_element(windows.begin(), windows.end()), 30 - 1e-9);
  // Into the second epoch too: the redrawn base is extended again.
  EXPECT_GT(*std::max_element(windows.begin(), windows.end()), 60);
  // Without the hook, the same run has no such flow.
  for (const ProbeRecord& p : simulate(t, s, plan)) EXPECT_NE(p.flow, 50000u);
}

TEST(Fabric, LeafSpineWithUnequalParallelLinksValidatesAndRoundTrips) {
  LeafSpineParams p{.spines = 3, .leaves = 4, .hosts_per_leaf = 2, .parallel = 1};
  p.parallel_max = 3;
  EXPECT_TRUE(validate(p).empty());
  Topology t = generateLeafSpine(p);
  std::map<std::pair<NodeId, NodeId>, int> per_pair;
  for (DirLinkId d = 0; d < t.dirLinkCount(); ++d) {
    const Node& a = t.node(t.dirSrcNode(d));
    if (a.role == Role::kLeaf && t.node(t.dirDstNode(d)).role == Role::kSpine) {
      ++per_pair[{t.dirSrcNode(d), t.dirDstNode(d)}];
    }
  }
  std::set<int> counts;
  for (const auto& [k, n] : per_pair) counts.insert(n);
  EXPECT_EQ(per_pair.size(), 12u);
  EXPECT_EQ(counts, (std::set<int>{1, 2, 3}));
  // Written as formats.md §1 and loaded back: valid, the same links.
  std::ostringstream yaml;
  writeYaml(t, yaml);
  std::istringstream in(yaml.str());
  LoadResult back = loadTopology(in, "uneven.yaml");
  ASSERT_TRUE(back.ok()) << (back.errors.empty() ? "" : back.errors[0].str());
  EXPECT_EQ(back.topology.linkCount(), t.linkCount());
  // The fabric spec reaches it, and a bad count is refused.
  FabricSpec spec;
  EXPECT_TRUE(parseFabricSpec("leaf-spine:parallel=2,parallel-max=4", spec).empty());
  EXPECT_EQ(spec.leaf_spine.parallel_max, 4);
  p.parallel_max = 0;
  EXPECT_TRUE(validate(p).empty());
  p.parallel = 2;
  p.parallel_max = 1;
  EXPECT_FALSE(validate(p).empty());
  // Equal counts are numbered as before.
  LeafSpineParams eq{.spines = 2, .leaves = 2, .hosts_per_leaf = 1, .parallel = 2};
  Topology e = generateLeafSpine(eq);
  EXPECT_TRUE(e.findDirLink("leaf2:swp5->spine2:swp4").has_value());
}

TEST(Scenario, ParsesTheSweepKnobs) {
  std::istringstream in(R"(
ecmp_hash: crc
budget: {peers: 4, flows_per_peer: 2, probes_per_second: 16, redraw_s: 180}
noise: {path_knowledge: flow, path_unknown: 0.3}
faults:
  - {kind: busy_host, host: random, drop: 0.02, delay: 0.01, onset: 30, end: 200}
)");
  ScenarioLoad load = loadScenario(in, "s.yaml");
  ASSERT_TRUE(load.ok()) << load.errors[0].str();
  EXPECT_EQ(load.scenario.ecmp_hash, "crc");
  EXPECT_EQ(load.scenario.redraw_s, 180);
  EXPECT_EQ(load.scenario.noise.path_knowledge, "flow");
  ASSERT_EQ(load.scenario.faults.size(), 1u);
  EXPECT_EQ(load.scenario.faults[0].loss, 0.02);
  EXPECT_EQ(load.scenario.faults[0].delay, 0.01);
  std::istringstream bad(R"(
ecmp_hash: md5
noise: {path_knowledge: sometimes}
faults:
  - {kind: busy_host, drop: 0.7, delay: 0.7}
)");
  ScenarioLoad b = loadScenario(bad, "b.yaml");
  ASSERT_EQ(b.errors.size(), 3u);
  EXPECT_EQ(b.errors[0].line, 2u);
  EXPECT_THAT(b.errors[0].message, HasSubstr("mix or crc"));
  EXPECT_THAT(b.errors[1].message, HasSubstr("record or flow"));
  EXPECT_THAT(b.errors[2].message, HasSubstr("busy_host"));
}

}  // namespace
}  // namespace netdiag::sim
