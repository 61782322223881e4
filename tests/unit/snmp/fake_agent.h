#pragma once

// A fake SNMPv2c agent on a loopback UDP port, for the answers a real
// snmpd never gives: wrong types, OIDs out of order, endless tables,
// garbage, silence. It decodes each GETBULK (just enough BER for that) and
// answers with whatever the handler returns, encoded by hand.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "collector/snmp/oid.h"

namespace netdiag::collector::snmp::testing {

struct BulkRequest {
  int64_t request_id = 0;
  int64_t non_repeaters = 0, max_repetitions = 0;
  std::vector<Oid> oids;
};

class FakeAgent {
 public:
  // The handler's varbinds go back as the GetResponse; raw bytes instead
  // when it sets *raw (garbage); nothing at all when it returns false.
  using Handler =
      std::function<bool(const BulkRequest&, std::vector<Varbind>* out, std::string* raw)>;
  explicit FakeAgent(Handler handler);
  ~FakeAgent();
  uint16_t port() const { return port_; }
  uint64_t requests() const { return requests_.load(); }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  Handler handler_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> requests_{0};
  std::thread thread_;
};

}  // namespace netdiag::collector::snmp::testing
