#pragma once

// Per-directed-link and per-host evidence over a ring of time buckets, with
// running totals over the whole horizon. A record adds its probes to every
// link it certainly crossed; lossy records are also kept one by one so a
// localization pass can explain them away.

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "topology/model.h"

namespace netdiag::analyzer {

using topology::DirLinkId;
using topology::NodeId;

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
class BucketedTallies {
 public:
  BucketedTallies(size_t size, size_t buckets, double width_s);

  // Adds to the bucket of time t; false when t is older than the ring.
  bool add(size_t key, double t, double n, double k);
  // Moves the ring so that `now` is in its newest bucket, dropping older ones.
  void advanceTo(double now);

  // Totals over the newest `buckets` buckets (<= ring size).
  Tally total(size_t key) const { return total_[key]; }
  Tally recent(size_t key, size_t buckets) const;
  size_t size() const { return total_.size(); }
  int64_t newestBucket() const { return newest_; }
  double width() const { return width_; }

 private:
  size_t slot(int64_t bucket) const {  // buckets may be negative: t is any number
    auto n = static_cast<int64_t>(buckets_);
    return static_cast<size_t>(((bucket % n) + n) % n);
  }
  size_t buckets_;
  double width_;
  int64_t newest_ = INT64_MIN;
  std::vector<Tally> ring_;   // [slot * size + key]
  std::vector<Tally> total_;  // over the whole ring
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
  NodeId dst_node = topology::kNone;  // the host probed (forward segments)
  bool forward = true;
  Middle middle[2];  // unseen stretches (forward, reverse)
  // Once an incident pages on a hypothesis, the segments it explained stay
  // its own: later passes never blame them on anything else (see engine).
  uint64_t claimed_by = 0;  // 0: unclaimed
};

class LossyStore {
 public:
  void add(double t, uint32_t n, uint32_t k, const std::vector<DirLinkId>& links, NodeId dst,
           bool forward, Middle m0, Middle m1);
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
