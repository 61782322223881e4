// A switch agent's view of an acknowledgement from untrusted bytes: the
// drain actions it carries go through the guard (actuator/guard.h) as the
// actuator does, then through both executors' command and body makers. A
// valid mac can only come from a fuzzed copy of a signed seed, so the
// harness also re-signs each action and checks that the guard then gets
// past the mac (any refusal must be one of its reasons).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <unordered_set>

#include "actuator/frr_executor.h"
#include "actuator/guard.h"
#include "actuator/signing.h"
#include "actuator/text.h"
#include "actuator/webhook_executor.h"
#include "netdiag/v1/collector.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace netdiag;
  using namespace netdiag::actuator;
  v1::Ack ack;
  if (!ack.ParseFromArray(data, static_cast<int>(size))) return 0;
  static const DrainKey key{std::string(32, 'k')};
  static const std::unordered_set<std::string> own = {"leaf0:swp1", "leaf0:swp3"};
  static const std::set<std::string> reasons = {kNoKey,    kBadMac,      kBadAction,
                                                kExpired,  kNotYetValid, kLifetimeTooLong,
                                                kReplayed, kNotOwnPort,  kTooMany};
  Guard guard(GuardOptions{"leaf0", 600000, 30000, 64}, key);
  constexpr uint64_t kNow = 1'800'000'000'000;
  for (const v1::DrainAction& a : ack.actions()) {
    const std::string verdict = guard.check(a, kNow, own);
    if (!verdict.empty() && !reasons.count(verdict)) std::abort();
    v1::DrainAction signed_copy = a;
    sign(key, "leaf0", signed_copy);
    if (!verify(key, "leaf0", signed_copy) || verify(key, "leaf1", signed_copy)) std::abort();
    if (guard.check(signed_copy, kNow, own) == kBadMac) std::abort();
    const std::string port = a.port();
    const std::string ifname =
        port.substr(port.find(':') == std::string::npos ? 0 : port.find(':') + 1);
    (void)frrCommands(a, ifname, true);
    (void)webhookBody(a, "leaf0", ifname);
    const std::string text = printableText(a.reason(), 200);
    for (char c : text) {
      if (c < 0x20 || c > 0x7e) std::abort();
    }
  }
  return 0;
}
