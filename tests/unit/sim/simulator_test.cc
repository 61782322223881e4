// The simulator's statistics and behaviours: losses match the configured
// rates within binomial error, ECMP spreads flows evenly, routing avoids a
// downed link, each fault and trap leaves the right traces, runs are
// deterministic by seed, and bad scenarios are rejected with file:line.

#include "sim/simulator.h"

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/scenario.h"
#include "topology/generators.h"

namespace netdiag::sim {
namespace {

using ::testing::HasSubstr;
using namespace topology;
using telemetry::LldpRecord;
using telemetry::PortRecord;
using telemetry::ProbeRecord;

struct Collect : telemetry::RecordSink {
  std::vector<ProbeRecord> probes;
  std::vector<PortRecord> ports;
  std::vector<LldpRecord> lldp;
  void onProbe(const ProbeRecord& r) override { probes.push_back(r); }
  void onPort(const PortRecord& r) override { ports.push_back(r); }
  void onLldp(const LldpRecord& r) override { lldp.push_back(r); }
};

// Every host port probes every other host port with `flows` flows.
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
      for (int f = 0; f < flows; ++f) {
        pp.flows.push_back({d, static_cast<uint16_t>(40000 + f)});
      }
    }
    plan.ports.push_back(pp);
  }
  return plan;
}

Scenario quietScenario(double duration = 120) {
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

FaultSpec fault(std::string kind, std::string link, double onset = 0, double end = kForever) {
  FaultSpec f;
  f.kind = std::move(kind);
  f.link.exact = std::move(link);
  f.onset = onset;
  f.end = end;
  f.line = 1;
  return f;
}

Topology smallFabric() {
  return generateLeafSpine({.spines = 2,
                            .leaves = 4,
                            .hosts_per_leaf = 4,
                            .nics_per_host = 1,
                            .parallel = 1,
                            .addresses = false});
}

struct SimRun {
  Collect out;
  Truth truth;
  SimStats stats;
};

SimRun simulate(const Topology& t, const Scenario& s, const planner::Plan& plan,
                SimOptions options = {}) {
  std::vector<Diagnostic> errors;
  auto sim = Simulator::create(t, s, plan, options, errors);
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors[0].str());
  SimRun r;
  if (!sim) return r;
  sim->run(r.out);
  r.truth = sim->truth();
  r.stats = sim->stats();
  return r;
}

bool crosses(const std::vector<DirLinkId>& path, DirLinkId d) {
  return std::find(path.begin(), path.end(), d) != path.end();
}

TEST(Simulator, LossThroughABadLinkMatchesTheRateWithinBinomialError) {
  Topology t = smallFabric();
  Scenario s = quietScenario(300);
  const std::string link = "leaf1:swp5->spine1:swp1";
  s.faults.push_back(fault("link_loss", link));
  s.faults.back().loss = 0.05;
  SimRun r = simulate(t, s, allPairs(t, 2, 10));
  DirLinkId bad = *t.findDirLink(link);
  double sent = 0, lost = 0, clean_lost = 0;
  for (const auto& p : r.out.probes) {
    ASSERT_TRUE(p.hasOneWay() || p.lost == p.sent);
    if (!p.hasOneWay()) continue;
    if (crosses(p.path, bad)) {
      sent += p.sent;
      lost += *p.lost_fwd;
    } else {
      clean_lost += *p.lost_fwd;
    }
  }
  ASSERT_GT(sent, 10000);
  double sigma = std::sqrt(sent * 0.05 * 0.95);
  EXPECT_NEAR(lost, 0.05 * sent, 4 * sigma);
  EXPECT_EQ(clean_lost, 0);  // no background loss configured
  ASSERT_EQ(r.truth.faults.size(), 1u);
  EXPECT_EQ(r.truth.faults[0].link, link);
}

