#pragma once

// The "snmp" collector source: the SNMP poller's engine (snmp_poller.h) on
// a thread of its own, handing its records over at every batch. Its targets
// are switches, from the poller's config rather than a plan, so it ignores
// scopes.
//
// Thread-safety: as collector/source.h.

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/registry.h>

#include "collector/snmp/poller_config.h"
#include "collector/snmp/snmp_poller.h"
#include "collector/source.h"

namespace netdiag::collector::snmp {

class SnmpSource final : public Source {
 public:
  SnmpSource(const PollerConfig& config, std::map<std::string, std::set<std::string>> known_ports,
             prometheus::Registry& metrics, std::vector<std::string>* problems);
  ~SnmpSource() override;

  double interval() const override { return 0; }
  void applyScope(const SourceScope&, std::vector<std::string>*) override {}
  void collect(double wall_now, v1::Batch& out, std::vector<std::string>* problems) override;
  void stop() override;

  SnmpPoller& poller() { return *poller_; }

 private:
  std::unique_ptr<SnmpPoller> poller_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace netdiag::collector::snmp
