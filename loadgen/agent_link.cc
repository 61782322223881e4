#include "loadgen/agent_link.h"

#include <algorithm>

namespace netdiag::loadgen {

constexpr double kBackoffMaxS = 2;

// One connection: a read always outstanding (acks), at most one write. A
// hold keeps it alive while the link may still start a write on it.
class AgentLink::Call final : public grpc::ClientBidiReactor<v1::Batch, v1::Ack> {
 public:
  explicit Call(AgentLink& link) : link_(link) { link_.stub_->async()->Stream(&context_, this); }
  void start() {
    AddHold();
    StartRead(&ack_);
    StartCall();
  }
  void write(std::shared_ptr<const v1::Batch> batch) {
    writing_ = std::move(batch);
    StartWrite(writing_.get());
  }
  void cancel() { context_.TryCancel(); }
  void release() { RemoveHold(); }

  void OnWriteDone(bool ok) override {
    writing_.reset();
    link_.onWritten(ok);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      link_.onReadEnded();
      return;
    }
    link_.onAck(ack_);
    StartRead(&ack_);
  }
  void OnDone(const grpc::Status& status) override {
    link_.onDone(status);
    delete this;
  }

 private:
  AgentLink& link_;
  grpc::ClientContext context_;
  v1::Ack ack_;
  std::shared_ptr<const v1::Batch> writing_;
};

AgentLink::AgentLink(std::shared_ptr<grpc::Channel> channel, std::string agent, uint64_t epoch,
                     Outstanding* totals)
    : channel_(std::move(channel)),
      stub_(v1::Collector::NewStub(channel_)),
      agent_(std::move(agent)),
      epoch_(epoch),
      totals_(totals) {}

AgentLink::~AgentLink() { stop(); }

void AgentLink::send(v1::Batch batch) {
  batch.set_agent(agent_);
  batch.set_epoch(epoch_);
  std::shared_ptr<const v1::Batch> next;
  Call* call = nullptr;
  {
    std::lock_guard lk(mu_);
    const uint64_t seq = next_seq_++;
    batch.set_seq(seq);
    const uint64_t bytes = batch.ByteSizeLong();
    unacked_bytes_ += bytes;
    if (totals_) totals_->bytes += bytes, ++totals_->batches;
    unacked_.emplace(seq, std::make_shared<const v1::Batch>(std::move(batch)));
    call = nextWriteLocked(next);
  }
  if (call) call->write(std::move(next));
}

AgentLink::Call* AgentLink::nextWriteLocked(std::shared_ptr<const v1::Batch>& batch) {
  if (!call_ || writing_ || read_ended_) return nullptr;
  auto it = unacked_.lower_bound(next_write_);
  if (it == unacked_.end()) return nullptr;
  writing_ = true;
  next_write_ = it->first + 1;
  batch = it->second;
  return call_;
}

AgentLink::Call* AgentLink::releaseLocked() {
  if (!held_ || !read_ended_ || writing_ || pins_ > 0) return nullptr;
  held_ = false;
  Call* c = call_;
  call_ = nullptr;
  return c;
}

void AgentLink::onWritten(bool ok) {
  std::shared_ptr<const v1::Batch> next;
  Call* call = nullptr;
  Call* ended = nullptr;
  {
    std::lock_guard lk(mu_);
    writing_ = false;
    if (!ok) read_ended_ = true;  // the stream broke; OnDone tells why
    call = nextWriteLocked(next);
    if (!call) ended = releaseLocked();
  }
  if (call) call->write(std::move(next));
  if (ended) ended->release();
}

void AgentLink::onAck(const v1::Ack& ack) {
  std::lock_guard lk(mu_);
  if (ack.epoch() != epoch_) return;
  analyzer_topology_.store(ack.topology(), std::memory_order_relaxed);
  auto it = unacked_.find(ack.seq());
  if (it == unacked_.end()) return;
  const uint64_t bytes = it->second->ByteSizeLong();
  unacked_bytes_ -= bytes;
  if (totals_) totals_->bytes -= bytes, --totals_->batches;
  unacked_.erase(it);
  ++acked_;
  backoff_s_ = 0.1;
}

void AgentLink::onReadEnded() {
  Call* ended = nullptr;
  {
    std::lock_guard lk(mu_);
    read_ended_ = true;
    ended = releaseLocked();
  }
  if (ended) ended->release();
}

void AgentLink::onDone(const grpc::Status& status) {
  std::lock_guard lk(mu_);
  alive_ = false;
  call_ = nullptr;
  if (!status.ok()) {
    last_error_ = status.error_message();
  } else if (!unacked_.empty()) {
    last_error_ = "the analyzer ended the stream";
  }
  // Everything unacknowledged goes again on the next stream, in order.
  retry_at_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(backoff_s_));
  backoff_s_ = std::min(backoff_s_ * 2, kBackoffMaxS);
  done_cv_.notify_all();
}

void AgentLink::maintain(std::chrono::steady_clock::time_point now) {
  std::shared_ptr<const v1::Batch> next;
  Call* call = nullptr;
  Call* fresh = nullptr;
  {
    std::lock_guard lk(mu_);
    if (stopping_ || alive_ || now < retry_at_) return;
    if (calls_++ > 0) ++reconnects_;
    alive_ = true;
    held_ = true;
    writing_ = false;
    read_ended_ = false;
    next_write_ = unacked_.empty() ? next_seq_ : unacked_.begin()->first;
    fresh = call_ = new Call(*this);  // binds only: nothing runs yet
    ++pins_;
    call = nextWriteLocked(next);
  }
  // gRPC is never called under mu_: a reaction may run on this thread.
  fresh->start();
  if (call) call->write(std::move(next));
  unpin();
}

void AgentLink::unpin() {
  Call* ended = nullptr;
  {
    std::lock_guard lk(mu_);
    --pins_;
    ended = releaseLocked();
  }
  if (ended) ended->release();
}

void AgentLink::stop() {
  Call* call = nullptr;
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
    if (call_) {
      call = call_;
      ++pins_;
    }
  }
  if (call) {
    call->cancel();
    unpin();
  }
  std::unique_lock lk(mu_);
  done_cv_.wait(lk, [&] { return !alive_; });
}

AgentLink::Stats AgentLink::stats() const {
  std::lock_guard lk(mu_);
  return {unacked_.size(), unacked_bytes_, acked_, reconnects_, last_error_};
}

}  // namespace netdiag::loadgen
