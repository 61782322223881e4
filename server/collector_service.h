#pragma once

// The gRPC side of the analyzer: the Collector service (agent streams in,
// acks out; plans) over a LiveAnalyzer, and the listener that serves it.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/registry.h>

#include "netdiag/v1/collector.grpc.pb.h"
#include "server/agent_rate.h"
#include "server/agent_stream.h"
#include "server/live_analyzer.h"

namespace netdiag::server {

// The Collector service on gRPC's callback API: each agent stream is an
// AgentStream (server/agent_stream.h), which holds no thread while it waits
// for a batch, for room in the engine's queue or for its acks.
class CollectorService final : public v1::Collector::CallbackService {
 public:
  static constexpr double kRateBurstSeconds = 2;
  static constexpr size_t kDefaultMaxStreams = 32768;
  static constexpr double kDefaultIdleTimeoutS = 300;
  struct Options {
    // Under mutual TLS: a stream may send only as an agent its client
    // certificate names (a SAN DNS name or the CN).
    bool require_client_identity = false;
    // Each identity's ingest rate at most (0: none), as back-pressure
    // (server/agent_rate.h).
    double max_agent_records_per_s = 0;
    // Open agent streams at most; one beyond is refused with
    // RESOURCE_EXHAUSTED and its agent retries after its backoff.
    size_t max_streams = kDefaultMaxStreams;
    // A stream that has waited this long for a batch is closed (0: never):
    // its agent is gone or stuck (closeIdleStreams).
    double idle_timeout_s = kDefaultIdleTimeoutS;
    // Drain actions for agents, attached to their acks (null: none).
    DrainOutbox* outbox = nullptr;
  };
  CollectorService(LiveAnalyzer& analyzer, LogFn log, const Options& o)
      : rate_(o.max_agent_records_per_s, kRateBurstSeconds),
        shared_{analyzer,         std::move(log), o.require_client_identity, rate_, o.max_streams,
                o.idle_timeout_s, o.outbox} {}

  grpc::ServerBidiReactor<v1::Batch, v1::Ack>* Stream(
      grpc::CallbackServerContext* context) override;
  // Under mutual TLS only for an agent the client certificate names.
  grpc::ServerUnaryReactor* GetPlan(grpc::CallbackServerContext* context,
                                    const v1::PlanRequest* request, v1::AgentPlan* plan) override;

  // netdiag_agent_streams_open, netdiag_agent_streams_refused_total and
  // netdiag_agent_streams_idle_closed_total; call before the server starts.
  void exportMetrics(prometheus::Registry& registry);

  // Cancels the streams that have waited over the idle timeout for a batch
  // (the daemon calls it every tick). The analyzer writes only acks, so a
  // peer that vanished without a FIN would otherwise hold its connection,
  // descriptor and stream slot for good; gRPC's server keepalive would find
  // it, but is off (collector_service.cc says why).
  void closeIdleStreams();

  // Writes the drain actions waiting for `agent` on its open stream now,
  // rather than with its next ack (the outbox calls it on each issue).
  void pushActions(const std::string& agent);

 private:
  AgentRateLimiter rate_;
  StreamShared shared_;
};

struct GrpcListenOptions {
  std::string address = "127.0.0.1:7600";  // HOST:PORT; port 0 picks a free one
  std::string tls_cert, tls_key;           // both empty: plaintext
  std::string tls_ca;  // set: clients must present a certificate it signed (mTLS)
  // Plaintext or server-only TLS on a listen address that is not loopback
  // leaves agents unauthenticated: refused unless this is set (--insecure).
  bool insecure = false;
  // Bounds (docs/operations.md, Bounds). A larger message ends its stream
  // with RESOURCE_EXHAUSTED (agents split batches below it). gRPC's memory
  // for connections and messages is held within the quota. Streams hold no
  // thread (the callback API); CollectorService bounds how many are open.
  size_t max_message_bytes = 4 << 20;  // = collector::kMaxBatchBytes
  size_t memory_quota_bytes = size_t{1} << 30;
};

// True for a HOST that only this machine reaches: localhost, 127.0.0.0/8,
// ::1. An empty host, 0.0.0.0, :: and every other name or address are not.
bool isLoopbackHost(const std::string& host);

// Builds and starts the server; nullptr and *error when it cannot listen or
// a TLS file cannot be read. *port is the port bound.
std::unique_ptr<grpc::Server> startGrpcServer(grpc::Service& service, const GrpcListenOptions& o,
                                              int* port, std::string* error);

}  // namespace netdiag::server
