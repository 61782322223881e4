#pragma once

// What the planner's rate sizing decided, in words, for `netdiag plan` and
// `netdiag analyzer` (one wording, so the two say the same thing).

#include <string>
#include <vector>

#include "planner/sizing.h"

namespace netdiag::cli {

// One line per fact: met at the base rate; or missed there, the rate needed
// and the rate served (raised, capped, or not raised); links no rate helps.
// `cap_flag` names the option that sets the cap.
std::vector<std::string> sizingLines(const planner::Sizing& s, const std::string& cap_flag);

}  // namespace netdiag::cli
