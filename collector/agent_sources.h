#pragma once

// The agent's sources: what their factories get, and the one list that
// registers them. A new collector is its own files (or folder) with a
// factory, plus one line in registerAgentSources().
//
//   name      runs        targets              records
//   counters  polled      monitored interfaces v1::PortCounters
//   lldp      continuous  monitored interfaces v1::LldpNeighbor
//   prober    continuous  local probe ports    v1::Probe
//
// Each also exports its own metrics (netdiag_agent_probes_sent_total, ...)
// on the registry in the context.

#include <memory>
#include <string>

#include <prometheus/registry.h>

#include "collector/agent_config.h"
#include "collector/source_registry.h"

namespace netdiag::collector {

struct AgentSourceContext {
  const AgentConfig& config;
  prometheus::Registry& metrics;
};

using AgentSourceRegistry = SourceRegistry<AgentSourceContext>;

// counters, lldp, prober, in that order.
void registerAgentSources(AgentSourceRegistry& registry);

std::unique_ptr<Source> makeCountersSource(const AgentSourceContext& context, std::string* error);
std::unique_ptr<Source> makeLldpSource(const AgentSourceContext& context, std::string* error);
std::unique_ptr<Source> makeProberSource(const AgentSourceContext& context, std::string* error);

}  // namespace netdiag::collector