TEST(Simulator, EcmpSpreadsFlowsEvenlyOverNextHops) {
  Topology t = generateLeafSpine({.spines = 4,
                                  .leaves = 4,
                                  .hosts_per_leaf = 8,
                                  .nics_per_host = 1,
                                  .parallel = 1,
                                  .addresses = false});
  Scenario s = quietScenario(10);
  SimRun r = simulate(t, s, allPairs(t, 4, 1));
  std::map<DirLinkId, int> uplink_use;  // leaf -> spine hop of inter-leaf flows
  for (const auto& p : r.out.probes) {
    if (p.path.size() == 4) ++uplink_use[p.path[1]];
  }
  // 16 leaf uplinks; every one used, none far from the mean.
  ASSERT_EQ(uplink_use.size(), 16u);
  double total = 0;
  for (auto [d, n] : uplink_use) total += n;
  double mean = total / 16;
  for (auto [d, n] : uplink_use) {
    EXPECT_NEAR(n, mean, 5 * std::sqrt(mean)) << t.dirLinkName(d);
  }
}

TEST(Simulator, RoutingMovesFlowsOffADownedLinkAndCountersShowIt) {
  Topology t = smallFabric();
  Scenario s = quietScenario(200);
  const std::string link = "leaf1:swp5->spine1:swp1";
  s.faults.push_back(fault("link_down", link, 60, 150));
  SimRun r = simulate(t, s, allPairs(t, 2, 5));
  DirLinkId d = *t.findDirLink(link);
  int before = 0, during = 0, after = 0, lossy_first_window = 0;
  for (const auto& p : r.out.probes) {
    bool on = crosses(p.path, d) || crosses(p.path, Topology::reverse(d));
    if (p.t <= 60) before += on;
    if (p.t > 65 && p.t <= 150) during += on;  // one window to converge
    if (p.t > 155) after += on;
    if (p.t > 60 && p.t <= 65 && p.lost > 0) ++lossy_first_window;
  }
  EXPECT_GT(before, 0);
  EXPECT_EQ(during, 0);
  EXPECT_GT(after, 0);
  EXPECT_GT(lossy_first_window, 0);  // probes in flight when it failed are lost
  PortId a = t.dirSrcPort(d), b = t.dirDstPort(d);
  bool saw_down = false;
  for (const auto& pr : r.out.ports) {
    if ((pr.port == a || pr.port == b) && pr.t > 60 && pr.t < 150) {
      EXPECT_FALSE(*pr.oper_up);
      EXPECT_GE(*pr.carrier_changes, 1u);
      saw_down = true;
    }
    if ((pr.port == a || pr.port == b) && pr.t >= 150) {
      EXPECT_EQ(*pr.carrier_changes, 2u);
    }
  }
  EXPECT_TRUE(saw_down);
}

TEST(Simulator, DeterministicBySeedAndTheEcmpSeedChangesPaths) {
  Topology t = smallFabric();
  Scenario s = quietScenario(60);
  s.noise.background_loss = 1e-3;
  s.noise.path_unknown = 0.3;
  planner::Plan plan = allPairs(t, 2, 10);
  auto fingerprint = [&](SimOptions o) {
    SimRun r = simulate(t, s, plan, o);
    std::ostringstream f;
    for (const auto& p : r.out.probes) {
      f << p.t << ' ' << p.src << ' ' << p.dst << ' ' << p.flow << ' ' << p.lost << ' '
        << p.path.size() << (p.path.empty() ? 0u : p.path[p.path.size() / 2]) << '\n';
    }
    return f.str();
  };
  EXPECT_EQ(fingerprint({.seed = 7, .ecmp_seed = 1}), fingerprint({.seed = 7, .ecmp_seed = 1}));
  EXPECT_NE(fingerprint({.seed = 7, .ecmp_seed = 1}), fingerprint({.seed = 8, .ecmp_seed = 1}));
  EXPECT_NE(fingerprint({.seed = 7, .ecmp_seed = 1}), fingerprint({.seed = 7, .ecmp_seed = 2}));
}

