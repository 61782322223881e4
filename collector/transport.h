#pragma once

// Where the agent's batches go and its plan comes from: the analyzer's gRPC
// stream (collector/uplink.h) or a NATS JetStream bus
// (collector/bus_uplink.h). Either way every batch is spooled first and
// leaves the spool only once it is acknowledged, so delivery is at least
// once and the analyzer drops duplicates by (agent, epoch, seq).
//
// Thread-safety: every method may be called from any thread.

#include <cstdint>
#include <optional>
#include <string>

#include "netdiag/v1/collector.pb.h"

namespace netdiag::collector {

struct UplinkStats {
  bool connected = false;
  // Messages: a split batch counts once per part.
  uint64_t sent = 0, acked = 0, duplicates = 0, reconnects = 0;
  uint64_t split = 0;              // batches split (at send() or from the spool)
  uint64_t oversized_records = 0;  // records alone larger than max_batch_bytes, dropped
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Stamps agent/epoch/seq, spools the batch and wakes the sender; never
  // blocks on the network.
  virtual void send(v1::Batch batch) = 0;
  // The analyzer's plan for this agent (`known_version`: the one in use,
  // 0 for none); nullopt and *error on failure.
  virtual std::optional<v1::AgentPlan> fetchPlan(uint64_t known_version, std::string* error) = 0;
  virtual UplinkStats stats() const = 0;
  virtual std::string lastError() const = 0;  // for logs; "" while none
  virtual std::string describe() const = 0;   // "analyzer HOST:PORT", "bus nats://..."
  virtual void stop() = 0;                    // unacknowledged batches stay in the spool
};

}  // namespace netdiag::collector
