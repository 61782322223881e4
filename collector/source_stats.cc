#include "collector/source_stats.h"

#include <algorithm>
#include <set>

#include "collector/clock.h"

namespace netdiag::collector {

void SourceStats::record(const std::string& target, bool ok, double duration_s, double wall_now) {
  std::lock_guard lock(mu_);
  auto it = targets_.find(target);
  if (it == targets_.end()) {
    const size_t named = targets_.size() - targets_.count(kOtherTarget);
    it = targets_.emplace(named < max_targets_ ? target : kOtherTarget, TargetStats{}).first;
  }
  TargetStats& t = it->second;
  ++t.polls;
  if (!ok) ++t.failures;
  t.last_duration_s = duration_s;
  if (ok) t.last_success = std::max(t.last_success, wall_now);
}

void SourceStats::retain(const std::vector<std::string>& targets) {
  const std::set<std::string> keep(targets.begin(), targets.end());
  std::lock_guard lock(mu_);
  for (auto it = targets_.begin(); it != targets_.end();) {
    it = keep.count(it->first) || it->first == kOtherTarget ? std::next(it) : targets_.erase(it);
  }
}

std::map<std::string, TargetStats> SourceStats::snapshot() const {
  std::lock_guard lock(mu_);
  return targets_;
}

TargetPollTimer::TargetPollTimer(std::vector<TargetPoll>* out, std::string target,
                                 std::function<bool()> ok)
    : out_(out),
      target_(std::move(target)),
      ok_(std::move(ok)),
      start_ns_(systemClock().monoNs()) {}

TargetPollTimer::~TargetPollTimer() {
  if (!out_) return;
  const double s = static_cast<double>(systemClock().monoNs() - start_ns_) * 1e-9;
  out_->push_back(TargetPoll{std::move(target_), ok_(), s});
}

}  // namespace netdiag::collector
