#include "collector/clock.h"

#include <chrono>

namespace netdiag::collector {
namespace {

class SystemClock final : public Clock {
 public:
  uint64_t wallNs() const override {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  }
  int64_t monoNs() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

const Clock& systemClock() {
  static const SystemClock clock;
  return clock;
}

int64_t kernelStampAgeNs(uint64_t stamp_ns) {
  // Not the injected wall clock: the kernel stamps on the real one.
  const uint64_t now = systemClock().wallNs();
  return static_cast<int64_t>(now - stamp_ns);
}

}  // namespace netdiag::collector
