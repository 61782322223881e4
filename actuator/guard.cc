#include "actuator/guard.h"

#include <utility>

namespace netdiag::actuator {

Guard::Guard(GuardOptions options, std::optional<DrainKey> key)
    : options_(std::move(options)), key_(std::move(key)) {}

std::string Guard::check(const v1::DrainAction& action, uint64_t now_ms,
                         const std::unordered_set<std::string>& own_ports) {
  for (auto it = nonces_.begin(); it != nonces_.end();) {
    it = it->second < now_ms ? nonces_.erase(it) : std::next(it);
  }
  if (!key_) return kNoKey;
  // Nothing of an action is looked at before its mac verifies, so a forger
  // can neither fill the nonce table nor learn which checks it would pass.
  if (!verify(*key_, options_.node, action)) return kBadMac;
  const bool known_op =
      action.op() == v1::DrainAction::DRAIN || action.op() == v1::DrainAction::RESTORE;
  if (!known_op || action.nonce() == 0 || action.expires_at_ms() < action.issued_at_ms()) {
    return kBadAction;
  }
  if (action.expires_at_ms() < now_ms) return kExpired;
  if (action.issued_at_ms() > now_ms + options_.max_skew_ms) return kNotYetValid;
  if (action.expires_at_ms() - action.issued_at_ms() > options_.max_lifetime_ms) {
    return kLifetimeTooLong;
  }
  if (nonces_.count(action.nonce())) return kReplayed;
  const std::string prefix = options_.node + ":";
  if (action.port().compare(0, prefix.size(), prefix) != 0 || !own_ports.count(action.port())) {
    return kNotOwnPort;
  }
  if (nonces_.size() >= options_.max_remembered) return kTooMany;
  nonces_.emplace(action.nonce(), action.expires_at_ms());
  return "";
}

}  // namespace netdiag::actuator
