#pragma once

// A source's own tallies, per target (an interface, a switch, a peer): polls,
// failed polls, how long the last one took and when one last succeeded. The
// source records; the metrics exporter reads snapshots. Bounded: past
// max_targets distinct targets, the rest share one "_other" entry, so a
// source with many targets cannot blow up the metrics' cardinality.
//
// Thread-safety: every method may be called from any thread (an async
// source records from its own I/O thread).

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace netdiag::collector {

struct TargetStats {
  uint64_t polls = 0;
  uint64_t failures = 0;
  double last_duration_s = 0;
  double last_success = 0;  // wall clock, Unix seconds; 0: never
};

class SourceStats {
 public:
  static constexpr size_t kDefaultMaxTargets = 256;
  static constexpr const char* kOtherTarget = "_other";

  explicit SourceStats(size_t max_targets = kDefaultMaxTargets) : max_targets_(max_targets) {}

  // One poll of `target`: whether it worked, how long it took (monotonic
  // seconds), and the wall time it ended.
  void record(const std::string& target, bool ok, double duration_s, double wall_now);
  // The target set changed (a new plan): forget the others.
  void retain(const std::vector<std::string>& targets);
  std::map<std::string, TargetStats> snapshot() const;

 private:
  mutable std::mutex mu_;
  size_t max_targets_;
  std::map<std::string, TargetStats> targets_;
};

// One poll of one target as a reader saw it, for its source to record.
struct TargetPoll {
  std::string target;
  bool ok = true;
  double duration_s = 0;
};

// Times one poll of one target: when it goes out of scope (however the
// reader's loop leaves the iteration) it appends {target, ok(), duration}
// to *out; nothing when out is null.
class TargetPollTimer {
 public:
  TargetPollTimer(std::vector<TargetPoll>* out, std::string target, std::function<bool()> ok);
  ~TargetPollTimer();
  TargetPollTimer(const TargetPollTimer&) = delete;
  TargetPollTimer& operator=(const TargetPollTimer&) = delete;

 private:
  std::vector<TargetPoll>* out_;
  std::string target_;
  std::function<bool()> ok_;
  int64_t start_ns_;
};

}  // namespace netdiag::collector
