#pragma once

// Small fabrics of every kind the planner targets, shared by the tests.

#include <string>
#include <utility>
#include <vector>

#include "topology/generators.h"
#include "topology/loader.h"

namespace netdiag::planner::testing {

struct NamedFabric {
  std::string name;
  topology::Topology topo;
};

inline std::vector<NamedFabric> targetFabrics() {
  using namespace topology;
  std::vector<NamedFabric> v;
  v.push_back({"leaf-spine", generateLeafSpine({})});
  v.push_back(
      {"leaf-spine-2nic-parallel",
       generateLeafSpine(
           {.spines = 4, .leaves = 6, .hosts_per_leaf = 4, .nics_per_host = 2, .parallel = 2})});
  v.push_back({"fat-tree-4", generateFatTree({.k = 4})});
  v.push_back({"fat-tree-8", generateFatTree({.k = 8})});
  v.push_back(
      {"rail",
       generateRail({.sus = 2, .hosts_per_su = 16, .rails = 4, .spines = 4, .leaf_uplinks = 8})});
  v.push_back(
      {"rail-cores",
       generateRail(
           {.sus = 4, .hosts_per_su = 8, .rails = 4, .spines = 4, .leaf_uplinks = 8, .cores = 4})});
  return v;
}

// The small fabric of issue #11: 3 spines x 4 leaves, 2 parallel links per
// leaf-spine pair, 2 hosts per leaf. Each leaf has 6 uplinks for 2 host
// ports, so at 100 probes/s per host port its uplinks get at most
// 2 x 60 x 100 / 3 = 4,000 probes a minute: no plan of that rate meets the
// 6,000 target.
inline topology::Topology issueFabric() {
  return topology::generateLeafSpine(
      {.spines = 3, .leaves = 4, .hosts_per_leaf = 2, .nics_per_host = 1, .parallel = 2});
}

// Where the default plan must meet the target: the generators' defaults,
// the accuracy bench's 1,024-port presets, the e2e fabric, the issue's.
inline std::vector<NamedFabric> defaultPlanFabrics() {
  using namespace topology;
  std::vector<NamedFabric> v;
  v.push_back({"leaf-spine defaults", generateLeafSpine({})});
  v.push_back({"fat-tree defaults", generateFatTree({})});
  v.push_back({"rail defaults", generateRail({})});
  v.push_back(
      {"bench leaf-spine", generateLeafSpine({.spines = 8, .leaves = 32, .hosts_per_leaf = 32})});
  v.push_back({"bench fat-tree", generateFatTree({.k = 16})});
  v.push_back({"bench rail", generateRail({.sus = 4,
                                           .hosts_per_su = 32,
                                           .rails = 8,
                                           .spines = 8,
                                           .leaf_uplinks = 32,
                                           .cores = 8})});
  auto e2e = loadTopologyFile(std::string(NETDIAG_FIXTURES) + "/../e2e/fabric.yaml");
  v.push_back({"e2e", std::move(e2e.topology)});
  v.push_back({"3 spines x 4 leaves x 2 parallel, 2 hosts per leaf", issueFabric()});
  return v;
}

}  // namespace netdiag::planner::testing
