#include "server/collector_service.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "server/http_api.h"
#include "topology/display_text.h"

namespace netdiag::server {
namespace {

// Names from the wire or a certificate, escaped for logs and errors.
std::string shown(const std::string& s) { return "\"" + topology::escapeForDisplay(s) + "\""; }

bool readFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return !out.empty();
}

}  // namespace

void CollectorService::exportMetrics(prometheus::Registry& registry) {
  shared_.open_gauge = &prometheus::BuildGauge()
                            .Name("netdiag_agent_streams_open")
                            .Help("Agent streams open now (each a gRPC stream, no thread)")
                            .Register(registry)
                            .Add({});
  shared_.refused_counter =
      &prometheus::BuildCounter()
           .Name("netdiag_agent_streams_refused_total")
           .Help("Agent streams refused because --max-agent-streams were open")
           .Register(registry)
           .Add({});
  shared_.idle_closed_counter =
      &prometheus::BuildCounter()
           .Name("netdiag_agent_streams_idle_closed_total")
           .Help("Agent streams closed after waiting --agent-idle-timeout for a batch")
           .Register(registry)
           .Add({});
}

void CollectorService::pushActions(const std::string& agent) {
  std::lock_guard lk(shared_.streams_mu);
  for (AgentStream* s : shared_.streams) s->pushActions(agent);
}

void CollectorService::closeIdleStreams() {
  if (shared_.idle_timeout_s <= 0) return;
  const int64_t now = AgentStream::steadyNs();
  const auto timeout = static_cast<int64_t>(shared_.idle_timeout_s * 1e9);
  std::vector<std::string> closed;
  {
    // Cancelled after the walk: a cancel may end a stream (and erase it
    // from the set) before it returns.
    std::lock_guard lk(shared_.streams_mu);
    std::vector<AgentStream*> idle;
    for (AgentStream* s : shared_.streams) {
      if (s->idleFor(now, timeout)) idle.push_back(s);
    }
    for (AgentStream* s : idle) {
      closed.push_back(s->describe());
      s->closeIdle();  // s may be gone once this returns
    }
  }
  if (shared_.idle_closed_counter) {
    shared_.idle_closed_counter->Increment(static_cast<double>(closed.size()));
  }
  if (shared_.log) {
    for (const std::string& who : closed) {
      shared_.log("agent stream " + who + " closed: no batch for " +
                  std::to_string(static_cast<int64_t>(shared_.idle_timeout_s)) +
                  " s (--agent-idle-timeout); the agent is gone or stuck, and reconnects if not");
    }
  }
}

grpc::ServerBidiReactor<v1::Batch, v1::Ack>* CollectorService::Stream(
    grpc::CallbackServerContext* context) {
  return new AgentStream(context, shared_);
}

grpc::ServerUnaryReactor* CollectorService::GetPlan(grpc::CallbackServerContext* context,
                                                    const v1::PlanRequest* request,
                                                    v1::AgentPlan* plan) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (shared_.require_client_identity) {
    const std::vector<std::string> certified = peerIdentities(*context);
    if (std::find(certified.begin(), certified.end(), request->agent()) == certified.end()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                                   "netdiag analyzer: the client certificate does not name the "
                                   "agent " +
                                       shown(request->agent()) + " whose plan is asked for"));
      return reactor;
    }
  }
  // Inline on gRPC's callback thread: a plan is served from memory, and the
  // focused plan is rebuilt at most once per published snapshot.
  std::string error;
  auto p = shared_.analyzer.plan(request->agent(), &error);
  if (!p) {
    reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, error));
    return reactor;
  }
  *plan = std::move(*p);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

bool isLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1") return true;
  if (host.rfind("127.", 0) != 0) return false;
  // 127.a.b.c, digits and dots only (not a name like 127.example.com).
  return host.find_first_not_of("0123456789.") == std::string::npos;
}

std::unique_ptr<grpc::Server> startGrpcServer(grpc::Service& service, const GrpcListenOptions& o,
                                              int* port, std::string* error) {
  if (o.tls_ca.empty() && !o.insecure) {
    std::string host;
    int ignored = 0;
    std::string address = o.address;
    for (const char* scheme : {"ipv4:", "ipv6:", "dns:///", "dns:"}) {
      if (address.rfind(scheme, 0) == 0) address = address.substr(std::string(scheme).size());
    }
    const bool local = o.address.rfind("unix:", 0) == 0 ||
                       (splitHostPort(address, host, ignored) && isLoopbackHost(host));
    if (!local) {
      *error = "agents on " + o.address +
               " (not a loopback address) would be unauthenticated: any client that reaches it "
               "could speak as any node. Give --tls-ca (mutual TLS: each agent's certificate "
               "names its node) with --tls-cert/--tls-key, or --insecure to accept that "
               "(docs/security.md)";
      return nullptr;
    }
  }
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
  if (o.max_message_bytes == 0 || o.max_message_bytes > (size_t{1} << 30) ||
      o.memory_quota_bytes == 0) {
    *error = "gRPC bounds: need 0 < max message <= 1 GiB and a memory quota > 0";
    return nullptr;
  }
  grpc::ServerBuilder builder;
  *port = 0;
  builder.AddListeningPort(o.address, creds, port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(static_cast<int>(o.max_message_bytes));
  grpc::ResourceQuota quota("netdiag-analyzer");
  quota.Resize(o.memory_quota_bytes);
  builder.SetResourceQuota(quota);
  // Agents ping idle streams to notice a dead analyzer; allow it.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // No keepalive pings of our own. gRPC cancels and re-arms a connection's
  // keepalive timer on every read, and Debian's build keeps its debug checks
  // (no NDEBUG): each timer operation walks a chain of a process-wide timer
  // table. At 16k agent connections turning it off saved 9-13 % of the
  // analyzer's CPU per record (docs/benchmarks.md). Dead agents are found
  // by the idle timeout instead.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, std::numeric_limits<int>::max());
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
