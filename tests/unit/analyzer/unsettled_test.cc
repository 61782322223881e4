#include "analyzer/unsettled.h"

#include <gtest/gtest.h>

#include "topology/generators.h"

namespace netdiag::analyzer {
namespace {

using topology::Topology;

TEST(Unsettled, OpenGroupsAndWeakSuspectsOnlyMostConfidentFirst) {
  Topology t = topology::generateLeafSpine({.spines = 2, .leaves = 4, .hosts_per_leaf = 2});
  auto link = [&](const char* name) { return *t.findDirLink(name); };
  const DirLinkId up = link("leaf1:swp3->spine1:swp1"), up2 = link("leaf1:swp4->spine2:swp1");
  const DirLinkId down = link("spine2:swp3->leaf3:swp4"), paged = link("leaf2:swp3->spine1:swp2");

  Incident group;  // two uplinks the evidence can't tell apart
  group.kind = IncidentKind::kLinkLoss;
  group.link = up;
  group.confidence = 0.6;
  group.candidates = {{.link = up2}, {.node = t.dirSrcNode(up)}};  // a node adds nothing
  Incident weak;                                                   // below the bar, both directions
  weak.kind = IncidentKind::kLinkLoss;
  weak.link = down;
  weak.both_directions = true;
  weak.confidence = 0.3;
  Incident localized = weak;  // paged: settled
  localized.link = paged;
  localized.both_directions = false;
  localized.localized_at = 10;
  Incident resolved = weak;  // gone
  resolved.link = paged;
  resolved.resolved_at = 20;
  Incident congestion;  // not a link fault, no candidates
  congestion.kind = IncidentKind::kCongestion;
  congestion.link = paged;

  const std::vector<Incident> all = {weak, localized, group, resolved, congestion};
  std::vector<DirLinkId> want = {up, up2, down, Topology::reverse(down)};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(unsettledLinks(all, 64), want);
  // The cap keeps the most confident incident's links.
  std::vector<DirLinkId> two = {up, up2};
  std::sort(two.begin(), two.end());
  EXPECT_EQ(unsettledLinks(all, 2), two);
  EXPECT_TRUE(unsettledLinks({localized, resolved, congestion}, 64).empty());
}

}  // namespace
}  // namespace netdiag::analyzer
