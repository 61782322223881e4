#include "collector/scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace netdiag::collector {

double Scheduler::jitterOf(const Cadence& c) {
  const double j = std::clamp(c.jitter, 0.0, 1.0);
  if (j == 0) return 0;
  return std::uniform_real_distribution<double>(-0.5, 0.5)(rng_) * j * c.interval_s;
}

void Scheduler::every(std::string name, double now, const Cadence& cadence,
                      std::function<void(double)> fn) {
  Task t;
  t.name = std::move(name);
  t.cadence = cadence;
  t.run = std::move(fn);
  const double phase = cadence.random_phase
                           ? std::uniform_real_distribution<double>(0, cadence.interval_s)(rng_)
                           : cadence.first_s;
  t.base = now + phase;
  t.due = t.base;  // the first run is not jittered: first_s means what it says
  tasks_.push_back(std::move(t));
}

void Scheduler::selfTimed(std::string name, double now, double first_s,
                          std::function<double(double)> fn) {
  Task t;
  t.name = std::move(name);
  t.periodic = false;
  t.run_timed = std::move(fn);
  t.due = now + first_s;
  tasks_.push_back(std::move(t));
}

double Scheduler::nextDue() const {
  double t = std::numeric_limits<double>::infinity();
  for (const Task& task : tasks_) t = std::min(t, task.due);
  return t;
}

size_t Scheduler::runDue(double now) {
  std::vector<size_t> due;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].due <= now) due.push_back(i);
  }
  std::stable_sort(due.begin(), due.end(),
                   [&](size_t a, size_t b) { return tasks_[a].due < tasks_[b].due; });
  for (const size_t i : due) {
    Task& t = tasks_[i];
    if (!t.periodic) {
      t.due = now + std::max(0.0, t.run_timed(now));
      continue;
    }
    t.run(now);
    const double interval = t.cadence.interval_s;
    t.base += interval;
    if (t.base < now) {  // fell behind by whole slots: skip them
      const double missed = std::ceil((now - t.base) / interval);
      t.skipped += static_cast<uint64_t>(missed);
      t.base += missed * interval;
    }
    t.due = t.base + jitterOf(t.cadence);
  }
  return due.size();
}

uint64_t Scheduler::skipped(const std::string& name) const {
  for (const Task& t : tasks_) {
    if (t.name == name) return t.skipped;
  }
  return 0;
}

}  // namespace netdiag::collector
