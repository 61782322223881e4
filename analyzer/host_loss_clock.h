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

#include <functional>
#include <optional>
#include <unordered_map>

#include "topology/model.h"

namespace netdiag::analyzer {

class HostLossClock {
 public:
  // An episode: the first and the newest pass whose short horizon affirmed
  // loss on the host's flows, and the rate it was at.
  struct Episode {
    double since = 0, last = 0, rate = 0;
  };
  // Whether the evidence after `last` rejects loss at `rate` on the host's
  // flows: the loss stopped (a low rate can go a while without a loss and
  // not have stopped).
  using Stopped = std::function<bool(topology::NodeId host, double last, double rate)>;

  // gap_s: how long an episode may go without affirmed loss at most, the
  // evidence's horizon (what is older is forgotten).
  explicit HostLossClock(double gap_s) : gap_s_(gap_s) {}

  // The short horizon affirms loss at `rate` on `host`'s flows at `now`.
  void lossy(topology::NodeId host, double now, double rate);
  // Ends the episodes not affirmed at `now` whose loss stopped, or that no
  // pass affirmed for longer than the gap.
  void endPass(double now, const Stopped& stopped);
  // The host's current episode, if any.
  std::optional<Episode> episode(topology::NodeId host) const;

 private:
  double gap_s_;
  std::unordered_map<topology::NodeId, Episode> episodes_;
};

}  // namespace netdiag::analyzer
