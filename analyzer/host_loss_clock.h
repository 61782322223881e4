#pragma once

// How long each host's flows have been losing without a break. A busy host
// (its responder starved, its kernel dropping) is a passing thing: the
// host-side noise netdiag must not page on lasts 60-300 s (docs/formats.md,
// docs/localization.md step 6), while a bad cable stays bad until someone
// swaps it. Once a host's flows have lost for longer than a busy host
// lasts, the host itself is no longer an explanation of the losses on its
// access link: on round trips of a one-NIC host it is the only thing that
// tells the two apart (explain.cc, accessAmbiguity). Owned by the engine,
// fed once a pass, read by the next pass's explanation.

#include <optional>
#include <unordered_map>

#include "topology/model.h"

namespace netdiag::analyzer {

class HostLossClock {
 public:
  // gap_s: how long an episode may go without affirmed loss and still be
  // the same episode (passes look at the short horizon, which can hold no
  // loss for a while at a low rate).
  explicit HostLossClock(double gap_s) : gap_s_(gap_s) {}

  // The short horizon affirms loss on `host`'s flows in the pass at `now`.
  void lossy(topology::NodeId host, double now);
  // Ends the episodes with no affirmed loss for longer than the gap.
  void endPass(double now);
  // When the host's current episode began (none: no episode).
  std::optional<double> since(topology::NodeId host) const;

 private:
  struct Episode {
    double since, last;
  };
  double gap_s_;
  std::unordered_map<topology::NodeId, Episode> episodes_;
};

}  // namespace netdiag::analyzer
