#pragma once

// What is known of each flow's path. ECMP hashes a flow's 5-tuple the same
// way every time, so a path discovered once holds for the flow's later
// records that carry none, until the path changes: a new discovery replaces
// it, and a partial discovery that disagrees with it drops it. (A cached
// path may be stale for one window after a reroute; clean records on it
// then exonerate links the flow no longer crosses, which costs little.)
// The same holds for the replies' path, kept beside it. Without any
// discovery, only a flow's access links are certain.
//
// The cache is a flat open-addressing table (linear probing, power-of-two
// capacity, backward-shift deletion) of 32-byte slots: a slot holds the
// flow's key and its path packed inline at the fewest bits a directed link
// id of the topology needs (6 links of 19 bits at 100k host ports), so a
// lookup touches one cache line. Longer paths (or ids out of range) live in
// a side pool.

#include <cstdint>
#include <vector>

#include "analyzer/evidence.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::analyzer {

class FlowPaths {
 public:
  explicit FlowPaths(const topology::Topology& topo);

  // The directed links the record's probes certainly crossed on the way out
  // (and, for reverseLinks, on the way back), and the stretch that remains
  // unseen. Learns from the record.
  Middle forwardLinks(const telemetry::ProbeRecord& r, std::vector<topology::DirLinkId>& out);
  Middle reverseLinks(const telemetry::ProbeRecord& r, std::vector<topology::DirLinkId>& out);

  // Starts loading the slots forwardLinks and reverseLinks will probe first.
  void prefetch(const telemetry::ProbeRecord& r) const {
    __builtin_prefetch(&slots_[home(r.src, r.dst, r.flow)]);
    __builtin_prefetch(&slots_[home(r.dst, r.src, r.flow ^ kReplyFlow)]);
  }

  size_t cachedFlows() const { return size_; }
  // Makes room for `flows` cached flows without regrowing.
  void reserve(size_t flows);

 private:
  struct Slot {
    uint64_t flow;
    uint32_t src, dst;
    // Path bits: lo, then the low 56 bits of hi; the top byte of hi is the
    // slot's tag: 0 empty, 1..kMaxInline the inline path's length, kSpill a
    // path in spill_[lo].
    uint64_t lo, hi;
  };
  static_assert(sizeof(Slot) == 32);
  static constexpr uint64_t kSpill = 0xff;
  // Reply paths are kept under the flow id with its top bit flipped (a
  // flow id that uses the top bit could only mislead its own paths).
  static constexpr uint64_t kReplyFlow = uint64_t{1} << 63;
  static constexpr unsigned kPathBits = 120;

  static uint64_t tagOf(const Slot& s) { return s.hi >> 56; }
  size_t home(topology::PortId src, topology::PortId dst, uint64_t flow) const;
  Slot* find(topology::PortId src, topology::PortId dst, uint64_t flow);
  void store(topology::PortId src, topology::PortId dst, uint64_t flow,
             const std::vector<topology::DirLinkId>& path);
  void erase(Slot* s);
  void rehash(size_t capacity);
  bool fitsInline(const std::vector<topology::DirLinkId>& path) const;
  void setPath(Slot& s, const std::vector<topology::DirLinkId>& path);
  size_t pathSize(const Slot& s) const;
  void getPath(const Slot& s, std::vector<topology::DirLinkId>& out) const;
  bool hasPrefix(const Slot& s, const std::vector<topology::DirLinkId>& prefix) const;

  // Only the two access links are certain; the switches between are unseen.
  Middle accessOnly(topology::PortId src, topology::PortId dst,
                    std::vector<topology::DirLinkId>& out) const;
  Middle accessMiddle(topology::PortId src, topology::PortId dst) const;

  const topology::Topology& topo_;
  unsigned id_bits_;     // bits per inline link id
  unsigned max_inline_;  // links per inline path
  uint64_t id_mask_;
  std::vector<Slot, HugePageAllocator<Slot>> slots_;
  size_t mask_ = 0;  // capacity - 1
  unsigned shift_ = 64;
  size_t size_ = 0;
  std::vector<std::vector<topology::DirLinkId>> spill_;
  std::vector<uint64_t> spill_free_;
};

}  // namespace netdiag::analyzer