TEST(Simulator, PartialBlackholeDropsAShareOfFlowsEntirely) {
  Topology t = generateLeafSpine({.spines = 2,
                                  .leaves = 4,
                                  .hosts_per_leaf = 8,
                                  .nics_per_host = 1,
                                  .parallel = 1,
                                  .addresses = false});
  Scenario s = quietScenario(60);
  s.noise.path_unknown = 0;
  const std::string link = "leaf1:swp9->spine1:swp1";
  s.faults.push_back(fault("link_blackhole", link));
  s.faults.back().share = 0.25;
  SimRun r = simulate(t, s, allPairs(t, 2, 10));
  DirLinkId d = *t.findDirLink(link);
  std::set<std::pair<PortId, uint64_t>> through, dead;
  for (const auto& p : r.out.probes) {
    // Blackholed flows report the path up to the hole, marked partial.
    if (p.path_partial && !p.path.empty()) {
      EXPECT_EQ(t.dirDstNode(p.path.back()), t.dirSrcNode(d));
    }
    bool via = crosses(p.path, d) || (p.path_partial && p.lost == p.sent);
    if (!via) continue;
    auto key = std::make_pair(p.src, p.flow * 1000 + p.dst);
    through.insert(key);
    if (p.lost == p.sent) dead.insert(key);
  }
  ASSERT_GT(through.size(), 40u);
  double share = static_cast<double>(dead.size()) / static_cast<double>(through.size());
  EXPECT_NEAR(share, 0.25, 0.15);
}

TEST(Simulator, CorruptionCountsCrcOnTheReceivingPortOnly) {
  Topology t = smallFabric();
  Scenario s = quietScenario(60);
  const std::string link = "leaf2:swp5->spine1:swp2";
  s.faults.push_back(fault("link_corruption", link, 20));
  s.faults.back().loss = 0.01;
  SimRun r = simulate(t, s, allPairs(t, 1, 5));
  DirLinkId d = *t.findDirLink(link);
  uint64_t rx_crc = 0, other = 0;
  for (const auto& pr : r.out.ports) {
    if (pr.port == t.dirDstPort(d)) {
      rx_crc = std::max(rx_crc, *pr.rx_crc_errors);
    } else {
      other = std::max(other, *pr.rx_crc_errors);
    }
  }
  EXPECT_GT(rx_crc, 1000u);
  EXPECT_EQ(other, 0u);
}

TEST(Simulator, CongestionShowsTxDropsOnTheHotEgress) {
  Topology t = smallFabric();
  Scenario s = quietScenario(60);
  FaultSpec f = fault("congestion", "spine1:swp3->leaf3:swp5", 10);
  f.loss = 0.01;
  f.tx_drops_per_s = 1000;
  s.faults.push_back(f);
  SimRun r = simulate(t, s, allPairs(t, 1, 5));
  PortId egress = t.dirSrcPort(*t.findDirLink("spine1:swp3->leaf3:swp5"));
  uint64_t drops = 0;
  for (const auto& pr : r.out.ports) {
    if (pr.port == egress) drops = std::max(drops, *pr.tx_drops);
  }
  EXPECT_NEAR(static_cast<double>(drops), 1000.0 * 50, 1000.0);
  EXPECT_EQ(r.truth.traps.size(), 1u);
  EXPECT_TRUE(r.truth.faults.empty());
}

TEST(Simulator, DeadResponderLosesEveryProbeToTheHostButItStillProbes) {
  Topology t = smallFabric();
  Scenario s = quietScenario(60);
  FaultSpec f;
  f.kind = "dead_responder";
  f.host.exact = "host3";
  f.onset = 20;
  s.faults.push_back(f);
  SimRun r = simulate(t, s, allPairs(t, 1, 5));
  NodeId h = *t.findNode("host3");
  int from = 0;
  for (const auto& p : r.out.probes) {
    if (t.port(p.dst).node == h && p.t > 25) {
      EXPECT_EQ(p.lost, p.sent);
      EXPECT_FALSE(p.hasOneWay());
      EXPECT_FALSE(p.hasRtt());
    }
    if (t.port(p.src).node == h && p.t > 25) ++from;
  }
  EXPECT_GT(from, 0);
  ASSERT_EQ(r.truth.traps.size(), 1u);
  EXPECT_EQ(r.truth.traps[0].kind, "host_unreachable");
  EXPECT_EQ(r.truth.traps[0].cause, "dead_responder");
}

