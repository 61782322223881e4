#pragma once

// Port counters turned into per-bucket deltas: errors against received
// packets, tx drops against sent packets, carrier changes, and the latest
// oper state. Counters are cumulative from an arbitrary origin; a value
// lower than the last one is a reset and contributes no delta.

#include <optional>
#include <vector>

#include "analyzer/evidence.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::analyzer {

class PortCounters {
 public:
  PortCounters(size_t ports, size_t buckets, double width_s);

  void add(const telemetry::PortRecord& r);
  void advanceTo(double now);

  // Over the horizon: n = packets, k = errors (rx side) or drops (tx side).
  Tally rxErrors(topology::PortId p) const { return rx_errors_.total(p); }
  Tally txDrops(topology::PortId p) const { return tx_drops_.total(p); }
  double carrierChanges(topology::PortId p) const { return carrier_.total(p).k; }
  // The same over the newest `buckets` buckets only.
  double recentRxErrors(topology::PortId p, size_t buckets) const {
    return rx_errors_.recent(p, buckets).k;
  }
  double recentCarrierChanges(topology::PortId p, size_t buckets) const {
    return carrier_.recent(p, buckets).k;
  }
  // Telemetry time of the port's latest record (-1: none yet).
  double lastReport(topology::PortId p) const { return state_[p].t; }
  // Latest reported oper state; nullopt when never reported.
  std::optional<bool> operUp(topology::PortId p) const;
  // When the port's carrier changed, the last kMaxWindows times (older ones
  // may be past the horizon: callers compare times): each change lies in
  // (from, to], between the sample before it and the one that showed it.
  struct Window {
    double from, to;
  };
  const std::vector<Window>& carrierWindows(topology::PortId p) const { return windows_[p]; }

 private:
  struct State {
    double t = -1;
    std::optional<uint64_t> rx_packets, tx_packets, rx_errors, tx_drops, carrier;
    int8_t oper = -1;  // -1 unknown
  };
  BucketedTallies rx_errors_, tx_drops_, carrier_;
  std::vector<State> state_;
  double horizon_s_;
  std::vector<std::vector<Window>> windows_;  // per port, oldest first, at most kMaxWindows
  static constexpr size_t kMaxWindows = 16;
};

}  // namespace netdiag::analyzer
