#include "server/dedup.h"

namespace netdiag::server {

bool Deduplicator::seen(const std::string& agent, uint64_t epoch, uint64_t seq) const {
  auto a = agents_.find(agent);
  if (a == agents_.end()) return false;
  auto e = a->second.by_epoch.find(epoch);
  if (e == a->second.by_epoch.end()) return false;  // new (or forgotten): deliver it
  return seq <= e->second.floor || e->second.above.count(seq) > 0;
}

void Deduplicator::mark(const std::string& agent, uint64_t epoch, uint64_t seq) {
  Epochs& epochs = agents_[agent];
  EpochState& s = epochs.by_epoch[epoch];
  s.used = ++epochs.marks;
  if (seq > s.floor) s.above.insert(seq);
  // Absorb the run that continues the floor.
  while (!s.above.empty() && *s.above.begin() == s.floor + 1) {
    s.floor = *s.above.begin();
    s.above.erase(s.above.begin());
  }
  // Too many above a gap: the gap's batches were dropped by the agent's
  // spool and will not come; move the floor over it.
  while (s.above.size() > window_) {
    s.floor = *s.above.begin();
    s.above.erase(s.above.begin());
    while (!s.above.empty() && *s.above.begin() == s.floor + 1) {
      s.floor = *s.above.begin();
      s.above.erase(s.above.begin());
    }
  }
  // Forget the epoch marked least recently (not the smallest: epochs are
  // not ordered in time).
  while (epochs.by_epoch.size() > max_epochs_) {
    auto oldest = epochs.by_epoch.begin();
    for (auto it = epochs.by_epoch.begin(); it != epochs.by_epoch.end(); ++it) {
      if (it->second.used < oldest->second.used) oldest = it;
    }
    epochs.by_epoch.erase(oldest);
  }
}

size_t Deduplicator::heldSeqs() const {
  size_t n = 0;
  for (const auto& [agent, epochs] : agents_) {
    for (const auto& [epoch, s] : epochs.by_epoch) n += s.above.size();
  }
  return n;
}

}  // namespace netdiag::server
