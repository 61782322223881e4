#pragma once

// De-duplication of agent batches by (agent, epoch, seq). Agents resend
// every batch not yet acknowledged (at-least-once delivery), so the same
// batch can arrive twice: once before a broken stream and once after the
// reconnect. Memory is bounded per agent: per epoch a floor (every seq at or
// below it was seen) plus at most `window` seqs above it; past that the floor
// moves up over the gap (seqs a spool dropped never come), and only the
// `max_epochs` epochs of an agent marked most recently are kept.
//
// Epochs are names, not times: an agent takes a new one at each start (from
// its spool directory, or at random without one: collector/uplink.h), so a
// new epoch may be smaller than an old one. An epoch not held is new, never
// "too old": a forgotten epoch's resent batch counts twice (at-least-once),
// but no epoch, however many came before it, can make an agent's batches
// read as duplicates. Only the agent itself reaches its entry: the analyzer
// looks batches up here only once their stream's identity is established
// and the agent is one it knows (server/authority.h).
//
// Thread-safety: none; the daemon calls it under its engine lock.

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

namespace netdiag::server {

class Deduplicator {
 public:
  explicit Deduplicator(size_t window = 4096, size_t max_epochs = 8)
      : window_(window), max_epochs_(max_epochs) {}

  // True when (agent, epoch, seq) was already marked.
  bool seen(const std::string& agent, uint64_t epoch, uint64_t seq) const;
  // Records it as delivered (call once the batch was ingested).
  void mark(const std::string& agent, uint64_t epoch, uint64_t seq);

  size_t agents() const { return agents_.size(); }
  // Seqs held above the floors, all agents (for tests of the bound).
  size_t heldSeqs() const;

 private:
  struct EpochState {
    uint64_t floor = 0;
    std::set<uint64_t> above;
    uint64_t used = 0;  // the agent's mark count when last marked (for eviction)
  };
  struct Epochs {
    std::map<uint64_t, EpochState> by_epoch;
    uint64_t marks = 0;
  };

  size_t window_, max_epochs_;
  std::unordered_map<std::string, Epochs> agents_;
};

}  // namespace netdiag::server
