#pragma once

// `netdiag analyzer` as a library: the LiveAnalyzer with its gRPC listener
// for agents, its HTTP API and the live clock (a thread that every tick moves
// the engine to the wall clock minus the agents' delivery delay, so
// decisions go on while the fabric is silent). The CLI only parses flags and
// waits for a signal; tests run the whole daemon in-process.
//
// Thread-safety: start/stop from one thread; accessors from any.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/bus_ingest.h"
#include "server/collector_service.h"
#include "server/drain_coordinator.h"
#include "server/drain_outbox.h"
#include "server/http_api.h"
#include "server/live_analyzer.h"

namespace netdiag::server {

struct DaemonOptions {
  GrpcListenOptions grpc;                     // agents
  std::string web_listen = "127.0.0.1:9600";  // HTTP API and /metrics
  HttpLimits http;                            // its bounds (docs/operations.md, Bounds)
  // Each agent's ingest, records per second (0: none): back-pressure on its
  // stream beyond it (server/agent_rate.h). Synthetic agents are not bounded.
  double max_agent_records_per_s = 50000;
  // Agent streams open at most (each costs memory, no thread); one beyond
  // is refused with RESOURCE_EXHAUSTED and its agent backs off.
  size_t max_agent_streams = CollectorService::kDefaultMaxStreams;
  // A stream waiting this long for a batch is closed (0: never); agents
  // send every batch interval (1 s by default).
  double agent_idle_timeout_s = CollectorService::kDefaultIdleTimeoutS;
  LiveOptions live;
  // Agents' batches from a NATS JetStream bus as well (server/bus_ingest.h);
  // unset: gRPC only.
  std::optional<BusIngestOptions> bus;
  // Drain actions (server/drain_outbox.h): the key they are signed with;
  // empty: none are issued.
  std::string drain_key_file;
  // What the analyzer does with a drainable incident (drain/policy.h):
  // advise (default), approve (needs the key), auto (needs the key), for
  // every scope and per pod or tier pair.
  drain::PolicySet drain_policy;
  // The bearer token of the API's write endpoints; empty: they answer 403.
  std::string api_token_file;
  double delay_s = 2;             // the engine runs this far behind the wall clock
  double tick_s = 1;              // live clock period
  LogFn log;                      // diagnostics (malformed batches, persistence errors)
  std::function<double()> clock;  // wall clock, Unix seconds (default: system clock)
};

class Daemon {
 public:
  // Everything that can fail at start fails here, with a message naming
  // what: the database, the listeners, the budget. `topo` must outlive it.
  static std::unique_ptr<Daemon> start(const topology::Topology& topo, DaemonOptions options,
                                       std::string* error,
                                       std::vector<std::string>* warnings = nullptr);
  ~Daemon();  // stop()

  int grpcPort() const { return grpc_port_; }
  int httpPort() const { return http_->port(); }
  LiveAnalyzer& analyzer() { return *analyzer_; }

  // Graceful: stops taking streams and requests, runs a last tick and writes
  // every changed incident. Idempotent.
  void stop();

 private:
  Daemon() = default;
  void clockLoop();

  DaemonOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  // Before the analyzer, which asks the coordinator for its drain views.
  std::unique_ptr<DrainOutbox> outbox_;
  std::unique_ptr<DrainCoordinator> coordinator_;
  std::unique_ptr<LiveAnalyzer> analyzer_;
  std::unique_ptr<CollectorService> service_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<HttpApi> http_;
  std::unique_ptr<BusIngest> bus_;
  int grpc_port_ = 0;
  std::atomic<bool> ready_{false};

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool stopped_ = false;
  std::thread clock_;
};

}  // namespace netdiag::server
