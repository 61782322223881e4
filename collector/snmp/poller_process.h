#pragma once

// `netdiag poll snmp`: one process polling many switches over SNMP
// (snmp_source.h) and streaming what it reads to the analyzer as the agent
// `identity`, on the agents' own wire (spool, uplink, at-least-once): the
// analyzer's --collectors file says which switches that identity may speak
// for. Its own /metrics (metrics_address) carry the per-target health, the
// source's poll stats (netdiag_poller_source_*) and the uplink's state.
//
// Thread-safety: run() on one thread; requestStop() from any.

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "collector/snmp/poller_config.h"

namespace netdiag::collector::snmp {

using PollerLog = std::function<void(const std::string&)>;

class PollerProcess {
 public:
  // known_ports: per node, the ports to report (the topology's); empty: all.
  static std::unique_ptr<PollerProcess> create(
      const PollerConfig& config, std::map<std::string, std::set<std::string>> known_ports,
      PollerLog log, std::string* error);
  ~PollerProcess();

  void run();
  void requestStop();
  int metricsPort() const;

  struct Impl;

 private:
  explicit PollerProcess(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace netdiag::collector::snmp
