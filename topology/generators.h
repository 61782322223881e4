#pragma once

// Generators for the Clos fabrics netdiag targets. Each returns a finalized
// Topology that writer.h turns into a file of formats.md §1, so generated and
// hand-written fabrics go through the same loader.

#include <string>
#include <vector>

#include "topology/model.h"

namespace netdiag::topology {

// Leaf-spine (2-tier Clos): every leaf connects to every spine with
// `parallel` links; each host hangs on one leaf with all its NICs. With
// `parallel_max` above `parallel` the pairs get UNEQUAL link counts:
// leaf l (0-based) and spine s get parallel + (l + s) % (parallel_max -
// parallel + 1) links, so every count from parallel to parallel_max occurs
// and per-hop ECMP no longer gives every end-to-end path the same share.
struct LeafSpineParams {
  int spines = 4;
  int leaves = 8;
  int hosts_per_leaf = 8;
  int nics_per_host = 1;
  int parallel = 1;      // links per leaf-spine pair
  int parallel_max = 0;  // 0 (or = parallel): every pair has `parallel` links
  double host_speed_gbps = 400;
  double fabric_speed_gbps = 400;
  bool addresses = true;  // emit host and interface addresses
};

// 3-tier fat-tree(k) (Al-Fares et al., SIGCOMM'08): k pods of k/2 edge
// (role leaf) and k/2 aggregation (role spine) switches, (k/2)^2 cores,
// k/2 single-NIC hosts per edge switch. k is even and >= 2.
struct FatTreeParams {
  int k = 4;
  double speed_gbps = 400;
  bool addresses = true;
};

// Rail-optimized fabric modeled on NVIDIA DGX SuperPOD: `sus` scalable units
// of `hosts_per_su` hosts with `rails` NICs each; NIC i of every host of a
// unit goes to that unit's rail-i leaf. Without cores every leaf connects to
// every spine; with cores, spines form one plane per rail (rail-i leaves of
// all units connect to the `spines` spines of plane i) and every spine
// connects to every core, so cross-rail traffic crosses the core tier.
// `leaf_uplinks` is spread evenly over the spines a leaf connects to.
struct RailParams {
  int sus = 1;
  int hosts_per_su = 32;
  int rails = 8;
  int spines = 8;  // in total without cores, per rail plane with cores
  int leaf_uplinks = 32;
  int cores = 0;
  double speed_gbps = 400;
  bool addresses = true;
};

// Each returns the list of problems with the parameters (empty when valid).
std::vector<std::string> validate(const LeafSpineParams& p);
std::vector<std::string> validate(const FatTreeParams& p);
std::vector<std::string> validate(const RailParams& p);

// Links between leaf `leaf` and spine `spine` (both 0-based) of a leaf-spine.
int leafSpineParallel(const LeafSpineParams& p, int leaf, int spine);

// Preconditions: validate(p) is empty.
Topology generateLeafSpine(const LeafSpineParams& p);
Topology generateFatTree(const FatTreeParams& p);
Topology generateRail(const RailParams& p);

}  // namespace netdiag::topology
