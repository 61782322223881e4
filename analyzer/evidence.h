#pragma once

// Per-directed-link and per-host evidence over a ring of time buckets, with
// running totals over the whole horizon. A record adds its probes to every
// link it certainly crossed; lossy records are also kept one by one so a
// localization pass can explain them away.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <new>
#include <span>
#include <vector>

#include "topology/model.h"

namespace netdiag::analyzer {

using topology::DirLinkId;
using topology::NodeId;

// Allocates large arrays (>= 2 MiB) on 2 MiB boundaries and asks the kernel
// for transparent huge pages there: the evidence rings and the flow-path
// table are read at random, and 4 KiB pages would cost a TLB miss on nearly
// every access.
void* allocateHuge(size_t bytes);
void deallocateHuge(void* p, size_t bytes) noexcept;

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(allocateHuge(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { deallocateHuge(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

// The bucket of time t in buckets of `width` seconds: floor(t / width),
// saturated to +-kMaxBucket. Telemetry times are any finite double (a bad
// clock, a hostile log), and a plain cast of a quotient beyond int64 is
// undefined; the bound leaves room for the ring's arithmetic on buckets
// (differences, +- ring size) to stay within int64 as well.
inline constexpr int64_t kMaxBucket = int64_t{1} << 61;
int64_t bucketOf(double t, double width);

// Probes and losses (as doubles: exposures from several horizons add up).
struct Tally {
  double n = 0;
  double k = 0;
  void add(double dn, double dk) {
    n += dn;
    k += dk;
  }
};

// A ring of `buckets` time buckets of width `width_s` for `size` keys.
//
// Storage is compact while every amount added is a whole number in
// [0, 2^32) and every bucket's sums stay below 2^32 (probe and loss counts):
// a bucket holds two uint32 and the running totals leave out the newest
// bucket, so the common add (to the newest bucket) touches one 8-byte cell;
// the newest bucket is folded into the totals when the ring moves on. All
// sums are then exact, so results are the same as with doubles. The first
// amount that does not fit switches the ring to doubles for good (the same
// arithmetic as always: exact up to the switch, eager totals after it).
class BucketedTallies {
 public:
  BucketedTallies(size_t size, size_t buckets, double width_s);

  // Adds to the bucket of time t; false when t is older than the ring.
  bool add(size_t key, double t, double n, double k) {
    // The common case inline: whole counts into the newest bucket, at the
    // time of the previous add (a record adds to many keys at once).
    if (t == last_t_ && compact_ && n >= 0 && k >= 0 && n < kCellLimit && k < kCellLimit) {
      const auto un = static_cast<uint64_t>(n), uk = static_cast<uint64_t>(k);
      Cell& c = cells_[newest_slot_ * total_.size() + key];
      const uint64_t sn = c.n + un, sk = c.k + uk;
      if (static_cast<double>(un) == n && static_cast<double>(uk) == k && ((sn | sk) >> 32) == 0) {
        c.n = static_cast<uint32_t>(sn);
        c.k = static_cast<uint32_t>(sk);
        return true;
      }
    }
    return addSlow(key, t, n, k);
  }
  // Moves the ring so that `now` is in its newest bucket, dropping older ones.
  void advanceTo(double now);

  // Totals over the newest `buckets` buckets (<= ring size).
  Tally total(size_t key) const;
  Tally recent(size_t key, size_t buckets) const;
  size_t size() const { return total_.size(); }
  int64_t newestBucket() const { return newest_; }
  double width() const { return width_; }
  // False once the ring has switched to doubles.
  bool compact() const { return compact_; }

 private:
  struct Cell {
    uint32_t n = 0, k = 0;
  };
  size_t slot(int64_t bucket) const {  // buckets may be negative: t is any number
    auto n = static_cast<int64_t>(buckets_);
    return static_cast<size_t>(((bucket % n) + n) % n);
  }
  static constexpr double kCellLimit = 4294967296.0;  // 2^32
  bool addSlow(size_t key, double t, double n, double k);
  void widen();
  size_t buckets_;
  double width_;
  int64_t newest_ = INT64_MIN;
  bool compact_ = true;
  size_t newest_slot_ = 0;  // slot(newest_)
  // A time whose bucket is newest_ (NaN: none), set by addSlow.
  double last_t_ = std::numeric_limits<double>::quiet_NaN();
  std::vector<Cell, HugePageAllocator<Cell>> cells_;   // compact: [slot * size + key]
  std::vector<Tally, HugePageAllocator<Tally>> ring_;  // wide: [slot * size + key]
  // Compact: over the ring but its newest bucket; wide: over the whole ring.
  std::vector<Tally, HugePageAllocator<Tally>> total_;
};

// The stretch of a path that discovery did not see: somewhere on the ECMP
// paths from switch `from` to switch `to` (kNone: the path is fully known).
// A path taken from the flow's memory rather than this record's discovery
// is `cached`: almost always right, but stale for a window after a reroute.
struct Middle {
  NodeId from = topology::kNone;
  NodeId to = topology::kNone;
  bool cached = false;
  bool known() const { return from == topology::kNone || from == to || cached; }
};

// One lossy segment of a record: its probes, losses, and the links it
// certainly crossed (an index range into LossyStore::links).
struct LossySegment {
  double t = 0;
  uint32_t n = 0, k = 0;
  uint32_t links_begin = 0, links_end = 0;
  // The record's ends, both directions alike: the node that probed and the
  // node probed (a host-side hypothesis owns every segment of its flows).
  NodeId src_node = topology::kNone, dst_node = topology::kNone;
  bool forward = true;
  // A whole round trip (no one-way counts): its background is the round
  // trip's, not one direction's.
  bool round_trip = false;
  // The flow it is a window of (its ends and source port, hashed): a flow
  // keeps its path, so its windows are one draw of every ECMP hash.
  uint32_t flow = 0;
  Middle middle[2];  // unseen stretches (forward, reverse)
  // Once an incident pages on a hypothesis, the segments it explained stay
  // its own: later passes never blame them on anything else (see engine).
  uint64_t claimed_by = 0;  // 0: unclaimed
};

class LossyStore {
 public:
  void add(double t, uint32_t n, uint32_t k, const std::vector<DirLinkId>& links, NodeId src,
           NodeId dst, bool forward, Middle m0, Middle m1, bool round_trip, uint32_t flow);
  // Forgets segments older than `oldest`.
  void expire(double oldest);
  const std::deque<LossySegment>& segments() const { return segments_; }
  std::deque<LossySegment>& segments() { return segments_; }
  std::span<const DirLinkId> linksOf(const LossySegment& s) const {
    return {links_.data() + (s.links_begin - base_), s.links_end - s.links_begin};
  }

 private:
  std::deque<LossySegment> segments_;
  std::vector<DirLinkId> links_;
  uint32_t base_ = 0;  // link index of links_[0]
};

}  // namespace netdiag::analyzer
