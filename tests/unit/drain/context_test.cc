// The drain context: which incidents take their link out of service, how
// that changes a plan, and the JSON every caller shows.

#include "drain/context.h"

#include <gtest/gtest.h>

#include "topology/generators.h"

namespace netdiag::drain {
namespace {

using analyzer::Incident;
using analyzer::IncidentKind;
using topology::LinkId;
using topology::Topology;

Topology fabric() {
  topology::LeafSpineParams p;
  p.spines = 4;
  p.leaves = 3;  // (uneven: a cut-off leaf strands its own hosts only)
  p.hosts_per_leaf = 2;
  return topology::generateLeafSpine(p);
}

LinkId linkOf(const Topology& t, const std::string& port) { return t.port(*t.findPort(port)).link; }

Incident incident(const Topology& t, const std::string& port, IncidentKind kind, bool localized,
                  bool resolved) {
  Incident i;
  i.id = "inc-" + port;
  i.kind = kind;
  const topology::PortId p = *t.findPort(port);
  for (topology::DirLinkId d : t.outLinks(t.port(p).node)) {
    if (t.dirSrcPort(d) == p) i.link = d;  // the port's egress direction
  }
  i.opened_at = 10;
  if (localized) i.localized_at = 10;
  if (resolved) i.resolved_at = 20;
  return i;
}

TEST(DrainContext, OnlyAnOpenLocalizedLinkDownTakesItsLinkOut) {
  EXPECT_TRUE(takesLinkOut(IncidentKind::kLinkDown, true, false));
  EXPECT_FALSE(takesLinkOut(IncidentKind::kLinkDown, false, false));  // a suspect
  EXPECT_FALSE(takesLinkOut(IncidentKind::kLinkDown, true, true));    // back up
  // A flapping or lossy link still carries traffic.
  EXPECT_FALSE(takesLinkOut(IncidentKind::kLinkFlap, true, false));
  EXPECT_FALSE(takesLinkOut(IncidentKind::kLinkLoss, true, false));

  const Topology t = fabric();
  const Context c =
      Context::fromIncidents(t, {incident(t, "leaf1:swp3", IncidentKind::kLinkDown, true, false),
                                 incident(t, "leaf1:swp4", IncidentKind::kLinkDown, true, true),
                                 incident(t, "leaf1:swp5", IncidentKind::kLinkLoss, true, false)});
  ASSERT_EQ(c.out().size(), 1u);
  EXPECT_EQ(c.out().begin()->first, linkOf(t, "leaf1:swp3"));
  EXPECT_EQ(c.out().begin()->second, OutReason::kReportedDown);
}

TEST(DrainContext, LinksOutNarrowTheWidthAPlanLeavesAndShowInItsJson) {
  const Topology t = fabric();
  const LinkId target = linkOf(t, "leaf1:swp6");
  Context none(t);
  topology::DrainPlan p = none.plan(target);
  EXPECT_EQ(p.width_before, 4u);
  EXPECT_EQ(p.width_after, 3u);
  EXPECT_TRUE(p.safe);

  Context c =
      Context::fromIncidents(t, {incident(t, "leaf1:swp3", IncidentKind::kLinkDown, true, false)});
  c.takeOut(linkOf(t, "leaf1:swp4"), OutReason::kGiven);
  c.takeOut(linkOf(t, "leaf1:swp3"), OutReason::kGiven);  // the first reason stays
  EXPECT_FALSE(c == none);
  p = c.plan(target);
  EXPECT_EQ(p.width_before, 2u);
  EXPECT_EQ(p.width_after, 1u);
  EXPECT_TRUE(p.safe);
  // Taken out after a plan: the next plan counts it too.
  c.takeOut(linkOf(t, "leaf1:swp5"), OutReason::kGiven);
  p = c.plan(target);
  EXPECT_EQ(p.width_after, 0u);
  EXPECT_FALSE(p.safe);
  EXPECT_EQ(p.stranded_hosts.size(), 2u);

  const nlohmann::json j = c.planJson(p);
  EXPECT_EQ(j["safe"], false);
  EXPECT_EQ(j["ecmp_width_before"], 1);
  EXPECT_EQ(j["stranded_hosts"].size(), 2u);
  ASSERT_EQ(j["out_of_service"].size(), 3u) << j.dump();
  EXPECT_EQ(j["out_of_service"][0]["why"], "reported_down");
  EXPECT_EQ(j["out_of_service"][1]["why"], "given");
  const std::string first = j["out_of_service"][0]["link"];
  EXPECT_NE(first.find("leaf1:swp3"), std::string::npos) << first;
  EXPECT_NE(first.find("<->"), std::string::npos) << first;

  // The planned link itself is not listed among those counted out.
  Context self(t);
  self.takeOut(target, OutReason::kGiven);
  const topology::DrainPlan already = self.plan(target);
  EXPECT_TRUE(already.already_down);
  EXPECT_TRUE(self.planJson(already)["out_of_service"].empty());
}

}  // namespace
}  // namespace netdiag::drain
