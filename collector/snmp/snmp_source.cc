#include "collector/snmp/snmp_source.h"

namespace netdiag::collector::snmp {

SnmpSource::SnmpSource(const PollerConfig& config,
                       std::map<std::string, std::set<std::string>> known_ports,
                       prometheus::Registry& metrics, std::vector<std::string>* problems)
    : Source("snmp", std::max<size_t>(config.targets.size(), 1)) {
  poller_ = std::make_unique<SnmpPoller>(config, std::move(known_ports), metrics, mutableStats(),
                                         problems);
  thread_ = std::thread([this] {
    // Short waits: stop() is noticed within 100 ms.
    while (!stopping_.load()) poller_->step(0.1);
  });
}

SnmpSource::~SnmpSource() { stop(); }

void SnmpSource::collect(double, v1::Batch& out, std::vector<std::string>* problems) {
  poller_->take(out, problems);
}

void SnmpSource::stop() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
}

}  // namespace netdiag::collector::snmp
