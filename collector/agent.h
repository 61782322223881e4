#pragma once

// `netdiag agent`: one process per host (or Linux switch). It gets its probe
// plan from the analyzer (Uplink::fetchPlan, re-checked every plan_refresh
// and applied when the version changes), answers peers' probes
// (Responder) and runs its sources (collector/agent_sources.h): it probes
// its own flows (Prober, with path discovery), reads the monitored ports'
// counters (CounterReader) and LLDP neighbours (LldpCapture). One scheduler
// (collector/scheduler.h) polls the polled ones, and every batch_interval
// the agent hands what they have to the uplink as one v1::Batch (spooled
// until the analyzer acknowledges it). Its own Prometheus /metrics,
// per-source ones included, are served on metrics_address.
//
// Privileges: probing, responding (any port above 1023; the default 7601)
// and path discovery (UDP + IP_RECVERR) need none. Only LLDP capture needs
// CAP_NET_RAW (libpcap); without it the agent runs and reports the failure
// once. CAP_NET_BIND_SERVICE only if the plan's responder port is < 1024.
//
// Thread-safety: run() on one thread; requestStop() from any thread (e.g. a
// signal-waiting thread).

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "collector/agent_config.h"

namespace netdiag::collector {

// Where the agent's log lines go (the CLI writes them to stderr).
using AgentLog = std::function<void(const std::string&)>;

class Agent {
 public:
  // Checks the config, opens the spool, starts the uplink and /metrics.
  // nullptr and *error when any of it fails.
  static std::unique_ptr<Agent> create(const AgentConfig& config, AgentLog log, std::string* error);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Runs until requestStop(); then closes the prober, puts a last batch
  // into the spool and stops the uplink (what is unacknowledged stays in
  // the spool).
  void run();
  void requestStop();
  // The port /metrics listens on (0 when off).
  int metricsPort() const;

  struct Impl;

 private:
  explicit Agent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace netdiag::collector
