#pragma once

// Drain keys and signed actions for the actuator's tests.

#include <cstdint>
#include <string>

#include "actuator/signing.h"
#include "netdiag/v1/collector.pb.h"

namespace netdiag::actuator::testing {

inline DrainKey testKey(char fill = 'k') { return DrainKey{std::string(32, fill)}; }

// A drain of `port` for `agent`, issued at `now_ms`, valid for 60 s, signed.
inline v1::DrainAction signedAction(const std::string& agent, const std::string& port,
                                    uint64_t now_ms, uint64_t nonce,
                                    const DrainKey& key = testKey()) {
  v1::DrainAction a;
  a.set_incident(42);
  a.set_port(port);
  a.set_op(v1::DrainAction::DRAIN);
  a.set_nonce(nonce);
  a.set_issued_at_ms(now_ms);
  a.set_expires_at_ms(now_ms + 60000);
  a.set_reason("link_loss 3.0% leaf0:swp3->spine0:swp1");
  sign(key, agent, a);
  return a;
}

}  // namespace netdiag::actuator::testing
