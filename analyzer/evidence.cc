#include "analyzer/evidence.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace netdiag::analyzer {

namespace {

constexpr size_t kHugePage = size_t{1} << 21;

}  // namespace

void* allocateHuge(size_t bytes) {
  if (bytes < kHugePage) {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  const size_t rounded = (bytes + kHugePage - 1) & ~(kHugePage - 1);
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure only costs speed
#endif
  return p;
}

void deallocateHuge(void* p, size_t) noexcept { std::free(p); }

int64_t bucketOf(double t, double width) {
  const double q = std::floor(t / width);
  // NaN (only from a width that is not positive) falls to the oldest bucket.
  if (!(q > -static_cast<double>(kMaxBucket))) return -kMaxBucket;
  if (q >= static_cast<double>(kMaxBucket)) return kMaxBucket;
  return static_cast<int64_t>(q);
}

BucketedTallies::BucketedTallies(size_t size, size_t buckets, double width_s)
    : buckets_(buckets), width_(width_s), cells_(size * buckets), total_(size) {}

bool BucketedTallies::addSlow(size_t key, double t, double n, double k) {
  const int64_t b = bucketOf(t, width_);
  if (newest_ == INT64_MIN) advanceTo(t);
  if (b > newest_) advanceTo(t);
  if (b <= newest_ - static_cast<int64_t>(buckets_)) return false;
  if (b == newest_) last_t_ = t;
  const size_t size = total_.size();
  const size_t s = b == newest_ ? newest_slot_ : slot(b);
  if (compact_) {
    if (n >= 0 && k >= 0 && n < kCellLimit && k < kCellLimit) {
      const auto un = static_cast<uint64_t>(n), uk = static_cast<uint64_t>(k);
      Cell& c = cells_[s * size + key];
      const uint64_t sn = c.n + un, sk = c.k + uk;
      if (static_cast<double>(un) == n && static_cast<double>(uk) == k && ((sn | sk) >> 32) == 0) {
        c.n = static_cast<uint32_t>(sn);
        c.k = static_cast<uint32_t>(sk);
        // The totals leave out the newest bucket (folded in at advanceTo).
        if (b != newest_) total_[key].add(n, k);
        return true;
      }
    }
    widen();
  }
  ring_[s * size + key].add(n, k);
  total_[key].add(n, k);
  return true;
}

void BucketedTallies::widen() {
  const size_t size = total_.size();
  ring_.resize(cells_.size());
  for (size_t i = 0; i < cells_.size(); ++i) {
    if ((cells_[i].n | cells_[i].k) == 0) continue;
    ring_[i].n = cells_[i].n;
    ring_[i].k = cells_[i].k;
  }
  if (newest_ != INT64_MIN) {
    const Tally* row = &ring_[newest_slot_ * size];
    for (size_t key = 0; key < size; ++key) total_[key].add(row[key].n, row[key].k);
  }
  decltype(cells_)().swap(cells_);
  compact_ = false;
}

void BucketedTallies::advanceTo(double now) {
  const int64_t b = bucketOf(now, width_);
  if (newest_ == INT64_MIN) {
    newest_ = b;
    newest_slot_ = slot(b);
    last_t_ = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  if (b <= newest_) return;
  const size_t size = total_.size();
  // Clear every bucket that falls out of the ring, at most the whole ring.
  int64_t steps = std::min<int64_t>(b - newest_, static_cast<int64_t>(buckets_));
  if (compact_) {
    // The newest bucket becomes an older one: into the totals with it.
    Cell* row = &cells_[newest_slot_ * size];
    for (size_t key = 0; key < size; ++key) {
      if ((row[key].n | row[key].k) != 0) total_[key].add(row[key].n, row[key].k);
    }
    for (int64_t i = 1; i <= steps; ++i) {
      row = &cells_[slot(newest_ + i) * size];
      for (size_t key = 0; key < size; ++key) {
        if ((row[key].n | row[key].k) != 0) {
          total_[key].n -= row[key].n;
          total_[key].k -= row[key].k;
          row[key] = {};
        }
      }
    }
  } else {
    for (int64_t i = 1; i <= steps; ++i) {
      Tally* row = &ring_[slot(newest_ + i) * size];
      for (size_t key = 0; key < size; ++key) {
        if (row[key].n != 0 || row[key].k != 0) {
          total_[key].n -= row[key].n;
          total_[key].k -= row[key].k;
          row[key] = {};
        }
      }
    }
  }
  newest_ = b;
  newest_slot_ = slot(b);
  last_t_ = std::numeric_limits<double>::quiet_NaN();
}

Tally BucketedTallies::total(size_t key) const {
  Tally t = total_[key];
  if (compact_ && newest_ != INT64_MIN) {
    const Cell& c = cells_[newest_slot_ * total_.size() + key];
    t.add(c.n, c.k);
  }
  return t;
}

Tally BucketedTallies::recent(size_t key, size_t buckets) const {
  Tally t;
  if (newest_ == INT64_MIN) return t;  // nothing added yet
  const size_t size = total_.size();
  for (size_t i = 0; i < buckets && i < buckets_; ++i) {
    const size_t s = slot(newest_ - static_cast<int64_t>(i)) * size + key;
    if (compact_) {
      t.add(cells_[s].n, cells_[s].k);
    } else {
      t.add(ring_[s].n, ring_[s].k);
    }
  }
  return t;
}

void LossyStore::add(double t, uint32_t n, uint32_t k, const std::vector<DirLinkId>& links,
                     NodeId src, NodeId dst, bool forward, Middle m0, Middle m1, bool round_trip,
                     uint32_t flow) {
  LossySegment s;
  s.t = t;
  s.n = n;
  s.k = k;
  s.links_begin = base_ + static_cast<uint32_t>(links_.size());
  links_.insert(links_.end(), links.begin(), links.end());
  s.links_end = base_ + static_cast<uint32_t>(links_.size());
  s.src_node = src;
  s.dst_node = dst;
  s.forward = forward;
  s.round_trip = round_trip;
  s.flow = flow;
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
