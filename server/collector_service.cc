#include "server/collector_service.h"

#include <fstream>
#include <sstream>

#include <grpcpp/grpcpp.h>

namespace netdiag::server {
namespace {

constexpr size_t kLoggedErrorsPerBatch = 3;

bool readFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return !out.empty();
}

}  // namespace

grpc::Status CollectorService::Stream(grpc::ServerContext* context,
                                      grpc::ServerReaderWriter<v1::Ack, v1::Batch>* stream) {
  std::string agent;  // known from the first batch
  const std::string peer = context->peer();
  v1::Batch batch;
  while (stream->Read(&batch)) {
    if (agent.empty() && !batch.agent().empty()) {
      agent = batch.agent();
      analyzer_.streamOpened(agent);
    }
    BatchResult r = analyzer_.ingest(batch);
    if (!r.errors.empty() && log_) {
      std::string msg = "agent \"" + batch.agent() + "\" (" + peer + ") batch " +
                        std::to_string(batch.epoch()) + "/" + std::to_string(batch.seq()) + ": " +
                        std::to_string(r.errors.size()) + " rejected";
      if (r.future > 0) msg += " (" + std::to_string(r.future) + " from the future: clock ahead?)";
      msg += ": ";
      for (size_t i = 0; i < r.errors.size() && i < kLoggedErrorsPerBatch; ++i) {
        msg += (i ? "; " : "") + r.errors[i];
      }
      if (r.errors.size() > kLoggedErrorsPerBatch) msg += "; ...";
      log_(msg);
    }
    if (!r.warnings.empty() && log_) {
      log_("agent \"" + batch.agent() + "\" (" + peer + ") batch " + std::to_string(batch.epoch()) +
           "/" + std::to_string(batch.seq()) + ": " + std::to_string(r.warnings.size()) +
           " record(s) kept without their path, first: " + r.warnings[0]);
    }
    if (batch.agent().empty()) continue;  // nothing to acknowledge it against
    v1::Ack ack;
    ack.set_epoch(batch.epoch());
    ack.set_seq(batch.seq());
    ack.set_duplicate(r.duplicate);
    if (!stream->Write(ack)) break;
  }
  if (!agent.empty()) analyzer_.streamClosed(agent);
  return grpc::Status::OK;
}

grpc::Status CollectorService::GetPlan(grpc::ServerContext*, const v1::PlanRequest* request,
                                       v1::AgentPlan* plan) {
  std::string error;
  auto p = analyzer_.plan(request->agent(), &error);
  if (!p) return grpc::Status(grpc::StatusCode::NOT_FOUND, error);
  *plan = std::move(*p);
  return grpc::Status::OK;
}

std::unique_ptr<grpc::Server> startGrpcServer(grpc::Service& service, const GrpcListenOptions& o,
                                              int* port, std::string* error) {
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (o.tls_cert.empty() && o.tls_key.empty()) {
    if (!o.tls_ca.empty()) {
      *error = "--tls-ca needs --tls-cert and --tls-key (the analyzer's own certificate)";
      return nullptr;
    }
    creds = grpc::InsecureServerCredentials();
  } else {
    if (o.tls_cert.empty() || o.tls_key.empty()) {
      *error = "--tls-cert and --tls-key go together";
      return nullptr;
    }
    grpc::SslServerCredentialsOptions ssl(
        o.tls_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                         : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    for (const auto& [path, out] :
         {std::pair{o.tls_cert, &pair.cert_chain}, std::pair{o.tls_key, &pair.private_key},
          std::pair{o.tls_ca, &ssl.pem_root_certs}}) {
      if (!path.empty() && !readFile(path, *out)) {
        *error = "cannot read " + path;
        return nullptr;
      }
    }
    ssl.pem_key_cert_pairs.push_back(pair);
    creds = grpc::SslServerCredentials(ssl);
  }
  grpc::ServerBuilder builder;
  *port = 0;
  builder.AddListeningPort(o.address, creds, port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(64 << 20);
  // Agents ping idle streams to notice a dead analyzer; allow it.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Two listeners on one port (a stale analyzer) must be an error, not a race.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  auto server = builder.BuildAndStart();
  if (!server || *port == 0) {
    *error = "cannot listen for agents on " + o.address + " (address in use or not local?)";
    return nullptr;
  }
  return server;
}

}  // namespace netdiag::server
