#pragma once

// The gRPC side of the analyzer: the Collector service (agent streams in,
// acks out; plans) over a LiveAnalyzer, and the listener that serves it.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "netdiag/v1/collector.grpc.pb.h"
#include "server/agent_rate.h"
#include "server/live_analyzer.h"

namespace netdiag::server {

using LogFn = std::function<void(const std::string&)>;

class CollectorService final : public v1::Collector::Service {
 public:
  // `require_client_identity` (set under mutual TLS): a stream may send only
  // as an agent its client certificate names (a SAN DNS name or the CN).
  // `max_agent_records_per_s` (0: none) bounds each identity's ingest rate
  // as back-pressure (server/agent_rate.h).
  CollectorService(LiveAnalyzer& analyzer, LogFn log, bool require_client_identity = false,
                   double max_agent_records_per_s = 0)
      : analyzer_(analyzer),
        log_(std::move(log)),
        require_client_identity_(require_client_identity),
        rate_(max_agent_records_per_s, kRateBurstSeconds) {}
  static constexpr double kRateBurstSeconds = 2;

  // One long-lived stream per agent: each batch is ingested, then acked
  // (with duplicate=true for a batch delivered before) once its records are
  // in the engine; the stream goes on reading meanwhile, and waits (flow
  // control) while the engine's queue is full. Malformed records are counted
  // and logged, never fatal.
  //
  // A stream is one identity: the agent of its first batch, which under
  // mutual TLS must be named by the client certificate. A batch sent as any
  // other agent ends the stream with PERMISSION_DENIED (nothing of it is
  // ingested or acknowledged, its records count as not_authorized), and so
  // does a first batch the certificate does not name. A batch of an agent
  // the analyzer does not know is acknowledged but not ingested
  // (BatchResult::rejected).
  grpc::Status Stream(grpc::ServerContext* context,
                      grpc::ServerReaderWriter<v1::Ack, v1::Batch>* stream) override;
  // Under mutual TLS only for an agent the client certificate names.
  grpc::Status GetPlan(grpc::ServerContext* context, const v1::PlanRequest* request,
                       v1::AgentPlan* plan) override;

 private:
  struct Header {
    std::string agent;
    uint64_t epoch = 0, seq = 0;
  };
  class AckQueue;
  // Logs what a batch's result says is wrong with it.
  void report(const Header& h, const BatchResult& r, const std::string& peer);

  LiveAnalyzer& analyzer_;
  LogFn log_;
  const bool require_client_identity_;
  AgentRateLimiter rate_;
};

// The names a client certificate gives its holder: its SAN entries and CN,
// from the stream's AuthContext (empty without an authenticated peer).
std::vector<std::string> peerIdentities(const grpc::ServerContext& context);

struct GrpcListenOptions {
  std::string address = "127.0.0.1:7600";  // HOST:PORT; port 0 picks a free one
  std::string tls_cert, tls_key;           // both empty: plaintext
  std::string tls_ca;  // set: clients must present a certificate it signed (mTLS)
  // Plaintext or server-only TLS on a listen address that is not loopback
  // leaves agents unauthenticated: refused unless this is set (--insecure).
  bool insecure = false;
  // Bounds (docs/operations.md, Bounds). A larger message ends its stream
  // with RESOURCE_EXHAUSTED (agents split batches below it). gRPC's memory
  // for connections and messages is held within the quota; each stream
  // holds a server thread (the synchronous API), so max_threads also caps
  // concurrent streams: one beyond it is refused with RESOURCE_EXHAUSTED
  // and its agent retries after its backoff.
  size_t max_message_bytes = 4 << 20;  // = collector::kMaxBatchBytes
  size_t memory_quota_bytes = size_t{1} << 30;
  int max_threads = 4096;
};

// True for a HOST that only this machine reaches: localhost, 127.0.0.0/8,
// ::1. An empty host, 0.0.0.0, :: and every other name or address are not.
bool isLoopbackHost(const std::string& host);

// Builds and starts the server; nullptr and *error when it cannot listen or
// a TLS file cannot be read. *port is the port bound.
std::unique_ptr<grpc::Server> startGrpcServer(grpc::Service& service, const GrpcListenOptions& o,
                                              int* port, std::string* error);

}  // namespace netdiag::server
