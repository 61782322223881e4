#include "collector/uplink.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include <grpcpp/grpcpp.h>

namespace netdiag::collector {
namespace {

using Clock = std::chrono::steady_clock;

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool readFile(const std::string& path, std::string& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path;
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  if (out.empty()) {
    error = path + " is empty";
    return false;
  }
  return true;
}

// Plaintext when no TLS file is given; TLS when a CA is (or when a client
// certificate is, trusting the system roots); mutual TLS with cert + key.
std::shared_ptr<grpc::ChannelCredentials> makeCredentials(const UplinkOptions& o,
                                                          std::string& error) {
  if (o.tls_ca.empty() && o.tls_cert.empty() && o.tls_key.empty()) {
    return grpc::InsecureChannelCredentials();
  }
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    error =
        "TLS: a client certificate needs its key and a key needs its certificate "
        "(--tls-cert and --tls-key go together)";
    return nullptr;
  }
  grpc::SslCredentialsOptions ssl;
  if (!o.tls_ca.empty() && !readFile(o.tls_ca, ssl.pem_root_certs, error)) return nullptr;
  if (!o.tls_cert.empty()) {
    if (!readFile(o.tls_cert, ssl.pem_cert_chain, error)) return nullptr;
    if (!readFile(o.tls_key, ssl.pem_private_key, error)) return nullptr;
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace

std::string checkUplinkOptions(const UplinkOptions& options) {
  const std::string& a = options.analyzer;
  auto colon = a.rfind(':');
  if (a.empty() || colon == std::string::npos || colon + 1 == a.size() || colon == 0) {
    return "analyzer address \"" + a + "\" is not HOST:PORT";
  }
  for (size_t i = colon + 1; i < a.size(); ++i) {
    if (a[i] < '0' || a[i] > '9') return "analyzer address \"" + a + "\" has a bad port";
  }
  if (options.agent.empty()) return "the agent id (node name) is empty";
  if (!(options.backoff_min_s > 0) || options.backoff_max_s < options.backoff_min_s) {
    return "backoff: need 0 < min <= max";
  }
  if (options.max_in_flight == 0) return "max_in_flight must be at least 1";
  std::string error;
  if (!makeCredentials(options, error)) return error;
  return {};
}

Uplink::Uplink(UplinkOptions options, Spool& spool)
    : options_(std::move(options)),
      spool_(spool),
      epoch_(spool.epoch() != 0 ? spool.epoch() : randomEpoch()) {
  creds_ = makeCredentials(options_, creds_error_);
  dropped_seen_ = spool_.dropped();
  thread_ = std::thread([this] { run(); });
}

Uplink::~Uplink() { stop(); }

void Uplink::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
    if (call_ != nullptr) call_->TryCancel();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Uplink::send(v1::Batch batch) {
  batch.set_agent(options_.agent);
  batch.set_epoch(epoch_);
  if (batch.sent_at() == 0) batch.set_sent_at(wallSeconds());
  {
    // Pushes happen under mu_ so that drops by the spool's bound are seen
    // by the bookkeeping before anything else touches the spool.
    std::lock_guard lk(mu_);
    batch.set_seq(++seq_);
    std::string bytes = batch.SerializeAsString();
    syncDropsLocked();
    const uint64_t d0 = spool_.dropped();
    spool_.push(bytes);
    const uint64_t d1 = spool_.dropped();
    if (d1 > d0) {
      // The bound dropped the oldest batches (the sent ones first), or this
      // batch itself when it could never fit (or could not be written):
      // only the former shift the spool under the batches in flight.
      size_t held = spool_.batches();
      std::optional<std::string> newest = held > 0 ? spool_.peek(held - 1) : std::nullopt;
      uint64_t front = (newest && *newest == bytes) ? d1 - d0 : d1 - d0 - 1;
      uint64_t k = std::min<uint64_t>(front, inflight_.size());
      inflight_.erase(inflight_.begin(), inflight_.begin() + static_cast<std::ptrdiff_t>(k));
      dropped_seen_ = d1;
    }
  }
  cv_.notify_all();
}

UplinkStats Uplink::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

std::string Uplink::lastError() const {
  std::lock_guard lk(mu_);
  return last_error_;
}

std::shared_ptr<grpc::Channel> Uplink::makeChannel() const {
  grpc::ChannelArguments args;
  // Our own backoff decides when to retry; keep gRPC's within the same range.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(options_.backoff_min_s * 1000));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(options_.backoff_min_s * 1000));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(options_.backoff_max_s * 1000));
  // Notice a silently dead analyzer (no RST, e.g. a cut cable) on an idle stream.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetMaxReceiveMessageSize(64 << 20);
  if (!options_.tls_server_name.empty()) args.SetSslTargetNameOverride(options_.tls_server_name);
  // A channel per connection, so no state of a broken one carries over.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(options_.analyzer, creds_, args);
}

void Uplink::syncDropsLocked() {
  uint64_t d = spool_.dropped();
  if (d > dropped_seen_) {
    // The bound drops the oldest batches, which are the sent ones first.
    uint64_t k = std::min<uint64_t>(d - dropped_seen_, inflight_.size());
    inflight_.erase(inflight_.begin(), inflight_.begin() + static_cast<std::ptrdiff_t>(k));
  }
  dropped_seen_ = d;
}

void Uplink::onAckLocked(const v1::Ack& ack) {
  syncDropsLocked();
  for (Key& k : inflight_) {
    if (!k.acked && k.epoch == ack.epoch() && k.seq == ack.seq()) {
      k.acked = true;
      ++stats_.acked;
      if (ack.duplicate()) ++stats_.duplicates;
      break;
    }
  }
  // An ack for a batch the bound dropped meanwhile matches nothing: ignored.
  popAckedLocked();
}

void Uplink::popAckedLocked() {
  size_t n = 0;
  while (n < inflight_.size() && inflight_[n].acked) ++n;
  if (n > 0) {
    spool_.pop(n);
    inflight_.erase(inflight_.begin(), inflight_.begin() + static_cast<std::ptrdiff_t>(n));
  }
}

void Uplink::sleepBackoff(double& backoff_s) {
  thread_local std::mt19937_64 rng(randomEpoch() ^
                                   std::hash<std::thread::id>()(std::this_thread::get_id()));
  std::uniform_real_distribution<double> jitter(backoff_s / 2, backoff_s);
  auto delay = std::chrono::duration<double>(jitter(rng));
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, delay, [&] { return stopping_; });
  backoff_s = std::min(backoff_s * 2, options_.backoff_max_s);
}

void Uplink::run() {
  double backoff = options_.backoff_min_s;
  bool first = true;
  while (true) {
    {
      std::lock_guard lk(mu_);
      if (stopping_) return;
      if (!first) ++stats_.reconnects;
    }
    first = false;
    if (serve()) backoff = options_.backoff_min_s;
    {
      std::lock_guard lk(mu_);
      if (stopping_) return;
    }
    sleepBackoff(backoff);
  }
}

bool Uplink::serve() {
  if (!creds_) {
    std::lock_guard lk(mu_);
    last_error_ = creds_error_;
    return false;
  }
  auto channel = makeChannel();
  // Wait for the connection in short steps so stop() is never kept waiting.
  auto give_up =
      Clock::now() + std::chrono::duration<double>(std::max(3.0, options_.backoff_min_s));
  while (!channel->WaitForConnected(std::chrono::system_clock::now() +
                                    std::chrono::milliseconds(100))) {
    std::lock_guard lk(mu_);
    if (stopping_) return false;
    if (Clock::now() > give_up) {
      last_error_ = "cannot connect to the analyzer at " + options_.analyzer;
      return false;
    }
  }

  auto stub = v1::Collector::NewStub(channel);
  grpc::ClientContext ctx;
  std::unique_lock lk(mu_);
  if (stopping_) return false;
  call_ = &ctx;
  lk.unlock();
  std::shared_ptr<grpc::ClientReaderWriter<v1::Batch, v1::Ack>> stream(stub->Stream(&ctx));
  lk.lock();
  stats_.connected = true;
  broken_ = false;
  inflight_.clear();
  dropped_seen_ = spool_.dropped();
  bool got_ack = false;
  lk.unlock();

  std::thread reader([&] {
    v1::Ack ack;
    while (stream->Read(&ack)) {
      {
        std::lock_guard rl(mu_);
        onAckLocked(ack);
        got_ack = true;
      }
      cv_.notify_all();
    }
    {
      std::lock_guard rl(mu_);
      broken_ = true;
    }
    cv_.notify_all();
  });

  lk.lock();
  while (true) {
    cv_.wait(lk, [&] {
      syncDropsLocked();
      return stopping_ || broken_ ||
             (inflight_.size() < options_.max_in_flight && inflight_.size() < spool_.batches());
    });
    if (stopping_ || broken_) break;
    std::optional<std::string> bytes = spool_.peek(inflight_.size());
    if (!bytes) continue;
    v1::Batch batch;
    if (!batch.ParseFromString(*bytes)) {
      // Nothing can ever acknowledge an unreadable batch: drop it so it
      // does not hold the spool's front forever.
      last_error_ = "dropped an unreadable batch from the spool";
      inflight_.push_back({0, 0, true});
      popAckedLocked();
      continue;
    }
    inflight_.push_back({batch.epoch(), batch.seq(), false});
    lk.unlock();
    bool ok = stream->Write(batch);
    lk.lock();
    if (!ok) {
      broken_ = true;
      break;
    }
    ++stats_.sent;
  }
  ctx.TryCancel();
  lk.unlock();
  reader.join();
  grpc::Status status = stream->Finish();
  lk.lock();
  call_ = nullptr;
  stats_.connected = false;
  inflight_.clear();
  dropped_seen_ = spool_.dropped();
  if (!stopping_) {
    last_error_ = "stream to " + options_.analyzer + " ended: " +
                  (status.ok() ? std::string("closed by the analyzer") : status.error_message());
  }
  return got_ack;
}

std::optional<v1::AgentPlan> Uplink::fetchPlan(uint64_t known_version, std::string* error) {
  auto fail = [&](std::string message) -> std::optional<v1::AgentPlan> {
    if (error) *error = std::move(message);
    return std::nullopt;
  };
  if (!creds_) return fail(creds_error_);
  std::shared_ptr<grpc::Channel> channel;
  {
    std::lock_guard lk(plan_mu_);
    if (!plan_channel_) plan_channel_ = makeChannel();
    channel = plan_channel_;
  }
  auto stub = v1::Collector::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(options_.plan_timeout_s * 1000)));
  // Wait for a connection within the deadline rather than failing at once.
  ctx.set_wait_for_ready(true);
  v1::PlanRequest request;
  request.set_agent(options_.agent);
  request.set_known_version(known_version);
  v1::AgentPlan plan;
  grpc::Status status = stub->GetPlan(&ctx, request, &plan);
  if (!status.ok()) {
    return fail("GetPlan from " + options_.analyzer + ": " + status.error_message());
  }
  return plan;
}

}  // namespace netdiag::collector
