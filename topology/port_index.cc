#include "topology/port_index.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace netdiag::topology {
namespace {

constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;

uint64_t mix(uint64_t x) {
  x *= kMul;
  return x ^ (x >> 32);
}

}  // namespace

uint64_t PortIndex::hash(std::string_view s) {
  // Eight bytes at a time: references are 10 to 30 bytes, so two to four
  // multiplies. Not for hostile key sets; the keys are the topology's.
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = mix(n + kMul);
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = mix(h ^ w);
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = mix(h ^ w);
  }
  return mix(h ^ (h >> 29));
}

PortIndex::PortIndex(const Topology& topo) {
  const size_t n = topo.portCount();
  entries_.resize(n);
  ref_begin_.resize(n + 1);
  size_t bytes = 0;
  for (const Port& p : topo.ports()) bytes += topo.node(p.node).name.size() + 1 + p.name.size();
  if (bytes > std::numeric_limits<uint32_t>::max()) {
    throw std::length_error("PortIndex: port references exceed 4 GiB");
  }
  refs_.reserve(bytes);
  for (PortId id = 0; id < n; ++id) {
    const Port& p = topo.port(id);
    ref_begin_[id] = static_cast<uint32_t>(refs_.size());
    refs_ += topo.node(p.node).name;
    refs_ += ':';
    refs_ += p.name;
    ref_begin_[id + 1] = static_cast<uint32_t>(refs_.size());
    const std::string_view r = ref(id);
    const DirLinkId e = topo.egressOf(id);
    Entry& entry = entries_[id];
    entry = Entry{
        p.node, e, e == kNone ? kNone : topo.dirDstPort(e), static_cast<uint32_t>(r.size()), {}};
    std::memcpy(entry.head, r.data(), std::min(r.size(), kHead));
  }
  slots_.resize(std::bit_ceil(std::max<size_t>(2, 2 * n)));
  mask_ = slots_.size() - 1;
  for (PortId id = 0; id < n; ++id) {
    const uint64_t h = hash(ref(id));
    size_t i = h & mask_;
    while (slots_[i].id != kNone) i = (i + 1) & mask_;
    slots_[i] = {static_cast<uint32_t>(h >> 32), id};
  }
}

PortId PortIndex::find(std::string_view r) const {
  const uint64_t h = hash(r);
  const auto tag = static_cast<uint32_t>(h >> 32);
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.id == kNone) return kNone;
    if (s.tag == tag && is(s.id, r)) return s.id;
  }
}

}  // namespace netdiag::topology
