#pragma once

// The fabric the JSONL and batch harnesses check records against: a copy of
// tests/fixtures/topologies/good_leaf_spine.yaml's nodes and links, built in,
// so a harness binary runs from any directory. The seed corpora name its
// ports (h1:eth0, leaf1:swp49, ...).

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "topology/loader.h"

namespace netdiag::fuzz {

inline const topology::Topology& fuzzFabric() {
  static const topology::Topology topo = [] {
    std::istringstream in(R"(name: fuzz-ls
nodes:
  - {name: spine1, role: spine}
  - {name: spine2, role: spine}
  - {name: leaf1, role: leaf, pod: 1, addr: 10.0.0.11}
  - {name: leaf2, role: leaf, pod: 2, addr: 10.0.0.12}
  - {name: h1, role: host, pod: 1, addr: 10.1.0.1}
  - {name: h2, role: host, pod: 1, addr: 10.1.0.2}
  - {name: h3, role: host, pod: 2, addr: 10.2.0.1}
links:
  - [h1:eth0, leaf1:swp1]
  - [h2:eth0, leaf1:swp2]
  - [h3:eth0, leaf2:swp1]
  - {a: leaf1:swp49, b: spine1:swp1, speed_gbps: 400, addr_a: 10.0.1.0, addr_b: 10.0.1.1}
  - {a: leaf1:swp50, b: spine2:swp1, speed_gbps: 400, addr_a: 10.0.1.2, addr_b: 10.0.1.3}
  - {a: leaf2:swp49, b: spine1:swp2, speed_gbps: 400, addr_a: 10.0.2.0, addr_b: 10.0.2.1}
  - {a: leaf2:swp50, b: spine2:swp2, speed_gbps: 400, addr_a: 10.0.2.2, addr_b: 10.0.2.3}
)");
    topology::LoadResult r = topology::loadTopology(in, "fuzz_fabric");
    if (!r.ok()) {
      std::fprintf(stderr, "fuzz fabric: %s\n", r.errors.front().str().c_str());
      std::abort();
    }
    return std::move(r.topology);
  }();
  return topo;
}

}  // namespace netdiag::fuzz
