#pragma once

// Writes a Topology as a file of formats.md §1. Links are written one per
// line (short form, or a one-line flow map when they carry speed or
// addresses) so that files of 100k+ links stay small and diffable.

#include <ostream>

#include "topology/model.h"

namespace netdiag::topology {

void writeYaml(const Topology& topo, std::ostream& out);
void writeJson(const Topology& topo, std::ostream& out);

}  // namespace netdiag::topology
