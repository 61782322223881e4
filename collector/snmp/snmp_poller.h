#pragma once

// The SNMP poller's engine: every target (switch) on its own cadence,
// jittered (collector/scheduler.h), at most max_in_flight polls at once,
// each a chain of GETBULK requests on the target's session
// (collector/snmp/session.h) walking IF-MIB + EtherLike-MIB (counters) and
// LLDP-MIB (neighbours), turned into port and lldp records
// (port_table.h, lldp_table.h). One thread drives it all with poll(2).
//
// Per target and poll it records an outcome into the source's stats and
// exports its health, so a target that goes silent is visible, never just
// absent (every target's series exist from the start):
//   netdiag_snmp_target_up{target}              1 while its last poll worked
//   netdiag_snmp_errors_total{target,reason}    timeout, auth, response
//                                               (an error-status), malformed,
//                                               overrun (a poll still running
//                                               when the next was due), send
//   netdiag_snmp_varbinds_total, netdiag_snmp_requests_total
//
// A request asks for at most max_varbinds values (max_repetitions rows,
// fewer when many columns are open); tooBig halves it. A poll still
// running after one interval is abandoned when its next response comes.
//
// Thread-safety: step() and runOnce() from one thread; take() and stats
// from any.

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <prometheus/registry.h>

#include "collector/snmp/poller_config.h"
#include "collector/source_stats.h"
#include "netdiag/v1/collector.pb.h"

namespace netdiag::collector::snmp {

class SnmpPoller {
 public:
  // known_ports: per node, the topology's ports (empty: report every
  // interface). Targets whose session cannot open are reported in
  // *problems and kept (counted as failing polls), not dropped.
  SnmpPoller(const PollerConfig& config, std::map<std::string, std::set<std::string>> known_ports,
             prometheus::Registry& metrics, SourceStats& stats, std::vector<std::string>* problems);
  ~SnmpPoller();
  SnmpPoller(const SnmpPoller&) = delete;
  SnmpPoller& operator=(const SnmpPoller&) = delete;

  // Runs what is due and waits up to max_wait_s for responses.
  void step(double max_wait_s);
  // Polls every target once (counters, then LLDP when enabled), as fast as
  // the bounds allow; returns when all are done or timeout_s passed.
  bool runOnce(double timeout_s);
  // The records made since the last take(), and problems worth a log line.
  void take(v1::Batch& out, std::vector<std::string>* problems);

  struct Totals {
    uint64_t polls = 0, failures = 0, requests = 0, varbinds = 0, overruns = 0;
  };
  Totals totals() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace netdiag::collector::snmp
