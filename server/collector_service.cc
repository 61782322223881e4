#include "server/collector_service.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "server/http_api.h"
#include "topology/display_text.h"

namespace netdiag::server {
namespace {

constexpr size_t kLoggedErrorsPerBatch = 3;

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

// A stream's acks, written from a thread of their own: a batch is acked only
// once its records are in the engine (about the reorder delay later), so the
// stream must go on reading meanwhile; the agent keeps a window of batches in
// flight. The engine thread only queues here, never waits.
class CollectorService::AckQueue {
 public:
  void expect() {
    std::lock_guard lk(mu_);
    ++outstanding_;
  }
  void ready(const Header& h, BatchResult r) {
    {
      std::lock_guard lk(mu_);
      ready_.emplace_back(h, std::move(r));
    }
    cv_.notify_all();
  }
  // The writer thread: `write` each ready ack until stop(); once a write
  // fails (the stream is gone) the rest are dropped: the agent resends them.
  template <typename Write>
  void run(Write&& write) {
    std::unique_lock lk(mu_);
    bool ok = true;
    for (;;) {
      cv_.wait(lk, [&] { return stopped_ || !ready_.empty(); });
      if (ready_.empty()) return;
      auto [h, r] = std::move(ready_.front());
      ready_.pop_front();
      lk.unlock();
      if (ok) ok = write(h, r);
      lk.lock();
      --outstanding_;
      cv_.notify_all();
    }
  }
  // Waits until every expected ack is written, or `cancelled()`.
  template <typename Cancelled>
  void drain(Cancelled&& cancelled) {
    std::unique_lock lk(mu_);
    // Bounded waits: cancellation is not signalled here.
    while (outstanding_ > 0 && !stopped_ && !cancelled()) {
      cv_.wait_for(lk, std::chrono::milliseconds(100));
    }
  }
  // Ends run() once the acks ready now are written; later ones are dropped.
  void stop() {
    {
      std::lock_guard lk(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<Header, BatchResult>> ready_;
  size_t outstanding_ = 0;
  bool stopped_ = false;
};

void CollectorService::report(const Header& h, const BatchResult& r, const std::string& peer) {
  if (!log_) return;
  if (!r.authority_log.empty()) log_(r.authority_log + " (" + peer + ")");
  const std::string batch =
      " (" + peer + ") batch " + std::to_string(h.epoch) + "/" + std::to_string(h.seq) + ": ";
  if (!r.errors.empty()) {
    std::string msg =
        "agent " + shown(h.agent) + batch + std::to_string(r.errors.size()) + " rejected";
    if (r.future > 0) msg += " (" + std::to_string(r.future) + " from the future: clock ahead?)";
    msg += ": ";
    for (size_t i = 0; i < r.errors.size() && i < kLoggedErrorsPerBatch; ++i) {
      msg += (i ? "; " : "") + r.errors[i];
    }
    if (r.errors.size() > kLoggedErrorsPerBatch) msg += "; ...";
    log_(msg);
  }
  if (!r.warnings.empty()) {
    log_("agent " + shown(h.agent) + batch + std::to_string(r.warnings.size()) +
         " record(s) kept without their path, first: " + r.warnings[0]);
  }
}

std::vector<std::string> peerIdentities(const grpc::ServerContext& context) {
  std::vector<std::string> names;
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (!auth || !auth->IsPeerAuthenticated()) return names;
  for (const char* property : {"x509_subject_alternative_name", "x509_common_name"}) {
    for (const grpc::string_ref& v : auth->FindPropertyValues(property)) {
      names.emplace_back(v.data(), v.size());
    }
  }
  return names;
}

grpc::Status CollectorService::Stream(grpc::ServerContext* context,
                                      grpc::ServerReaderWriter<v1::Ack, v1::Batch>* stream) {
  std::string agent;  // the stream's identity: known from the first batch
  bool opened = false;
  const std::string peer = context->peer();
  std::vector<std::string> certified;  // under mTLS: the names the certificate gives
  if (require_client_identity_) {
    certified = peerIdentities(*context);
    if (certified.empty()) {
      if (log_) log_("stream from " + peer + " refused: no authenticated client certificate");
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "the analyzer requires a client certificate (mutual TLS)");
    }
  }
  auto names = [&] {
    std::string out;
    for (const std::string& n : certified) out += (out.empty() ? "" : ", ") + shown(n);
    return out;
  };
  auto acks = std::make_shared<AckQueue>();
  std::thread writer([&, acks] {
    acks->run([&](const Header& h, const BatchResult& r) {
      report(h, r, peer);
      // Nothing to acknowledge against; and a batch the engine never got is
      // left for the agent to resend.
      if (h.agent.empty() || r.not_ingested) return true;
      v1::Ack ack;
      ack.set_epoch(h.epoch);
      ack.set_seq(h.seq);
      ack.set_duplicate(r.duplicate);
      return stream->Write(ack);
    });
  });
  // Ends the stream: nothing of `batch` is ingested or acknowledged.
  auto deny = [&](const v1::Batch& batch, const std::string& why) {
    acks->stop();
    writer.join();
    std::string line = analyzer_.refuse(agent.empty() ? batch.agent() : agent, batch, why);
    if (!line.empty() && log_) log_(line + " (" + peer + ")");
    if (opened) analyzer_.streamClosed(agent);
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "netdiag analyzer: " + why);
  };
  v1::Batch batch;
  while (stream->Read(&batch)) {
    if (!agent.empty() && batch.agent() != agent) {
      return deny(batch, "this stream sends as agent " + shown(agent) + "; a batch as agent " +
                             shown(batch.agent()) + " is refused (one stream, one identity)");
    }
    if (agent.empty() && !batch.agent().empty()) {
      if (require_client_identity_ &&
          std::find(certified.begin(), certified.end(), batch.agent()) == certified.end()) {
        return deny(batch, "the client certificate names " + names() + ", not the agent " +
                               shown(batch.agent()) +
                               " the stream sends as: give the agent a certificate whose SAN "
                               "(DNS) or CN is its node name");
      }
      agent = batch.agent();
      analyzer_.streamOpened(agent);
      opened = true;
    }
    if (rate_.enabled()) {
      // Over its rate: wait (cancellable) before ingesting and acknowledging.
      const bool known =
          analyzer_.authority().identify(batch.agent()).kind != Authority::Kind::kUnknown;
      const size_t records = static_cast<size_t>(batch.probes_size()) +
                             static_cast<size_t>(batch.ports_size()) +
                             static_cast<size_t>(batch.lldp_size());
      using Clock = std::chrono::steady_clock;
      const auto now = Clock::now();
      double wait = rate_.reserve(known ? batch.agent() : "(unknown)", records,
                                  std::chrono::duration<double>(now.time_since_epoch()).count());
      const auto until =
          now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait));
      while (Clock::now() < until && !context->IsCancelled()) {
        std::this_thread::sleep_for(
            std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(100)));
      }
      if (context->IsCancelled()) break;
    }
    acks->expect();
    analyzer_.submit(batch, [acks, header = Header{batch.agent(), batch.epoch(), batch.seq()}](
                                BatchResult r) { acks->ready(header, std::move(r)); });
  }
  // Every batch read is acked (or the stream cancelled) before it ends.
  acks->drain([context] { return context->IsCancelled(); });
  acks->stop();
  writer.join();
  if (opened) analyzer_.streamClosed(agent);
  return grpc::Status::OK;
}