TEST(Simulator, RebootingHostIsSilentAndItsPortsGoDown) {
  Topology t = smallFabric();
  Scenario s = quietScenario(100);
  FaultSpec f;
  f.kind = "host_reboot";
  f.host.exact = "host5";
  f.onset = 30;
  f.end = 60;
  s.faults.push_back(f);
  SimRun r = simulate(t, s, allPairs(t, 1, 5));
  NodeId h = *t.findNode("host5");
  for (const auto& p : r.out.probes) {
    if (t.port(p.src).node == h) {
      EXPECT_FALSE(p.t >= 30 && p.t < 60) << p.t;
    }
  }
  PortId leaf_side = t.dirDstPort(t.egressOf(t.portsOf(h)[0]));
  bool down_seen = false;
  for (const auto& pr : r.out.ports) {
    if (pr.port == leaf_side && pr.t >= 30 && pr.t < 60) down_seen = !*pr.oper_up;
  }
  EXPECT_TRUE(down_seen);
}

TEST(Simulator, MiscablingShowsInLldp) {
  Topology t = smallFabric();
  Scenario s = quietScenario(20);
  FaultSpec f;
  f.kind = "miscabling";
  f.ports = {"leaf1:swp1", "leaf1:swp2"};
  s.faults.push_back(f);
  SimRun r = simulate(t, s, allPairs(t, 1, 1));
  std::map<std::string, std::string> seen;
  for (const auto& l : r.out.lldp) seen[t.portRef(l.port)] = l.neighbor;
  EXPECT_EQ(seen["leaf1:swp1"], "host2:eth0");
  EXPECT_EQ(seen["host2:eth0"], "leaf1:swp1");
  EXPECT_EQ(seen["leaf1:swp3"], "host3:eth0");  // untouched
  ASSERT_EQ(r.truth.traps.size(), 1u);
  EXPECT_THAT(r.truth.traps[0].ports, ::testing::Contains("leaf1:swp2"));
}

TEST(Simulator, NoiseDropsAndDelaysRecordsAndHidesPaths) {
  Topology t = smallFabric();
  Scenario s = quietScenario(120);
  s.noise.missing_records = 0.1;
  s.noise.late_records = 0.05;
  s.noise.path_unknown = 0.3;
  SimRun r = simulate(t, s, allPairs(t, 1, 5));
  EXPECT_GT(r.stats.dropped_records, 0u);
  EXPECT_GT(r.stats.late_records, 0u);
  size_t without_path = 0, out_of_order = 0;
  double newest = 0;
  for (const auto& p : r.out.probes) {
    without_path += p.path.empty();
    if (p.t < newest) {
      ++out_of_order;
      EXPECT_LE(newest - p.t, 20.0 + 1e-9);
    }
    newest = std::max(newest, p.t);
  }
  double share = static_cast<double>(without_path) / static_cast<double>(r.out.probes.size());
  EXPECT_NEAR(share, 0.3, 0.05);
  EXPECT_GT(out_of_order, 0u);
}

// ---- scenario files --------------------------------------------------------

ScenarioLoad parse(const std::string& text) {
  std::istringstream in(text);
  return loadScenario(in, "s.yaml");
}

TEST(Scenario, ParsesEveryField) {
  ScenarioLoad l = parse(R"(name: x
topology: {generate: fat-tree, k: 8}
duration_s: 300
window_s: 10
budget: {probes_per_second: 40, flows_per_peer: 2}
noise: {background_loss: 1.0e-6, path_unknown: 0.5, counter_reset: false}
faults:
  - kind: link_flap
    link: {from: spine, to: core}
    period_s: 20
    down_s: 2
    onset: 10
    end: 200
  - kind: dead_responder
    host: host1-1-1
)");
  ASSERT_TRUE(l.ok()) << l.errors[0].str();
  const Scenario& s = l.scenario;
  EXPECT_EQ(s.fabric.generator, "fat-tree");
  EXPECT_EQ(s.fabric.fat_tree.k, 8);
  EXPECT_EQ(s.window_s, 10);
  EXPECT_EQ(s.budget.probes_per_second, 40);
  EXPECT_FALSE(s.noise.counter_reset);
  ASSERT_EQ(s.faults.size(), 2u);
  EXPECT_EQ(s.faults[0].link.from, "spine");
  EXPECT_EQ(s.faults[0].period_s, 20);
  EXPECT_EQ(s.faults[1].host.exact, "host1-1-1");
}

