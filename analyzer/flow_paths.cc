#include "analyzer/flow_paths.h"

#include <algorithm>

namespace netdiag::analyzer {

using topology::DirLinkId;
using topology::kNone;

FlowPaths::FlowPaths(const topology::Topology& topo) : topo_(topo) {}

Middle FlowPaths::accessOnly(topology::PortId src, topology::PortId dst,
                             std::vector<DirLinkId>& out) const {
  out.clear();
  DirLinkId first = topo_.egressOf(src), last = topo_.ingressOf(dst);
  if (first != kNone) out.push_back(first);
  if (last != kNone && last != first) out.push_back(last);
  Middle m;
  if (first != kNone && last != kNone && first != topology::Topology::reverse(last)) {
    m.from = topo_.dirDstNode(first);
    m.to = topo_.dirSrcNode(last);
  }
  return m;
}

Middle FlowPaths::forwardLinks(const telemetry::ProbeRecord& r, std::vector<DirLinkId>& out) {
  Key key{r.src, r.dst, r.flow};
  if (!r.path.empty() && !r.path_partial) {
    out = r.path;
    cache_[key] = r.path;
    return {};
  }
  auto it = cache_.find(key);
  if (!r.path.empty()) {
    // A prefix: the cached path extends it when they agree.
    if (it != cache_.end() && it->second.size() >= r.path.size() &&
        std::equal(r.path.begin(), r.path.end(), it->second.begin())) {
      out = it->second;
      return {};
    }
    if (it != cache_.end()) cache_.erase(it);
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
  if (it != cache_.end()) {
    out = it->second;
    std::vector<DirLinkId> access;
    Middle m = accessOnly(r.src, r.dst, access);
    m.cached = true;
    return m;
  }
  return accessOnly(r.src, r.dst, out);
}

Middle FlowPaths::reverseLinks(const telemetry::ProbeRecord& r, std::vector<DirLinkId>& out) const {
  if (!r.reply_path.empty()) {
    out = r.reply_path;
    return {};
  }
  return accessOnly(r.dst, r.src, out);
}

}  // namespace netdiag::analyzer