grpc::Status CollectorService::GetPlan(grpc::ServerContext* context, const v1::PlanRequest* request,
                                       v1::AgentPlan* plan) {
  if (require_client_identity_) {
    const std::vector<std::string> certified = peerIdentities(*context);
    if (std::find(certified.begin(), certified.end(), request->agent()) == certified.end()) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "netdiag analyzer: the client certificate does not name the agent " +
                              shown(request->agent()) + " whose plan is asked for");
    }
  }
  std::string error;
  auto p = analyzer_.plan(request->agent(), &error);
  if (!p) return grpc::Status(grpc::StatusCode::NOT_FOUND, error);
  *plan = std::move(*p);
  return grpc::Status::OK;
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
      o.memory_quota_bytes == 0 || o.max_threads < 4) {
    *error =
        "gRPC bounds: need 0 < max message <= 1 GiB, a memory quota > 0 and at least 4 threads";
    return nullptr;
  }
  grpc::ServerBuilder builder;
  *port = 0;
  builder.AddListeningPort(o.address, creds, port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(static_cast<int>(o.max_message_bytes));
  grpc::ResourceQuota quota("netdiag-analyzer");
  quota.Resize(o.memory_quota_bytes);
  quota.SetMaxThreads(o.max_threads);
  builder.SetResourceQuota(quota);
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
