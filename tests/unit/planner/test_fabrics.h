#pragma once

// Small fabrics of every kind the planner targets, shared by the tests.

#include <string>
#include <utility>
#include <vector>

#include "topology/generators.h"

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

}  // namespace netdiag::planner::testing
