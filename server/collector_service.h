#pragma once

// The gRPC side of the analyzer: the Collector service (agent streams in,
// acks out; plans) over a LiveAnalyzer, and the listener that serves it.

#include <functional>
#include <memory>
#include <string>

#include "netdiag/v1/collector.grpc.pb.h"
#include "server/live_analyzer.h"

namespace netdiag::server {

using LogFn = std::function<void(const std::string&)>;

class CollectorService final : public v1::Collector::Service {
 public:
  CollectorService(LiveAnalyzer& analyzer, LogFn log) : analyzer_(analyzer), log_(std::move(log)) {}

  // One long-lived stream per agent: each batch is ingested, then acked
  // (with duplicate=true for a batch delivered before). Malformed records
  // are counted and logged, never fatal.
  grpc::Status Stream(grpc::ServerContext* context,
                      grpc::ServerReaderWriter<v1::Ack, v1::Batch>* stream) override;
  grpc::Status GetPlan(grpc::ServerContext* context, const v1::PlanRequest* request,
                       v1::AgentPlan* plan) override;

 private:
  LiveAnalyzer& analyzer_;
  LogFn log_;
};

struct GrpcListenOptions {
  std::string address = "127.0.0.1:7600";  // HOST:PORT; port 0 picks a free one
  std::string tls_cert, tls_key;           // both empty: plaintext
  std::string tls_ca;  // set: clients must present a certificate it signed (mTLS)
};

// Builds and starts the server; nullptr and *error when it cannot listen or
// a TLS file cannot be read. *port is the port bound.
std::unique_ptr<grpc::Server> startGrpcServer(grpc::Service& service, const GrpcListenOptions& o,
                                              int* port, std::string* error);

}  // namespace netdiag::server
