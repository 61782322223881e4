#include "collector/uplink.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include <google/protobuf/io/coded_stream.h>
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

}  // namespace

std::shared_ptr<grpc::ChannelCredentials> channelCredentials(const std::string& tls_ca,
                                                             const std::string& tls_cert,
                                                             const std::string& tls_key,
                                                             std::string& error) {
  if (tls_ca.empty() && tls_cert.empty() && tls_key.empty()) {
    return grpc::InsecureChannelCredentials();
  }
  if (tls_cert.empty() != tls_key.empty()) {
    error =
        "TLS: a client certificate needs its key and a key needs its certificate "
        "(--tls-cert and --tls-key go together)";
    return nullptr;
  }
  grpc::SslCredentialsOptions ssl;
  if (!tls_ca.empty() && !readFile(tls_ca, ssl.pem_root_certs, error)) return nullptr;
  if (!tls_cert.empty()) {
    if (!readFile(tls_cert, ssl.pem_cert_chain, error)) return nullptr;
    if (!readFile(tls_key, ssl.pem_private_key, error)) return nullptr;
  }
  return grpc::SslCredentials(ssl);
}

std::vector<v1::Batch> splitBatch(const v1::Batch& batch, size_t max_bytes, uint64_t* dropped) {
  v1::Batch head = batch;
  head.clear_probes();
  head.clear_ports();
  head.clear_lldp();
  head.clear_action_results();
  head.set_seq(~uint64_t{0});  // room for any seq
  const size_t head_bytes = head.ByteSizeLong();
  head.set_seq(batch.seq());
  std::vector<v1::Batch> parts;
  size_t used = 0;
  // Where a record of `size` serialized bytes goes: the last part if it
  // fits, else a new one; nullptr when it fits in none.
  auto place = [&](size_t size) -> v1::Batch* {
    const size_t bytes =
        1 + google::protobuf::io::CodedOutputStream::VarintSize64(size) + size;  // tag, length
    if (head_bytes + bytes > max_bytes) {
      if (dropped) ++*dropped;
      return nullptr;
    }
    if (parts.empty() || used + bytes > max_bytes) {
      parts.push_back(head);
      used = head_bytes;
    }
    used += bytes;
    return &parts.back();
  };
  for (const v1::Probe& r : batch.probes()) {
    if (v1::Batch* b = place(r.ByteSizeLong())) *b->add_probes() = r;
  }
  for (const v1::PortCounters& r : batch.ports()) {
    if (v1::Batch* b = place(r.ByteSizeLong())) *b->add_ports() = r;
  }
  for (const v1::LldpNeighbor& r : batch.lldp()) {
    if (v1::Batch* b = place(r.ByteSizeLong())) *b->add_lldp() = r;
  }
  for (const v1::ActionResult& r : batch.action_results()) {
    if (v1::Batch* b = place(r.ByteSizeLong())) *b->add_action_results() = r;
  }
  if (parts.empty()) parts.push_back(head);
  return parts;
}

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
  if (options.max_batch_bytes < 1024) return "max_batch_bytes must be at least 1 KiB";
  std::string error;
  if (!channelCredentials(options.tls_ca, options.tls_cert, options.tls_key, error)) return error;
  return {};
}

Uplink::Uplink(UplinkOptions options, Spool& spool)
    : options_(std::move(options)),
      spool_(spool),
      epoch_(spool.epoch() != 0 ? spool.epoch() : randomEpoch()) {
  creds_ = channelCredentials(options_.tls_ca, options_.tls_cert, options_.tls_key, creds_error_);
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
    if (batch.ByteSizeLong() <= options_.max_batch_bytes) {
      batch.set_seq(++seq_);
      pushLocked(batch.SerializeAsString());
    } else {
      ++stats_.split;
      for (v1::Batch& part :
           splitBatch(batch, options_.max_batch_bytes, &stats_.oversized_records)) {
        part.set_seq(++seq_);
        pushLocked(part.SerializeAsString());
      }
    }
  }
  cv_.notify_all();
}

