#include "analyzer/host_loss_clock.h"

#include <iterator>

namespace netdiag::analyzer {

void HostLossClock::lossy(topology::NodeId host, double now, double rate) {
  Episode& e = episodes_.try_emplace(host, Episode{now, now, rate}).first->second;
  e.last = now;
  e.rate = rate;
}

void HostLossClock::endPass(double now, const Stopped& stopped) {
  for (auto it = episodes_.begin(); it != episodes_.end();) {
    const Episode& e = it->second;
    const bool over = e.last < now && (now - e.last > gap_s_ || stopped(it->first, e.last, e.rate));
    it = over ? episodes_.erase(it) : std::next(it);
  }
}

std::optional<HostLossClock::Episode> HostLossClock::episode(topology::NodeId host) const {
  const auto it = episodes_.find(host);
  if (it == episodes_.end()) return std::nullopt;
  return it->second;
}

}  // namespace netdiag::analyzer
