#pragma once

// What a switch agent checks before it acts on a drain action, in order:
// it holds a drain key; the action's mac verifies under it for this agent;
// the action is well formed; it is within its validity (issued no later
// than the agent's clock allows for skew, not expired, and valid for no
// longer than a bound, so the nonces to remember stay few); its nonce was
// not seen before; its port is one of this node's ports in the plan.
// Each refusal has one stable reason name, used in results, logs and
// metrics.
//
// A restarted agent forgets the nonces it saw: an action replayed after a
// restart and before it expires is accepted again. Executors are idempotent
// (draining a drained port changes nothing), so such a replay can repeat
// only what the analyzer itself asked for within the action's lifetime.
//
// Thread-safety: none; the actuator calls it from one thread.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>

#include "actuator/signing.h"
#include "netdiag/v1/collector.pb.h"

namespace netdiag::actuator {

struct GuardOptions {
  std::string node;                   // this agent's node: its ports are "node:..."
  uint64_t max_lifetime_ms = 600000;  // expires_at - issued_at at most
  uint64_t max_skew_ms = 30000;       // issued_at may be this far ahead of our clock
  size_t max_remembered = 4096;       // nonces held until their action expires
};

// Refusal reasons, stable names.
inline constexpr const char* kNoKey = "no_key";
inline constexpr const char* kBadMac = "bad_mac";
inline constexpr const char* kBadAction = "bad_action";
inline constexpr const char* kExpired = "expired";
inline constexpr const char* kNotYetValid = "not_yet_valid";
inline constexpr const char* kLifetimeTooLong = "lifetime_too_long";
inline constexpr const char* kReplayed = "replayed";
inline constexpr const char* kNotOwnPort = "not_own_port";
inline constexpr const char* kTooMany = "too_many";

class Guard {
 public:
  Guard(GuardOptions options, std::optional<DrainKey> key);

  // "" when `action` may be carried out (its nonce is then remembered until
  // it expires), else the reason it may not. `own_ports`: this node's ports
  // as "node:port".
  std::string check(const v1::DrainAction& action, uint64_t now_ms,
                    const std::unordered_set<std::string>& own_ports);

  size_t remembered() const { return nonces_.size(); }

 private:
  GuardOptions options_;
  std::optional<DrainKey> key_;
  std::map<uint64_t, uint64_t> nonces_;  // nonce -> expires_at_ms
};

}  // namespace netdiag::actuator
