#pragma once

// A Prometheus counter fed from a running total kept elsewhere (a reader's
// own tally): it advances by what the total grew since the last set().

#include <algorithm>

#include <prometheus/counter.h>

namespace netdiag::collector {

struct TotalCounter {
  prometheus::Counter* counter = nullptr;
  double last = 0;
  void set(double total) {
    if (total > last) counter->Increment(total - last);
    last = std::max(last, total);
  }
};

}  // namespace netdiag::collector
