#include "server/agent_stream.h"

#include <algorithm>
#include <chrono>

#include "topology/display_text.h"

namespace netdiag::server {
namespace {

constexpr size_t kLoggedErrorsPerBatch = 3;

// Names from the wire or a certificate, escaped for logs and errors.
std::string shown(const std::string& s) { return "\"" + topology::escapeForDisplay(s) + "\""; }

}  // namespace

std::vector<std::string> peerIdentities(const grpc::ServerContextBase& context) {
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

AgentStream::AgentStream(grpc::CallbackServerContext* context, StreamShared& shared)
    : shared_(shared), context_(context), peer_(context->peer()) {
  auto refuse = [&](grpc::Status status) {
    {
      std::lock_guard lk(mu_);
      finished_ = true;
    }
    Finish(std::move(status));
  };
  // Counted only once admitted: a refused stream, still being torn down,
  // neither holds a place nor shows as open.
  if (shared_.open.fetch_add(1) >= shared_.max_streams) {
    shared_.open.fetch_sub(1);
    if (shared_.refused_counter) shared_.refused_counter->Increment();
    refuse(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "netdiag analyzer: " + std::to_string(shared_.max_streams) +
                            " agent streams are open, the most it takes (--max-agent-streams)"));
    return;
  }
  admitted_ = true;
  if (shared_.open_gauge) shared_.open_gauge->Increment();
  {
    std::lock_guard lk(shared_.streams_mu);
    shared_.streams.insert(this);
  }
  if (shared_.require_client_identity) {
    certified_ = peerIdentities(*context);
    if (certified_.empty()) {
      if (shared_.log)
        shared_.log("stream from " + peer_ + " refused: no authenticated client certificate");
      refuse(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "the analyzer requires a client certificate (mutual TLS)"));
      return;
    }
  }
  startRead();
}

int64_t AgentStream::steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void AgentStream::startRead() {
  reading_since_ns_.store(steadyNs(), std::memory_order_relaxed);
  StartRead(nextBatch());
}

bool AgentStream::idleFor(int64_t now_ns, int64_t timeout_ns) const {
  const int64_t since = reading_since_ns_.load(std::memory_order_relaxed);
  if (idle_closed_ || since == 0 || now_ns - since < timeout_ns) return false;
  // A stream the analyzer still owes acks waits on the analyzer, not idle.
  std::lock_guard lk(mu_);
  return owed_ == 0 && !write_in_flight_ && acks_.empty();
}

void AgentStream::closeIdle() {
  idle_closed_ = true;
  context_->TryCancel();
}

std::string AgentStream::describe() const {
  std::lock_guard lk(mu_);
  return (agent_.empty() ? std::string("(no batch yet)") : shown(agent_)) + " (" + peer_ + ")";
}

v1::Batch* AgentStream::nextBatch() {
  arena_.Reset();
  batch_ = google::protobuf::Arena::CreateMessage<v1::Batch>(&arena_);
  return batch_;
}

AgentStream::~AgentStream() {
  if (!admitted_) return;
  shared_.open.fetch_sub(1);
  if (shared_.open_gauge) shared_.open_gauge->Decrement();
}

std::string AgentStream::certifiedNames() const {
  std::string out;
  for (const std::string& n : certified_) out += (out.empty() ? "" : ", ") + shown(n);
  return out;
}

void AgentStream::OnReadDone(bool ok) {
  reading_since_ns_.store(0, std::memory_order_relaxed);
  if (!ok) {  // the agent half-closed, or the stream broke
    {
      std::lock_guard lk(mu_);
      reads_done_ = true;
    }
    maybeFinish();
    return;
  }
  handle();
}

