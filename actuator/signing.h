#pragma once

// Drain actions are signed: the analyzer and each switch agent that may act
// share a drain key, and an action's mac is HMAC-SHA256 (RFC 2104) under it
// over the action's fields and the name of the agent it is for. So an action
// cannot be forged without the key, nor replayed to another agent, whatever
// carries it (docs/security.md, "Drain actions").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "netdiag/v1/collector.pb.h"

namespace netdiag::actuator {

// The key: a file's bytes, trailing whitespace stripped (so `head -c 32
// /dev/urandom | base64 > drain.key` makes one).
struct DrainKey {
  std::string bytes;
};

inline constexpr size_t kMinDrainKeyBytes = 32;
inline constexpr size_t kMaxDrainKeyBytes = 4096;

// Reads a key file. nullopt and *error (naming the file) when it cannot be
// read, is shorter than kMinDrainKeyBytes or longer than kMaxDrainKeyBytes
// after stripping, or may be read by group or others (mode & 077: a key
// anyone on the switch can read lets anyone drain its links).
std::optional<DrainKey> loadDrainKey(const std::string& path, std::string* error);

// The same rules for any shared secret file (the analyzer's API token):
// its bytes, or nullopt and *error starting with `what` and the path.
std::optional<std::string> loadSecretFile(const std::string& path, const std::string& what,
                                          std::string* error);

// The bytes the mac covers: every field but mac, and `agent`, each
// length-prefixed so no field can run into the next.
std::string signedBytes(const v1::DrainAction& action, std::string_view agent);

// Sets action.mac for `agent`.
void sign(const DrainKey& key, std::string_view agent, v1::DrainAction& action);

// Whether action.mac is the mac of `action` for `agent` under `key`
// (compared in constant time).
bool verify(const DrainKey& key, std::string_view agent, const v1::DrainAction& action);

}  // namespace netdiag::actuator