TEST(Scenario, EveryProblemGetsOneMessageWithItsLine) {
  ScenarioLoad l = parse(R"(topology: {generate: rail, sus: x}
faults:
  - kind: link_melt
    link: random
  - kind: link_loss
    loss: 1.5
  - kind: link_down
    onset: 300
    end: 100
  - kind: link_blackhole
    share: 0
)");
  ASSERT_EQ(l.errors.size(), 5u);
  EXPECT_EQ(l.errors[0].line, 1u);
  EXPECT_THAT(l.errors[0].message, HasSubstr("'sus' must be a whole number"));
  EXPECT_EQ(l.errors[1].line, 3u);
  EXPECT_THAT(l.errors[1].message, HasSubstr("unknown fault kind 'link_melt'"));
  EXPECT_EQ(l.errors[2].line, 6u);
  EXPECT_THAT(l.errors[2].message, HasSubstr("'loss' must be in [0, 1]"));
  EXPECT_EQ(l.errors[3].line, 7u);
  EXPECT_THAT(l.errors[3].message, HasSubstr("onset 300 is not before end 100"));
  EXPECT_EQ(l.errors[4].line, 10u);
  EXPECT_THAT(l.errors[4].message, HasSubstr("share"));
}

// Far times would make the simulator's step counts overflow their integers
// (undefined) or its time steps vanish in rounding: they are errors.
TEST(Scenario, TimesBeyondTheBoundsAreErrors) {
  ScenarioLoad l = parse(R"(start: 1e300
duration_s: 1e20
faults:
  - kind: link_down
    onset: -1e300
    end: 1e15
)");
  ASSERT_EQ(l.errors.size(), 4u);
  EXPECT_THAT(l.errors[0].message, HasSubstr("'start' must be in"));
  EXPECT_THAT(l.errors[1].message, HasSubstr("'duration_s' must be in"));
  EXPECT_THAT(l.errors[2].message, HasSubstr("'onset' must be in"));
  EXPECT_THAT(l.errors[3].message, HasSubstr("'end' must be in"));
}

TEST(Scenario, NamesTheTopologyLacksAreErrorsAtTheirLine) {
  Topology t = smallFabric();
  ScenarioLoad l = parse(R"(faults:
  - kind: link_loss
    link: leaf1:swp5->spine9:swp1
  - kind: dead_responder
    host: nosuchhost
  - kind: link_loss
    link: {from: core, to: spine}
  - kind: miscabling
    ports: [leaf1:swp1, leaf2:swp1]
)");
  ASSERT_TRUE(l.ok());
  std::vector<Diagnostic> errors;
  planner::Plan plan;
  auto sim = Simulator::create(t, l.scenario, plan, {}, errors);
  EXPECT_EQ(sim, nullptr);
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_EQ(errors[0].line, 2u);
  EXPECT_THAT(errors[0].message, HasSubstr("'leaf1:swp5->spine9:swp1' is not a directed link"));
  EXPECT_EQ(errors[1].line, 4u);
  EXPECT_THAT(errors[1].message, HasSubstr("'nosuchhost'"));
  EXPECT_EQ(errors[2].line, 6u);
  EXPECT_THAT(errors[2].message, HasSubstr("matches 0 unused links"));
  EXPECT_EQ(errors[3].line, 8u);
  EXPECT_THAT(errors[3].message, HasSubstr("two different ports of one node"));
}

TEST(Scenario, FabricSpecs) {
  FabricSpec spec;
  EXPECT_TRUE(parseFabricSpec("rail:sus=4,hosts-per-su=16", spec).empty());
  EXPECT_EQ(spec.rail.sus, 4);
  EXPECT_EQ(spec.rail.hosts_per_su, 16);
  FabricSpec bad;
  EXPECT_THAT(parseFabricSpec("torus", bad)[0], HasSubstr("unknown fabric 'torus'"));
  FabricSpec bad2;
  EXPECT_THAT(parseFabricSpec("fat-tree:q=1", bad2)[0], HasSubstr("unknown parameter 'q'"));
}

}  // namespace
}  // namespace netdiag::sim