void AgentStream::handle() {
  if (!agent_.empty() && batch_->agent() != agent_) {
    deny("this stream sends as agent " + shown(agent_) + "; a batch as agent " +
         shown(batch_->agent()) + " is refused (one stream, one identity)");
    return;
  }
  if (agent_.empty() && !batch_->agent().empty()) {
    if (shared_.require_client_identity &&
        std::find(certified_.begin(), certified_.end(), batch_->agent()) == certified_.end()) {
      deny("the client certificate names " + certifiedNames() + ", not the agent " +
           shown(batch_->agent()) +
           " the stream sends as: give the agent a certificate whose SAN (DNS) or CN is its "
           "node name");
      return;
    }
    std::lock_guard lk(mu_);
    if (finished_) return;  // cancelled meanwhile
    agent_ = batch_->agent();
    shared_.analyzer.streamOpened(agent_);
    opened_ = true;
  }
  // Results of drain actions this agent was sent (only its own match).
  if (shared_.outbox && batch_->action_results_size() > 0) {
    shared_.outbox->onResults(batch_->agent(), batch_->action_results());
  }
  if (shared_.rate.enabled()) {
    // Over its rate: the batch waits (no read meanwhile) before it is
    // ingested and acknowledged.
    const bool known =
        shared_.analyzer.authority().identify(batch_->agent()).kind != Authority::Kind::kUnknown;
    const size_t records = static_cast<size_t>(batch_->probes_size()) +
                           static_cast<size_t>(batch_->ports_size()) +
                           static_cast<size_t>(batch_->lldp_size());
    using Clock = std::chrono::steady_clock;
    const auto now = Clock::now();
    const double wait =
        shared_.rate.reserve(known ? batch_->agent() : "(unknown)", records,
                             std::chrono::duration<double>(now.time_since_epoch()).count());
    if (wait > 0) {
      {
        std::lock_guard lk(mu_);
        ++refs_;
      }
      const auto until = std::chrono::system_clock::now() +
                         std::chrono::duration_cast<std::chrono::system_clock::duration>(
                             std::chrono::duration<double>(wait));
      alarm_.Set(until, [this](bool fired) {
        bool go = false;
        {
          std::lock_guard lk(mu_);
          go = fired && !cancelled_;
          if (!go) reads_done_ = true;
        }
        if (go) {
          submitIt();
        } else {
          maybeFinish();
        }
        release();
      });
      return;
    }
  }
  submitIt();
}

void AgentStream::submitIt() {
  {
    std::lock_guard lk(mu_);
    ++owed_;
    refs_ += 2;  // the result's and the resumption's
  }
  shared_.analyzer.submit(
      *batch_,
      [this, header = Header{batch_->agent(), batch_->epoch(), batch_->seq()}](BatchResult r) {
        acked(header, std::move(r));
      },
      // The batch was decoded before this runs, so batch_ may take the next.
      [this] {
        bool read = false;
        {
          std::lock_guard lk(mu_);
          read = !finished_ && !reads_done_;
        }
        if (read) {
          startRead();
        } else {
          maybeFinish();
        }
        release();
      });
}

void AgentStream::acked(const Header& h, BatchResult r) {
  report(h, r);
  bool start = false;
  {
    std::lock_guard lk(mu_);
    --owed_;
    // Nothing to acknowledge against; a batch the engine never got is left
    // for the agent to resend; and a stream that ended acks nothing more.
    if (!h.agent.empty() && !r.not_ingested && !finished_ && !writes_failed_ && status_.ok()) {
      v1::Ack& ack = acks_.emplace_back();
      ack.set_epoch(h.epoch);
      ack.set_seq(h.seq);
      ack.set_duplicate(r.duplicate);
      ack.set_topology(shared_.analyzer.topologyFingerprint());
      if (shared_.outbox) shared_.outbox->attach(h.agent, ack);
      startWriteLocked(start);
    }
  }
  if (start) {
    StartWrite(&writing_);
  } else {
    maybeFinish();
  }
  release();
}

void AgentStream::pushActions(const std::string& agent) {
  if (!shared_.outbox) return;
  bool start = false;
  {
    std::lock_guard lk(mu_);
    if (agent_ != agent || finished_ || writes_failed_ || !status_.ok()) return;
    v1::Ack ack;
    shared_.outbox->attach(agent_, ack);
    if (ack.actions_size() == 0) return;
    ack.set_topology(shared_.analyzer.topologyFingerprint());
    acks_.push_back(std::move(ack));
    startWriteLocked(start);
  }
  if (start) StartWrite(&writing_);
}

