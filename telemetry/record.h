#pragma once

// Telemetry records of formats.md §2, resolved against a topology: ports are
// ids and paths are directed links, so consumers (the analyzer, the scorer's
// tools) never touch strings on the hot path.

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "topology/model.h"

namespace netdiag::telemetry {

using topology::DirLinkId;
using topology::PortId;

inline constexpr double kDefaultWindowS = 5.0;

// Active probes of one flow over (t - window_s, t].
struct ProbeRecord {
  double t = 0;
  PortId src = topology::kNone;
  PortId dst = topology::kNone;
  uint64_t flow = 0;  // e.g. the UDP source port
  double window_s = kDefaultWindowS;
  uint32_t sent = 0;
  uint32_t lost = 0;
  // One-way split, when the probe protocol can tell (lost_fwd + lost_rev == lost).
  std::optional<uint32_t> lost_fwd;
  std::optional<uint32_t> lost_rev;
  double rtt_us_p50 = NAN;  // NaN: absent
  double rtt_us_p99 = NAN;
  // The forward path as directed links (empty: unknown). A contract `path`
  // ending on an egress port maps to the link that port leaves by.
  std::vector<DirLinkId> path;
  bool path_partial = false;
  std::vector<DirLinkId> reply_path;  // dst -> src; empty: unknown

  bool hasRtt() const { return !std::isnan(rtt_us_p50); }
  bool hasOneWay() const { return lost_fwd.has_value() && lost_rev.has_value(); }
};

// Cumulative counters of one port; any counter may be absent.
struct PortRecord {
  double t = 0;
  PortId port = topology::kNone;
  std::optional<bool> oper_up;
  std::optional<uint64_t> rx_packets, tx_packets, rx_errors, rx_crc_errors, rx_drops, tx_drops,
      fec_uncorrectable, carrier_changes;
  // Not in the log: the live analyzer sets it when another collector than
  // the last one reports the port, whose counters then have another origin
  // (no delta against the last sample).
  bool new_origin = false;
};

// A neighbour seen on a port. `neighbor` is kept verbatim: it may name a
// node or port the topology does not have, which is evidence of miscabling.
struct LldpRecord {
  double t = 0;
  PortId port = topology::kNone;
  std::string neighbor;
};

// Receives records in arrival order. Implementations say whether they are
// thread-safe; the simulator and the replay reader call from one thread.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void onProbe(const ProbeRecord& r) = 0;
  virtual void onPort(const PortRecord& r) = 0;
  virtual void onLldp(const LldpRecord& r) = 0;
};

}  // namespace netdiag::telemetry
