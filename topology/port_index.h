#pragma once

// A flat, read-only index of a topology's port references for readers that
// resolve names on every record (the telemetry log reader). Topology's own
// findPort() walks a node-based hash map whose keys live on the heap: about
// four dependent cache misses a lookup, which at 30k+ ports cost more than
// parsing the JSON. Here a lookup touches one slot of a flat table and the
// port's 64-byte entry, which holds its reference (the first 48 bytes), its
// node, its egress link and the port at the far end of that link.
//
// Built from a finalized topology and immutable afterwards (thread-safe to
// read). It does not follow later changes to the topology's names.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "topology/model.h"

namespace netdiag::topology {

class PortIndex {
 public:
  explicit PortIndex(const Topology& topo);

  // The port named "node:port" (exactly as Topology::findPort), or kNone.
  PortId find(std::string_view ref) const;
  // Whether `ref` is port p's "node:port": one cache line, no lookup.
  bool is(PortId p, std::string_view ref) const {
    const Entry& e = entries_[p];
    if (e.len != ref.size()) return false;
    if (e.len <= kHead) return std::memcmp(e.head, ref.data(), e.len) == 0;
    return std::memcmp(e.head, ref.data(), kHead) == 0 &&
           std::memcmp(refs_.data() + ref_begin_[p] + kHead, ref.data() + kHead, e.len - kHead) ==
               0;
  }

  // Hints for a reader that resolves many references at once and wants the
  // loads to overlap rather than wait one after another: prefetchSlot()
  // hashes a reference and starts loading its slot; candidate() is the port
  // the slots name for that hash (not checked against the name: find()
  // decides), kNone when none; prefetchEntry() starts loading a port's entry.
  uint64_t prefetchSlot(std::string_view ref) const {
    const uint64_t h = hash(ref);
    __builtin_prefetch(&slots_[h & mask_]);
    return h;
  }
  PortId candidate(uint64_t h) const {
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].id == kNone || slots_[i].tag == tag) return slots_[i].id;
    }
  }
  void prefetchEntry(PortId p) const {
    if (p < entries_.size()) __builtin_prefetch(&entries_[p]);
  }

  // "node:port" of a port (as Topology::portRef), without building a string.
  std::string_view ref(PortId p) const {
    return {refs_.data() + ref_begin_[p], ref_begin_[p + 1] - ref_begin_[p]};
  }
  NodeId node(PortId p) const { return entries_[p].node; }
  // As Topology::egressOf: the directed link leaving through p, kNone if p is unlinked.
  DirLinkId egress(PortId p) const { return entries_[p].egress; }
  // The port at the far end of p's link (Topology::dirDstPort(egressOf(p))), kNone if unlinked.
  PortId peer(PortId p) const { return entries_[p].peer; }

  size_t size() const { return entries_.size(); }

  // The hash the table uses (exposed for tests).
  static uint64_t hash(std::string_view s);

 private:
  // What a reader needs of a port in one cache line: a path hop reads its
  // node, its link and the name of the port at the other end. References
  // up to kHead bytes are compared in place; longer ones also read refs_.
  static constexpr size_t kHead = 48;
  struct alignas(64) Entry {
    NodeId node;
    DirLinkId egress;
    PortId peer;
    uint32_t len;
    char head[kHead];
  };
  static_assert(sizeof(Entry) == 64);
  // A slot is empty (id == kNone) or holds a port and the top 32 bits of its hash.
  struct Slot {
    uint32_t tag = 0;
    PortId id = kNone;
  };
  std::vector<Entry> entries_;       // by port id
  std::string refs_;                 // every port's reference, back to back
  std::vector<uint32_t> ref_begin_;  // size() + 1 offsets into refs_
  std::vector<Slot> slots_;          // open addressing, linear probing, a power of two >= 2 x ports
  uint64_t mask_ = 0;
};

}  // namespace netdiag::topology