void Uplink::pushLocked(const std::string& bytes) {
  syncDropsLocked();
  const uint64_t d0 = spool_.dropped();
  const bool stored = spool_.push(bytes);
  const uint64_t d1 = spool_.dropped();
  if (d1 > d0) {
    // The bound dropped the oldest batches (the sent ones first), and this
    // one too when it was not stored: only the former shift the spool under
    // the batches in flight.
    eraseInflightFrontLocked(d1 - d0 - (stored ? 0 : 1));
    dropped_seen_ = d1;
  }
}

void Uplink::eraseInflightFrontLocked(size_t n) {
  n = std::min(n, inflight_.size());
  for (size_t i = 0; i < n; ++i) {
    if (inflight_[i].split_of) split_seqs_.erase(*inflight_[i].split_of);
  }
  inflight_.erase(inflight_.begin(), inflight_.begin() + static_cast<std::ptrdiff_t>(n));
}

UplinkStats Uplink::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

std::string Uplink::lastError() const {
  std::lock_guard lk(mu_);
  return last_error_;
}

std::string Uplink::lastSplit() const {
  std::lock_guard lk(mu_);
  return last_split_;
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
    eraseInflightFrontLocked(static_cast<size_t>(d - dropped_seen_));
  }
  dropped_seen_ = d;
}

void Uplink::onAckLocked(const v1::Ack& ack) {
  syncDropsLocked();
  for (Key& k : inflight_) {
    if (k.acked || k.epoch != ack.epoch()) continue;
    auto it = std::find(k.pending.begin(), k.pending.end(), ack.seq());
    if (it == k.pending.end()) continue;
    k.pending.erase(it);
    k.acked = k.pending.empty();
    ++stats_.acked;
    if (ack.duplicate()) ++stats_.duplicates;
    break;
  }
  // An ack for a batch the bound dropped meanwhile matches nothing: ignored.
  popAckedLocked();
}

void Uplink::popAckedLocked() {
  size_t n = 0;
  while (n < inflight_.size() && inflight_[n].acked) ++n;
  if (n > 0) {
    spool_.pop(n);
    eraseInflightFrontLocked(n);
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
      if (options_.on_action) {
        for (const v1::DrainAction& a : ack.actions()) options_.on_action(a);
      }
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
      inflight_.push_back({0, {}, true, std::nullopt});
      popAckedLocked();
      continue;
    }
    Key key{batch.epoch(), {batch.seq()}, false, std::nullopt};
    std::vector<v1::Batch> parts;
    if (bytes->size() <= options_.max_batch_bytes) {
      parts.push_back(std::move(batch));
    } else {
      // Too large for the analyzer (it would end the stream and the batch
      // would come back forever): sent as parts under this start's epoch,
      // with the same seqs on every resend while it is in the spool.
      const std::pair<uint64_t, uint64_t> id{batch.epoch(), batch.seq()};
      uint64_t dropped = 0;
      parts = splitBatch(batch, options_.max_batch_bytes, &dropped);
      std::vector<uint64_t>& seqs = split_seqs_[id];
      if (seqs.size() != parts.size()) {
        seqs.clear();
        for (size_t i = 0; i < parts.size(); ++i) seqs.push_back(++seq_);
        ++stats_.split;
        stats_.oversized_records += dropped;
        last_split_ = "a spooled batch " + std::to_string(id.first) + "/" +
                      std::to_string(id.second) + " of " + std::to_string(bytes->size()) +
                      " bytes is over the bound of " + std::to_string(options_.max_batch_bytes) +
                      ": sent as " + std::to_string(parts.size()) + " parts" +
                      (dropped ? " without " + std::to_string(dropped) + " oversized record(s)"
                               : std::string());
      }
      for (size_t i = 0; i < parts.size(); ++i) {
        parts[i].set_epoch(epoch_);
        parts[i].set_seq(seqs[i]);
      }
      key = Key{epoch_, seqs, false, id};
    }
    inflight_.push_back(std::move(key));
    lk.unlock();
    bool ok = true;
    size_t written = 0;
    for (const v1::Batch& part : parts) {
      if (!(ok = stream->Write(part))) break;
      ++written;
    }
    lk.lock();
    stats_.sent += written;
    if (!ok) {
      broken_ = true;
      break;
    }
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
