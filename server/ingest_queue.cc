#include "server/ingest_queue.h"

namespace netdiag::server {

bool IngestQueue::push(DecodedBatch&& batch) {
  const size_t n = batch.records();
  std::unique_lock lk(mu_);
  if (closed_) return false;
  // Registered while waiting too: the engine must not age it out meanwhile.
  auto mark = oldest_.insert(batch.oldest);
  auto fits = [&] { return closed_ || records_ == 0 || records_ + n <= capacity_; };
  if (!fits()) {
    const auto t0 = std::chrono::steady_clock::now();
    ++waiting_;
    room_.wait(lk, fits);
    --waiting_;
    blocked_ns_ += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
  }
  if (closed_) {
    oldest_.erase(mark);
    return false;
  }
  records_ += n;
  batches_.push_back(std::move(batch));
  lk.unlock();
  ready_.notify_one();
  return true;
}

void IngestQueue::popAll(std::vector<DecodedBatch>& out, std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  ready_.wait_for(lk, timeout, [&] { return woken_ || closed_ || !batches_.empty(); });
  woken_ = false;
  for (DecodedBatch& b : batches_) {
    oldest_.erase(oldest_.find(b.oldest));
    out.push_back(std::move(b));
  }
  batches_.clear();
  records_ = 0;
  lk.unlock();
  room_.notify_all();
}

void IngestQueue::wake() {
  {
    std::lock_guard lk(mu_);
    woken_ = true;
  }
  ready_.notify_one();
}

void IngestQueue::close() {
  {
    std::lock_guard lk(mu_);
    closed_ = true;
  }
  room_.notify_all();
  ready_.notify_one();
}

double IngestQueue::oldest() const {
  std::lock_guard lk(mu_);
  return oldest_.empty() ? std::numeric_limits<double>::infinity() : *oldest_.begin();
}

size_t IngestQueue::depthRecords() const {
  std::lock_guard lk(mu_);
  return records_;
}

size_t IngestQueue::waitingPushes() const {
  std::lock_guard lk(mu_);
  return waiting_;
}

double IngestQueue::blockedSeconds() const {
  return static_cast<double>(blocked_ns_.load()) * 1e-9;
}

}  // namespace netdiag::server
