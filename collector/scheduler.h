#pragma once

// The one place that decides when collection happens: tasks run on the
// caller's thread, each on its own cadence. Periodic tasks keep a fixed grid
// (no drift) and each run is moved by a random jitter, so many sources,
// targets or agents do not poll in lockstep; a loop that fell behind skips
// the slots it missed instead of running them in a burst. Self-timed tasks
// (the plan refresh and its backoff) say when they want to run next.
//
// Times are monotonic seconds (Clock::monoSeconds). The caller waits until
// nextDue() and calls runDue(now); tests drive it with times of their own.
//
// Thread-safety: none; one thread adds and runs tasks.

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace netdiag::collector {

struct Cadence {
  double interval_s = 1;
  // Each run moves by up to ±jitter/2 of the interval, uniformly; 0..1.
  double jitter = 0;
  // First run after this long; with random_phase, at a random point of the
  // first interval instead (spreads many targets over the interval).
  double first_s = 0;
  bool random_phase = false;
};

class Scheduler {
 public:
  explicit Scheduler(uint64_t seed) : rng_(seed) {}

  // Runs fn(now) on `cadence`, starting from `now`.
  void every(std::string name, double now, const Cadence& cadence,
             std::function<void(double now)> fn);
  // Runs fn(now) after first_s, then after the delay (seconds) each run returns.
  void selfTimed(std::string name, double now, double first_s,
                 std::function<double(double now)> fn);

  // When the earliest task is due; +infinity with no tasks.
  double nextDue() const;
  // Runs each task due at `now` once, earliest first (ties: in the order
  // added); returns how many ran.
  size_t runDue(double now);
  // Slots a periodic task missed because the loop fell behind.
  uint64_t skipped(const std::string& name) const;

 private:
  struct Task {
    std::string name;
    Cadence cadence;
    bool periodic = true;
    std::function<void(double)> run;
    std::function<double(double)> run_timed;
    double base = 0;  // periodic: the grid slot of the next run
    double due = 0;
    uint64_t skipped = 0;
  };
  double jitterOf(const Cadence& c);

  std::mt19937_64 rng_;
  std::vector<Task> tasks_;
};

}  // namespace netdiag::collector
