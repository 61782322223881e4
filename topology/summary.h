#pragma once

// What `netdiag topo show` reports: counts by role and per-tier
// oversubscription (downlink over uplink capacity).

#include <string>
#include <vector>

#include "topology/model.h"

namespace netdiag::topology {

struct TierSummary {
  std::string role;
  int level = 0;  // hops from the nearest host: hosts 0, leaves 1, ...
  size_t nodes = 0;
  size_t down_links = 0;  // towards lower levels
  size_t up_links = 0;    // towards higher levels
  size_t peer_links = 0;  // within the level
  double down_gbps = 0;
  double up_gbps = 0;
  size_t links_without_speed = 0;  // up or down links with no speed_gbps

  // down/up capacity (link counts when any speed is unknown); 0 when no uplinks.
  double oversubscription() const;
};

struct Summary {
  std::string name;
  size_t nodes = 0, ports = 0, links = 0, hosts = 0, host_ports = 0;
  std::vector<TierSummary> tiers;  // ordered by level, then role name
};

Summary summarize(const Topology& topo);

}  // namespace netdiag::topology
