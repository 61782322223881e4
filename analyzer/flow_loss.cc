#include "analyzer/flow_loss.h"

namespace netdiag::analyzer {

namespace {

// The flow's identity at one end: the far port, the flow id, and which end
// probed (the same 5-tuple probed from either end is two flows).
uint64_t flowKey(topology::PortId far, uint64_t flow, bool as_source) {
  uint64_t h = flow * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t{far} << 1 | (as_source ? 1 : 0)) + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

void FlowLoss::track(topology::PortId p, double now) {
  auto it = ports_.find(p);
  if (it == ports_.end()) {
    if (ports_.size() >= kMaxPorts) return;
    it = ports_.emplace(p, Port{}).first;
  }
  it->second.asked = now;
}

void FlowLoss::add(const telemetry::ProbeRecord& r) {
  if (ports_.empty() || r.sent == 0) return;
  if (auto it = ports_.find(r.src); it != ports_.end()) {
    addTo(it->second, flowKey(r.dst, r.flow, true), r, true);
  }
  if (auto it = ports_.find(r.dst); it != ports_.end()) {
    addTo(it->second, flowKey(r.src, r.flow, false), r, false);
  }
}

// The probes leave the source by its uplink and reach the destination by
// its downlink; the replies the other way. A round trip crossed both.
void FlowLoss::addTo(Port& port, uint64_t key, const telemetry::ProbeRecord& r, bool as_source) {
  auto it = port.flows.find(key);
  if (it == port.flows.end()) {
    if (port.flows.size() >= kMaxFlowsPerPort) return;
    it = port.flows.emplace(key, PerFlow{}).first;
  }
  PerFlow& f = it->second;
  if (!r.hasOneWay()) {
    for (Flow* d : {&f.out, &f.in}) d->n2 += r.sent, d->k2 += r.lost;
    return;
  }
  const double sent = r.sent, fwd = *r.lost_fwd, rev = *r.lost_rev;
  Flow& forward = as_source ? f.out : f.in;
  Flow& reply = as_source ? f.in : f.out;
  forward.n1 += sent, forward.k1 += fwd;
  reply.n1 += sent - fwd, reply.k1 += rev;
}

void FlowLoss::expire(double now, double idle_s) {
  std::erase_if(ports_, [&](const auto& kv) { return kv.second.asked < now - idle_s; });
}

std::vector<FlowLoss::Flow> FlowLoss::flows(topology::PortId p, bool out) const {
  std::vector<Flow> result;
  const auto it = ports_.find(p);
  if (it == ports_.end()) return result;
  for (const auto& [key, f] : it->second.flows) {
    const Flow& d = out ? f.out : f.in;
    if (d.n1 + d.n2 > 0) result.push_back(d);
  }
  return result;
}

}  // namespace netdiag::analyzer
