#include "analyzer/evidence.h"

#include <cmath>

namespace netdiag::analyzer {

BucketedTallies::BucketedTallies(size_t size, size_t buckets, double width_s)
    : buckets_(buckets), width_(width_s), ring_(size * buckets), total_(size) {}

bool BucketedTallies::add(size_t key, double t, double n, double k) {
  auto b = static_cast<int64_t>(std::floor(t / width_));
  if (newest_ == INT64_MIN) advanceTo(t);
  if (b > newest_) advanceTo(t);
  if (b <= newest_ - static_cast<int64_t>(buckets_)) return false;
  const size_t size = total_.size();
  ring_[slot(b) * size + key].add(n, k);
  total_[key].add(n, k);
  return true;
}

void BucketedTallies::advanceTo(double now) {
  auto b = static_cast<int64_t>(std::floor(now / width_));
  if (newest_ == INT64_MIN) {
    newest_ = b;
    return;
  }
  const size_t size = total_.size();
  // Clear every bucket that falls out of the ring, at most the whole ring.
  int64_t steps = std::min<int64_t>(b - newest_, static_cast<int64_t>(buckets_));
  for (int64_t i = 1; i <= steps; ++i) {
    size_t s = slot(newest_ + i);
    Tally* row = &ring_[s * size];
    for (size_t key = 0; key < size; ++key) {
      if (row[key].n != 0 || row[key].k != 0) {
        total_[key].n -= row[key].n;
        total_[key].k -= row[key].k;
        row[key] = {};
      }
    }
  }
  if (b > newest_) newest_ = b;
}

Tally BucketedTallies::recent(size_t key, size_t buckets) const {
  Tally t;
  const size_t size = total_.size();
  for (size_t i = 0; i < buckets && i < buckets_; ++i) {
    const Tally& x = ring_[slot(newest_ - static_cast<int64_t>(i)) * size + key];
    t.add(x.n, x.k);
  }
  return t;
}

void LossyStore::add(double t, uint32_t n, uint32_t k, const std::vector<DirLinkId>& links,
                     NodeId dst, bool forward, Middle m0, Middle m1) {
  LossySegment s;
  s.t = t;
  s.n = n;
  s.k = k;
  s.links_begin = base_ + static_cast<uint32_t>(links_.size());
  links_.insert(links_.end(), links.begin(), links.end());
  s.links_end = base_ + static_cast<uint32_t>(links_.size());
  s.dst_node = dst;
  s.forward = forward;
  s.middle[0] = m0;
  s.middle[1] = m1;
  segments_.push_back(s);
}

void LossyStore::expire(double oldest) {
  // Segments arrive nearly in time order; late ones may sit behind newer
  // ones and are dropped when the front passes them.
  size_t dropped_links = 0;
  while (!segments_.empty() && segments_.front().t < oldest) {
    dropped_links = segments_.front().links_end - base_;
    segments_.pop_front();
  }
  if (dropped_links > 0 && dropped_links * 2 > links_.size()) {
    // Compact the link pool once most of it is dead.
    links_.erase(links_.begin(), links_.begin() + static_cast<ptrdiff_t>(dropped_links));
    base_ += static_cast<uint32_t>(dropped_links);
  }
}

}  // namespace netdiag::analyzer
