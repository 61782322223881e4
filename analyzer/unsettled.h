#pragma once

// What the probe plan should look at harder: the directed links of open
// incidents that have not paged, either ambiguity groups (links the
// evidence cannot tell apart) or suspects still below the paging bar.
// planner::focusPlan adds flows across them; more distinct flows give flows
// that cross one member of a group and not another, and more probes on a
// weak suspect (docs/localization.md §11).

#include <cstddef>
#include <vector>

#include "analyzer/incident.h"
#include "topology/model.h"

namespace netdiag::analyzer {

// How many links a focused plan looks at, at most: a handful of groups.
// More open suspects than that is a correlated event, not a tie to break.
inline constexpr size_t kMaxUnsettledLinks = 64;

// The links of every open, unlocalized link incident and of its candidates
// (both directions where the incident names both), most confident incident
// first, at most `max_links`, sorted by id. A host member adds nothing:
// more flows cannot tell a host from its access link on round trips.
std::vector<DirLinkId> unsettledLinks(const std::vector<Incident>& incidents, size_t max_links);

}  // namespace netdiag::analyzer
