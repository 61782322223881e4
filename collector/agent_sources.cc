#include "collector/agent_sources.h"

#include <cassert>

namespace netdiag::collector {

void registerAgentSources(AgentSourceRegistry& registry) {
  [[maybe_unused]] bool fresh = true;
  fresh &= registry.add("counters", makeCountersSource);
  fresh &= registry.add("lldp", makeLldpSource);
  fresh &= registry.add("prober", makeProberSource);
  assert(fresh && "a source name registered twice");
}

}  // namespace netdiag::collector
