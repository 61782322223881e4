#include "server/ingest_queue.h"

#include <optional>

#include "server/live_analyzer.h"

namespace netdiag::server {

namespace {

void refuse(DecodedBatch& batch, const std::function<void(bool)>& on_queued) {
  BatchResult stopped;
  stopped.not_ingested = true;
  if (batch.done) batch.done(std::move(stopped));
  if (on_queued) on_queued(false);
}

}  // namespace

bool IngestQueue::offer(DecodedBatch&& batch, std::function<void(bool)> on_queued) {
  const size_t n = batch.records();
  std::unique_lock lk(mu_);
  if (closed_) {
    lk.unlock();
    refuse(batch, on_queued);
    return false;
  }
  // Registered while parked too: the engine must not age it out meanwhile.
  oldest_.insert(batch.oldest);
  if (parked_.empty() && fitsLocked(n)) {
    records_ += n;
    batches_.push_back(std::move(batch));
    lk.unlock();
    ready_.notify_one();
    return true;
  }
  parked_.push_back({std::move(batch), std::move(on_queued), std::chrono::steady_clock::now()});
  return false;
}

bool IngestQueue::push(DecodedBatch&& batch) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<bool> queued;
  if (offer(std::move(batch), [&](bool q) {
        std::lock_guard lk(mu);
        queued = q;
        cv.notify_one();
      })) {
    return true;
  }
  std::unique_lock lk(mu);
  cv.wait(lk, [&] { return queued.has_value(); });
  return *queued;
}

void IngestQueue::popAll(std::vector<DecodedBatch>& out, std::chrono::milliseconds timeout) {
  std::vector<std::function<void(bool)>> admitted;
  {
    std::unique_lock lk(mu_);
    ready_.wait_for(lk, timeout, [&] { return woken_ || closed_ || !batches_.empty(); });
    woken_ = false;
    for (DecodedBatch& b : batches_) {
      oldest_.erase(oldest_.find(b.oldest));
      out.push_back(std::move(b));
    }
    batches_.clear();
    records_ = 0;
    // Room again: parked batches move in, oldest first, while they fit; the
    // next popAll() takes them.
    const auto now = std::chrono::steady_clock::now();
    while (!closed_ && !parked_.empty() && fitsLocked(parked_.front().batch.records())) {
      Parked& p = parked_.front();
      records_ += p.batch.records();
      blocked_ns_ += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - p.since).count());
      batches_.push_back(std::move(p.batch));
      admitted.push_back(std::move(p.on_queued));
      parked_.pop_front();
    }
  }
  for (auto& f : admitted) f(true);
}

void IngestQueue::wake() {
  {
    std::lock_guard lk(mu_);
    woken_ = true;
  }
  ready_.notify_one();
}

void IngestQueue::close() {
  std::deque<Parked> refused;
  {
    std::lock_guard lk(mu_);
    closed_ = true;
    for (Parked& p : parked_) oldest_.erase(oldest_.find(p.batch.oldest));
    refused.swap(parked_);
  }
  ready_.notify_one();
  for (Parked& p : refused) refuse(p.batch, p.on_queued);
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
  return parked_.size();
}

double IngestQueue::blockedSeconds() const {
  std::lock_guard lk(mu_);
  const auto now = std::chrono::steady_clock::now();
  uint64_t ns = blocked_ns_;
  for (const Parked& p : parked_) {
    ns += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - p.since).count());
  }
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace netdiag::server
