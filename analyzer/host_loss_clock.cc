#include "analyzer/host_loss_clock.h"

#include <iterator>

namespace netdiag::analyzer {

void HostLossClock::lossy(topology::NodeId host, double now) {
  episodes_.try_emplace(host, Episode{now, now}).first->second.last = now;
}

void HostLossClock::endPass(double now) {
  for (auto it = episodes_.begin(); it != episodes_.end();) {
    it = now - it->second.last > gap_s_ ? episodes_.erase(it) : std::next(it);
  }
}

std::optional<double> HostLossClock::since(topology::NodeId host) const {
  const auto it = episodes_.find(host);
  if (it == episodes_.end()) return std::nullopt;
  return it->second.since;
}

}  // namespace netdiag::analyzer