void AgentStream::startWriteLocked(bool& start) {
  if (write_in_flight_ || acks_.empty()) return;
  writing_ = std::move(acks_.front());
  acks_.pop_front();
  write_in_flight_ = true;
  start = true;
}

void AgentStream::OnWriteDone(bool ok) {
  // The idle clock of a pending read restarts at each ack written: the
  // agent has had an answer to send its next batch after.
  int64_t since = reading_since_ns_.load(std::memory_order_relaxed);
  if (since != 0) reading_since_ns_.compare_exchange_strong(since, steadyNs());
  bool start = false;
  {
    std::lock_guard lk(mu_);
    write_in_flight_ = false;
    if (!ok) {  // the stream is gone: the agent resends what was not acked
      writes_failed_ = true;
      acks_.clear();
    }
    if (!finished_) startWriteLocked(start);
  }
  if (start) {
    StartWrite(&writing_);
  } else {
    maybeFinish();
  }
}

void AgentStream::deny(const std::string& why) {
  std::string line =
      shared_.analyzer.refuse(agent_.empty() ? batch_->agent() : agent_, *batch_, why);
  if (!line.empty() && shared_.log) shared_.log(line + " (" + peer_ + ")");
  {
    std::lock_guard lk(mu_);
    status_ = grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "netdiag analyzer: " + why);
    reads_done_ = true;
  }
  maybeFinish();
}

void AgentStream::OnCancel() {
  {
    std::lock_guard lk(mu_);
    cancelled_ = true;
  }
  alarm_.Cancel();
  maybeFinish();
}

// Finishes once reading is over and every ack that will be written is
// (the acks ready at a refusal are written first; a broken or cancelled
// stream waits for nothing).
void AgentStream::maybeFinish() {
  grpc::Status status;
  bool close = false;
  std::string agent;
  {
    std::lock_guard lk(mu_);
    if (finished_ || write_in_flight_) return;
    if (!cancelled_) {
      if (!reads_done_) return;
      if (!writes_failed_ && ((status_.ok() && owed_ > 0) || !acks_.empty())) return;
    }
    finished_ = true;
    status = status_;
    close = opened_;
    agent = agent_;
  }
  if (close) shared_.analyzer.streamClosed(agent);
  Finish(status);
}

void AgentStream::OnDone() {
  // gRPC may free the context once this returns: out of the idle sweep's reach.
  if (admitted_) {
    std::lock_guard lk(shared_.streams_mu);
    shared_.streams.erase(this);
  }
  release();
}

void AgentStream::release() {
  bool last = false;
  {
    std::lock_guard lk(mu_);
    last = --refs_ == 0;
  }
  if (last) delete this;
}

void AgentStream::report(const Header& h, const BatchResult& r) const {
  const LogFn& log = shared_.log;
  if (!log) return;
  if (!r.authority_log.empty()) log(r.authority_log + " (" + peer_ + ")");
  const std::string batch =
      " (" + peer_ + ") batch " + std::to_string(h.epoch) + "/" + std::to_string(h.seq) + ": ";
  if (!r.errors.empty()) {
    std::string msg =
        "agent " + shown(h.agent) + batch + std::to_string(r.errors.size()) + " rejected";
    if (r.future > 0) msg += " (" + std::to_string(r.future) + " from the future: clock ahead?)";
    msg += ": ";
    for (size_t i = 0; i < r.errors.size() && i < kLoggedErrorsPerBatch; ++i) {
      msg += (i ? "; " : "") + r.errors[i];
    }
    if (r.errors.size() > kLoggedErrorsPerBatch) msg += "; ...";
    log(msg);
  }
  if (!r.warnings.empty()) {
    log("agent " + shown(h.agent) + batch + std::to_string(r.warnings.size()) +
        " record(s) kept without their path, first: " + r.warnings[0]);
  }
}

}  // namespace netdiag::server
