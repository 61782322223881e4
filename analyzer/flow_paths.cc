#include "analyzer/flow_paths.h"

#include <algorithm>
#include <bit>

namespace netdiag::analyzer {

using topology::DirLinkId;
using topology::kNone;
using topology::PortId;

namespace {

__extension__ typedef unsigned __int128 U128;

constexpr uint64_t kLow56 = (uint64_t{1} << 56) - 1;
constexpr size_t kMinCapacity = 16;

}  // namespace

FlowPaths::FlowPaths(const topology::Topology& topo) : topo_(topo) {
  const uint64_t links = std::max<uint64_t>(topo.dirLinkCount(), 2);
  id_bits_ = static_cast<unsigned>(std::bit_width(links - 1));
  max_inline_ = std::min<unsigned>(kPathBits / id_bits_, kSpill - 1);
  id_mask_ = (uint64_t{1} << id_bits_) - 1;
  rehash(kMinCapacity);
}

void FlowPaths::reserve(size_t flows) {
  // At most 3/4 full.
  size_t want = std::bit_ceil(std::max(kMinCapacity, flows + flows / 3 + 1));
  if (want > slots_.size()) rehash(want);
}

size_t FlowPaths::home(PortId src, PortId dst, uint64_t flow) const {
  uint64_t h = (static_cast<uint64_t>(src) << 32 | dst) * 0x9e3779b97f4a7c15ull;
  h ^= flow * 0xc2b2ae3d27d4eb4full;
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return static_cast<size_t>(h >> shift_);
}

FlowPaths::Slot* FlowPaths::find(PortId src, PortId dst, uint64_t flow) {
  for (size_t i = home(src, dst, flow);; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (tagOf(s) == 0) return nullptr;
    if (s.flow == flow && s.src == src && s.dst == dst) return &s;
  }
}

void FlowPaths::rehash(size_t capacity) {
  decltype(slots_) old(capacity, Slot{0, 0, 0, 0, 0});
  old.swap(slots_);
  mask_ = capacity - 1;
  shift_ = 64 - static_cast<unsigned>(std::countr_zero(capacity));
  for (const Slot& s : old) {
    if (tagOf(s) == 0) continue;
    size_t i = home(s.src, s.dst, s.flow);
    while (tagOf(slots_[i]) != 0) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

bool FlowPaths::fitsInline(const std::vector<DirLinkId>& path) const {
  if (path.size() > max_inline_) return false;
  for (DirLinkId d : path) {
    if (d > id_mask_) return false;
  }
  return true;
}

void FlowPaths::setPath(Slot& s, const std::vector<DirLinkId>& path) {
  const bool was_spilled = tagOf(s) == kSpill;
  if (fitsInline(path)) {
    if (was_spilled) {
      std::vector<DirLinkId>().swap(spill_[s.lo]);
      spill_free_.push_back(s.lo);
    }
    U128 bits = 0;
    unsigned shift = 0;
    for (DirLinkId d : path) {
      bits |= static_cast<U128>(d) << shift;
      shift += id_bits_;
    }
    const uint64_t lo = static_cast<uint64_t>(bits);
    const uint64_t hi =
        (static_cast<uint64_t>(bits >> 64) & kLow56) | static_cast<uint64_t>(path.size()) << 56;
    // Rediscovering the same path is the rule: leave the line clean then.
    if (s.lo != lo || s.hi != hi) {
      s.lo = lo;
      s.hi = hi;
    }
    return;
  }
  if (!was_spilled) {
    if (spill_free_.empty()) {
      s.lo = spill_.size();
      spill_.emplace_back();
    } else {
      s.lo = spill_free_.back();
      spill_free_.pop_back();
    }
    s.hi = kSpill << 56;
  }
  spill_[s.lo] = path;
}

size_t FlowPaths::pathSize(const Slot& s) const {
  uint64_t tag = tagOf(s);
  return tag == kSpill ? spill_[s.lo].size() : static_cast<size_t>(tag);
}

void FlowPaths::getPath(const Slot& s, std::vector<DirLinkId>& out) const {
  const uint64_t tag = tagOf(s);
  if (tag == kSpill) {
    out = spill_[s.lo];
    return;
  }
  out.resize(tag);
  U128 bits = static_cast<U128>(s.hi & kLow56) << 64 | s.lo;
  for (size_t i = 0; i < tag; ++i) {
    out[i] = static_cast<DirLinkId>(static_cast<uint64_t>(bits) & id_mask_);
    bits >>= id_bits_;
  }
}

bool FlowPaths::hasPrefix(const Slot& s, const std::vector<DirLinkId>& prefix) const {
  const uint64_t tag = tagOf(s);
  if (tag == kSpill) {
    const auto& p = spill_[s.lo];
    return p.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), p.begin());
  }
  if (tag < prefix.size()) return false;
  U128 bits = static_cast<U128>(s.hi & kLow56) << 64 | s.lo;
  for (DirLinkId d : prefix) {
    if (d != (static_cast<uint64_t>(bits) & id_mask_)) return false;
    bits >>= id_bits_;
  }
  return true;
}

void FlowPaths::store(PortId src, PortId dst, uint64_t flow, const std::vector<DirLinkId>& path) {
  if ((size_ + 1) * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
  size_t i = home(src, dst, flow);
  for (;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (tagOf(s) == 0) break;
    if (s.flow == flow && s.src == src && s.dst == dst) {
      setPath(s, path);
      return;
    }
  }
  Slot& s = slots_[i];
  s.flow = flow;
  s.src = src;
  s.dst = dst;
  setPath(s, path);
  ++size_;
}

void FlowPaths::erase(Slot* s) {
  if (tagOf(*s) == kSpill) {
    std::vector<DirLinkId>().swap(spill_[s->lo]);
    spill_free_.push_back(s->lo);
  }
  // Backward-shift deletion: pull later entries of the run into the hole
  // when the hole lies between their home and where they sit.
  size_t i = static_cast<size_t>(s - slots_.data());
  for (size_t j = (i + 1) & mask_; tagOf(slots_[j]) != 0; j = (j + 1) & mask_) {
    const Slot& t = slots_[j];
    size_t h = home(t.src, t.dst, t.flow);
    if (((j - h) & mask_) >= ((j - i) & mask_)) {
      slots_[i] = t;
      i = j;
    }
  }
  slots_[i] = Slot{0, 0, 0, 0, 0};
  --size_;
}

Middle FlowPaths::accessMiddle(PortId src, PortId dst) const {
  DirLinkId first = topo_.egressOf(src), last = topo_.ingressOf(dst);
  Middle m;
  if (first != kNone && last != kNone && first != topology::Topology::reverse(last)) {
    m.from = topo_.dirDstNode(first);
    m.to = topo_.dirSrcNode(last);
  }
  return m;
}

Middle FlowPaths::accessOnly(PortId src, PortId dst, std::vector<DirLinkId>& out) const {
  out.clear();
  DirLinkId first = topo_.egressOf(src), last = topo_.ingressOf(dst);
  if (first != kNone) out.push_back(first);
  if (last != kNone && last != first) out.push_back(last);
  return accessMiddle(src, dst);
}

Middle FlowPaths::forwardLinks(const telemetry::ProbeRecord& r, std::vector<DirLinkId>& out) {
  if (!r.path.empty() && !r.path_partial) {
    out = r.path;
    store(r.src, r.dst, r.flow, r.path);
    return {};
  }
  Slot* s = find(r.src, r.dst, r.flow);
  if (!r.path.empty()) {
    // A prefix: the cached path extends it when they agree.
    if (s != nullptr && hasPrefix(*s, r.path)) {
      getPath(*s, out);
      return {};
    }
    if (s != nullptr) erase(s);
    out = r.path;
    Middle m;
    DirLinkId last = topo_.ingressOf(r.dst);
    if (last != kNone && std::find(out.begin(), out.end(), last) == out.end()) {
      m.from = topo_.dirDstNode(out.back());
      m.to = topo_.dirSrcNode(last);
      out.push_back(last);
    }
    return m;
  }
  if (s != nullptr) {
    getPath(*s, out);
    Middle m = accessMiddle(r.src, r.dst);
    m.cached = true;
    return m;
  }
  return accessOnly(r.src, r.dst, out);
}

Middle FlowPaths::reverseLinks(const telemetry::ProbeRecord& r, std::vector<DirLinkId>& out) {
  // The replies' path, under its own key: the reverse 5-tuple hashes on
  // its own. A window that lost every reply discovers none, and forgetting
  // the path there would hide exactly the losses of a link on it.
  const uint64_t key = r.flow ^ kReplyFlow;
  if (!r.reply_path.empty()) {
    out = r.reply_path;
    store(r.dst, r.src, key, r.reply_path);
    return {};
  }
  if (Slot* s = find(r.dst, r.src, key); s != nullptr) {
    getPath(*s, out);
    Middle m = accessMiddle(r.dst, r.src);
    m.cached = true;
    return m;
  }
  return accessOnly(r.dst, r.src, out);
}

}  // namespace netdiag::analyzer
