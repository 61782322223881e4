#pragma once

// The collector's one source of time. Two clocks, for two jobs:
//   wall  Unix time; stamps records (formats.md: `t`) and aligns probe
//         windows. It may step (NTP, an operator), so never subtract two
//         wall readings to measure a duration.
//   mono  never steps; for durations (RTTs, poll times) and schedules.
// Tests inject their own (e.g. a wall clock that steps) instead of sleeping.
//
// Thread-safety: implementations must be callable from any thread.

#include <cstdint>

namespace netdiag::collector {

class Clock {
 public:
  virtual ~Clock() = default;
  // Nanoseconds since the Unix epoch.
  virtual uint64_t wallNs() const = 0;
  // Nanoseconds since an arbitrary fixed point (boot).
  virtual int64_t monoNs() const = 0;

  double wallSeconds() const { return static_cast<double>(wallNs()) * 1e-9; }
  double monoSeconds() const { return static_cast<double>(monoNs()) * 1e-9; }
};

// CLOCK_REALTIME and CLOCK_MONOTONIC (std::chrono's system and steady clocks).
const Clock& systemClock();

// How long ago the kernel stamped a packet with `stamp_ns` (SO_TIMESTAMPNS
// is on CLOCK_REALTIME), read on that same clock now: the one way to bring a
// kernel receive time onto the monotonic clock. Negative when the realtime
// clock stepped back since; callers then fall back to "now".
int64_t kernelStampAgeNs(uint64_t stamp_ns);

}  // namespace netdiag::collector
