#include "analyzer/counters.h"

namespace netdiag::analyzer {
namespace {

// The increase since the last sample; nullopt when there is no previous
// sample or the counter went backwards (a reset).
std::optional<double> delta(std::optional<uint64_t>& last, const std::optional<uint64_t>& now) {
  std::optional<double> d;
  if (now && last) {
    if (*now >= *last) d = static_cast<double>(*now - *last);
  }
  if (now) last = now;
  return d;
}

}  // namespace

PortCounters::PortCounters(size_t ports, size_t buckets, double width_s)
    : rx_errors_(ports, buckets, width_s),
      tx_drops_(ports, buckets, width_s),
      carrier_(ports, buckets, width_s),
      state_(ports),
      horizon_s_(static_cast<double>(buckets) * width_s),
      windows_(ports) {}

void PortCounters::add(const telemetry::PortRecord& r) {
  State& s = state_[r.port];
  if (r.t < s.t) return;  // an older sample than one already seen
  if (r.new_origin) {
    s.rx_packets = s.tx_packets = s.rx_errors = s.tx_drops = s.carrier = std::nullopt;
  }
  auto rx = delta(s.rx_packets, r.rx_packets);
  auto tx = delta(s.tx_packets, r.tx_packets);
  // CRC errors are the precise signal; rx_errors stands in when absent.
  const auto& errors = r.rx_crc_errors ? r.rx_crc_errors : r.rx_errors;
  auto err = delta(s.rx_errors, errors);
  auto drops = delta(s.tx_drops, r.tx_drops);
  auto carrier = delta(s.carrier, r.carrier_changes);
  if (err && *err > 0) rx_errors_.add(r.port, r.t, rx.value_or(0), *err);
  if (rx && (!err || *err == 0)) rx_errors_.add(r.port, r.t, *rx, 0);
  if (drops || tx) tx_drops_.add(r.port, r.t, tx.value_or(0), drops.value_or(0));
  if (carrier && *carrier > 0) {
    carrier_.add(r.port, r.t, 0, *carrier);
    auto& w = windows_[r.port];
    if (w.size() == kMaxWindows) w.erase(w.begin());
    w.push_back({s.t < 0 ? r.t - horizon_s_ : s.t, r.t});
  }
  if (r.oper_up) {
    s.oper = *r.oper_up ? 1 : 0;
  }
  s.t = r.t;
}

void PortCounters::advanceTo(double now) {
  rx_errors_.advanceTo(now);
  tx_drops_.advanceTo(now);
  carrier_.advanceTo(now);
}

std::optional<bool> PortCounters::operUp(topology::PortId p) const {
  if (state_[p].oper < 0) return std::nullopt;
  return state_[p].oper == 1;
}

}  // namespace netdiag::analyzer
