#pragma once

// Is it safe to drain (take out of service) one link? What an on-call
// engineer asks before acting on a localized link fault: how much ECMP width
// is left between the tiers the link joins, and would any host lose every
// path to some other host. A pure function of the topology and the links a
// Router already has down (other faults, earlier drains).

#include <string>
#include <vector>

#include "topology/ecmp.h"
#include "topology/model.h"

namespace netdiag::topology {

struct DrainPlan {
  LinkId link = kNone;
  // The link's end nearer the hosts (its tier is `lower_tier`, e.g. "leaf")
  // and the end farther from them. Tiers are hop distances from the nearest
  // host, named by the nodes' roles.
  NodeId lower = kNone, upper = kNone;
  std::string lower_tier, upper_tier;
  // Up links from `lower` to nodes of the upper tier, before and after the
  // drain (parallel links count one each). For a host's access link: its NICs' links.
  size_t width_before = 0, width_after = 0;
  // Hosts the drain cuts off from the bulk of the fabric: they reach fewer
  // hosts than the best-connected hosts still do (on an even split of the
  // fabric, every host that loses some).
  std::vector<NodeId> stranded_hosts;
  bool already_down = false;  // the link was down already: nothing changes
  bool safe = false;          // width left >= 1 and no host stranded
  // One line in words, e.g. "safe: leaf3 keeps 7 of 8 uplinks to the spine tier;
  // no host loses all its paths".
  std::string summary;
};

// Plans draining `link` given the links `router` has down. Precondition:
// link < topo.linkCount() and router was made over `topo`.
DrainPlan planDrain(const Router& router, LinkId link);

}  // namespace netdiag::topology
