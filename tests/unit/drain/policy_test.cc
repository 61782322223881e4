// The drain decision: every safety check named, which failures wait and
// which refuse, and what each mode does when all hold.

#include "drain/policy.h"

#include <gtest/gtest.h>

#include "drain/context.h"
#include "topology/generators.h"

namespace netdiag::drain {
namespace {

using analyzer::Incident;
using analyzer::IncidentKind;
using topology::Topology;

Topology fabric() {
  topology::LeafSpineParams p;
  p.spines = 4;
  p.leaves = 3;
  p.hosts_per_leaf = 2;
  return topology::generateLeafSpine(p);
}

topology::DirLinkId egress(const Topology& t, const std::string& port) {
  const topology::PortId p = *t.findPort(port);
  for (topology::DirLinkId d : t.outLinks(t.port(p).node)) {
    if (t.dirSrcPort(d) == p) return d;
  }
  return topology::kNone;
}

// A 1 % loss on `port`'s egress, localized at t=100 with confidence 1.
Incident paged(const Topology& t, const std::string& port) {
  Incident i;
  i.id = "inc-1";
  i.kind = IncidentKind::kLinkLoss;
  i.link = egress(t, port);
  i.opened_at = 90;
  i.localized_at = 100;
  i.confidence = 1;
  i.loss_ratio = 0.01;
  return i;
}

// Held for 4 passes, alone.
Situation settled() {
  Situation s;
  s.now = 120;
  s.pass_s = 5;
  s.open_incidents = 1;
  return s;
}

const Check& named(const Decision& d, const std::string& name) {
  for (const Check& c : d.checks) {
    if (c.name == name) return c;
  }
  static const Check none{"missing", false, ""};
  ADD_FAILURE() << "no check " << name;
  return none;
}

std::vector<std::string> failed(const Decision& d) {
  std::vector<std::string> out;
  for (const Check& c : d.checks) {
    if (!c.ok) out.push_back(c.name);
  }
  return out;
}

TEST(DrainPolicy, EachModeWhenEveryCheckHolds) {
  const Topology t = fabric();
  const Incident i = paged(t, "leaf1:swp3");
  const Context c(t);
  const topology::DrainPlan plan = c.plan(Topology::linkOf(i.link));
  Policy p;
  Decision d = decide(p, t, i, plan, settled());
  EXPECT_EQ(d.verdict, Verdict::kAdvise);  // the default acts on nothing
  EXPECT_TRUE(d.would_act) << decisionJson(d).dump(1);
  EXPECT_TRUE(failed(d).empty());
  EXPECT_EQ(d.scope, "leaf-spine");
  EXPECT_EQ(named(d, "ecmp_width").detail,
            "leaf1 keeps 3 of 4 links to the spine tier (at least 2)");
  p.mode = Mode::kApprove;
  EXPECT_EQ(decide(p, t, i, plan, settled()).verdict, Verdict::kAwaitApproval);
  p.mode = Mode::kAuto;
  EXPECT_EQ(decide(p, t, i, plan, settled()).verdict, Verdict::kAct);

  const nlohmann::json j = decisionJson(decide(p, t, i, plan, settled()));
  EXPECT_EQ(j["mode"], "auto");
  EXPECT_EQ(j["verdict"], "act");
  EXPECT_EQ(j["checks"].size(), 11u);
  EXPECT_EQ(j["checks"][0]["name"], "kind");
}

TEST(DrainPolicy, WhatTimeCanChangeWaitsAndTheRestRefuses) {
  const Topology t = fabric();
  Policy p;
  p.mode = Mode::kAuto;
  Incident i = paged(t, "leaf1:swp3");
  Context c(t);
  topology::DrainPlan plan = c.plan(Topology::linkOf(i.link));

  // Not held long enough; a suspect group; too many incidents; frozen.
  Situation s = settled();
  s.now = 105;
  Decision d = decide(p, t, i, plan, s);
  EXPECT_EQ(d.verdict, Verdict::kWait);
  EXPECT_EQ(failed(d), std::vector<std::string>{"held"});
  Incident group = i;
  group.localized_at.reset();
  group.candidates.push_back({egress(t, "leaf1:swp4"), topology::kNone});
  d = decide(p, t, group, plan, settled());
  EXPECT_EQ(d.verdict, Verdict::kWait);
  EXPECT_EQ(named(d, "localized").detail, "one of 2 links (an ambiguity group)");
  s = settled();
  s.open_incidents = 9;
  EXPECT_EQ(failed(decide(p, t, i, plan, s)), std::vector<std::string>{"open_incidents"});
  s = settled();
  s.drained_in_scope = 1;
  s.drains_last_hour = 4;
  EXPECT_EQ(failed(decide(p, t, i, plan, s)),
            (std::vector<std::string>{"blast_radius_scope", "blast_radius_hour"}));
  p.frozen = true;
  EXPECT_EQ(decide(p, t, i, plan, settled()).verdict, Verdict::kWait);
  p.frozen = false;

  // Congestion is not drained: it would move onto the siblings.
  Incident hot = i;
  hot.kind = IncidentKind::kCongestion;
  d = decide(p, t, hot, plan, settled());
  EXPECT_EQ(d.verdict, Verdict::kRefuse);
  EXPECT_EQ(failed(d), std::vector<std::string>{"kind"});

  // A single-homed host's access link: never, whatever else holds.
  Incident access = paged(t, "host1:eth0");
  d = decide(p, t, access, c.plan(Topology::linkOf(access.link)), settled());
  EXPECT_EQ(d.verdict, Verdict::kRefuse);
  EXPECT_EQ(named(d, "not_single_homed").detail,
            "host1 has this link only: a single-homed access link is never drained");
  EXPECT_FALSE(named(d, "no_host_cut_off").ok);

  // Width: two of leaf1's uplinks down already leaves 1 of 2 after the
  // drain, the least half allows; a policy asking for 90 % refuses it.
  c.takeOut(Topology::linkOf(egress(t, "leaf1:swp4")), OutReason::kReportedDown);
  c.takeOut(Topology::linkOf(egress(t, "leaf1:swp5")), OutReason::kReportedDown);
  plan = c.plan(Topology::linkOf(i.link));
  EXPECT_EQ(decide(p, t, i, plan, settled()).verdict, Verdict::kAct);
  p.min_width_share = 0.9;
  d = decide(p, t, i, plan, settled());
  EXPECT_EQ(d.verdict, Verdict::kRefuse);
  EXPECT_EQ(failed(d), std::vector<std::string>{"ecmp_width"});
  // The last uplink: refused however low the share.
  p.min_width_share = 0;
  c.takeOut(Topology::linkOf(egress(t, "leaf1:swp6")), OutReason::kReportedDown);
  d = decide(p, t, i, c.plan(Topology::linkOf(i.link)), settled());
  EXPECT_EQ(d.verdict, Verdict::kRefuse);
  EXPECT_EQ(failed(d), (std::vector<std::string>{"ecmp_width", "no_host_cut_off"}));
}

TEST(DrainPolicy, ScopeIsThePodWhereTheTopologyHasOne) {
  topology::FatTreeParams p;
  p.k = 4;
  const Topology t = topology::generateFatTree(p);
  topology::NodeId edge = topology::kNone;
  for (topology::NodeId n = 0; n < t.nodeCount(); ++n) {
    if (t.node(n).pod && !t.node(n).isHost() && edge == topology::kNone) edge = n;
  }
  ASSERT_NE(edge, topology::kNone) << "fat-tree nodes carry their pod";
  topology::DrainPlan plan;
  plan.lower = edge;
  EXPECT_EQ(scopeOf(t, plan), "pod " + std::to_string(*t.node(edge).pod));
}

}  // namespace
}  // namespace netdiag::drain
