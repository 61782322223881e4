#pragma once

// The drain policy file (`netdiag analyzer --drain-policy-file`;
// docs/operations.md, Drain policy), YAML:
//
//   mode: auto                   # advise | approve | auto
//   min_confidence: 0.999
//   hold_passes: 3
//   min_width_share: 0.5
//   max_drained_per_scope: 1
//   max_drains_per_hour: 4
//   max_open_incidents: 3
//   restore_clean_s: 60          # counters clean this long before a restore
//   scopes:                      # overrides per pod or tier pair
//     "pod 3": {mode: approve}
//     spine-superspine: {mode: advise}
//
// Every key is optional (drain::Policy has the defaults). A scope may set
// mode, min_confidence, hold_passes, min_width_share and
// max_drained_per_scope; the hourly and open-incident bounds and
// restore_clean_s are analyzer-wide. Unknown keys, wrong types and values out of range are
// errors naming the file, the line and the key.

#include <optional>
#include <string>

#include "drain/policy.h"
#include "topology/model.h"

namespace netdiag::drain {

std::optional<PolicySet> parsePolicy(const std::string& text, const std::string& origin,
                                     std::string* error);
std::optional<PolicySet> loadPolicyFile(const std::string& path, std::string* error);

// The overrides no link of `topo` can fall in ("pod 9" when no node is in
// pod 9, a tier pair of roles it lacks), in words; empty when all can.
std::string unknownScopes(const PolicySet& policies, const topology::Topology& topo);

}  // namespace netdiag::drain
