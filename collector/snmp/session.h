#pragma once

// One switch's SNMP session on net-snmp's single-session API, driven by the
// poller's own poll() loop: no select(), so no 1,024-descriptor ceiling and
// no library-wide session list. At most one request is outstanding; the
// caller sends, polls fd(), calls read() when it is readable and timeout()
// at deadline(), then takes the outcome.
//
// SNMPv3: net-snmp would discover the agent's engine ID with a blocking
// request (at open or before the first send). The session opens with that
// probe off and discovers asynchronously instead (sendDiscovery(), RFC 3414
// §4: an unauthenticated request whose Report carries the engine ID); the
// USM user is then localized to that engine. The first authenticated
// request learns the engine's boots and time from its notInTimeWindow
// Report, which net-snmp answers by resending at once.
//
// Thread-safety: none; every session of a poller is used from its one I/O
// thread (net-snmp's USM tables are process-wide and unlocked).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collector/snmp/oid.h"
#include "collector/snmp/poller_config.h"

// net-snmp's own types, declared here so its headers stay in session.cc.
struct snmp_session;
struct snmp_pdu;

namespace netdiag::collector::snmp {

// Once per process, before any session: no config files, MIBs or
// persistent state read or written, library logging off.
void initNetSnmp();

struct SnmpResult {
  enum class Kind { kResponse, kTimeout, kError };
  Kind kind = Kind::kError;
  std::vector<Varbind> varbinds;
  long error_status = 0;  // RFC 3416 error-status of a response (0: noError)
  std::string error;      // kError, and a response's error-status, in words
};

class SnmpSession {
 public:
  // No network I/O. nullptr and *error when the target cannot be used
  // (bad address, unusable credentials).
  static std::unique_ptr<SnmpSession> open(const SnmpTarget& target, double timeout_s, int retries,
                                           std::string* error);
  ~SnmpSession();
  SnmpSession(const SnmpSession&) = delete;
  SnmpSession& operator=(const SnmpSession&) = delete;

  int fd() const;
  // SNMPv3 before the engine ID is known: sendDiscovery() first.
  bool needsDiscovery() const;
  bool sendDiscovery(std::string* error);
  // GETBULK of `oids`, the first non_repeaters of them read once.
  bool sendBulk(const std::vector<Oid>& oids, int non_repeaters, int max_repetitions,
                std::string* error);
  bool busy() const { return busy_; }
  // Monotonic seconds of the next resend or timeout of the request out.
  double deadline() const { return deadline_; }
  // fd() is readable, or has an error (an ICMP unreachable): then the
  // request fails at once and the session is broken() (close it and open
  // a new one for the next poll: net-snmp cannot cancel a request).
  void read(bool socket_error);
  bool broken() const { return broken_; }
  void timeout(double mono_now);  // at deadline()
  // The outstanding request's outcome, once it has one.
  std::optional<SnmpResult> take();

 private:
  SnmpSession() = default;
  static int callback(int op, ::snmp_session* session, int reqid, ::snmp_pdu* pdu, void* magic);
  bool send(::snmp_pdu* pdu, std::string* error);
  void afterIo();

  void* handle_ = nullptr;
  bool v3_ = false;
  bool discovering_ = false;
  bool busy_ = false;
  bool broken_ = false;
  double timeout_s_ = 1;
  int retries_ = 0;
  double deadline_ = 0;
  int sends_ = 0;  // of the request out (net-snmp resends on its own)
  std::optional<SnmpResult> result_;
};

}  // namespace netdiag::collector::snmp
