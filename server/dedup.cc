#include "server/dedup.h"

namespace netdiag::server {

bool Deduplicator::seen(const std::string& agent, uint64_t epoch, uint64_t seq) const {
  auto a = agents_.find(agent);
  if (a == agents_.end()) return false;
  auto e = a->second.find(epoch);
  if (e == a->second.end()) {
    // An epoch older than every one kept was forgotten to bound memory; its
    // batches are long delivered (agents resend in order), so take it as seen.
    return a->second.size() >= max_epochs_ && epoch < a->second.begin()->first;
  }
  return seq <= e->second.floor || e->second.above.count(seq) > 0;
}

void Deduplicator::mark(const std::string& agent, uint64_t epoch, uint64_t seq) {
  Epochs& epochs = agents_[agent];
  EpochState& s = epochs[epoch];
  if (seq <= s.floor) return;
  s.above.insert(seq);
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
  while (epochs.size() > max_epochs_) epochs.erase(epochs.begin());
}

size_t Deduplicator::heldSeqs() const {
  size_t n = 0;
  for (const auto& [agent, epochs] : agents_) {
    for (const auto& [epoch, s] : epochs) n += s.above.size();
  }
  return n;
}

}  // namespace netdiag::server
