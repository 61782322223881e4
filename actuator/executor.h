#pragma once

// Carries out an accepted drain action on the switch: one implementation
// per way of taking a port out of service (frr_executor.h: the port's BGP
// session in FRR; webhook_executor.h: the operator's own automation).
//
// Thread-safety: called from the actuator's one worker thread.

#include <string>
#include <string_view>

#include "netdiag/v1/collector.pb.h"

namespace netdiag::actuator {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;  // "frr", "webhook"
  // Drains or restores `ifname` (the port's name on this node) as `action`
  // says, for agent `agent`. Idempotent: draining a drained port is done.
  // True when done; false and *detail (what failed) when not.
  virtual bool execute(const v1::DrainAction& action, std::string_view agent,
                       std::string_view ifname, std::string* detail) = 0;
};

}  // namespace netdiag::actuator
