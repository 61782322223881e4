#include "proto/convert.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace netdiag::proto {

using topology::DirLinkId;
using topology::kNone;
using topology::PortId;

uint64_t topologyFingerprint(const topology::Topology& topo) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64-bit
  auto add = [&h](std::string_view bytes) {
    for (unsigned char c : bytes) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  auto add_number = [&add](uint64_t v) {
    char buf[8];
    std::memcpy(buf, &v, sizeof buf);
    add({buf, sizeof buf});
  };
  add_number(topo.portCount());
  for (PortId p = 0; p < topo.portCount(); ++p) {
    add(topo.portRef(p));
    add({"", 1});
  }
  add_number(topo.linkCount());
  for (topology::LinkId l = 0; l < topo.linkCount(); ++l) {
    add_number(topo.link(l).a);
    add_number(topo.link(l).b);
  }
  return h == 0 ? 1 : h;
}

Resolver::Resolver(const topology::Topology& topo)
    : topo_(topo), fingerprint_(topologyFingerprint(topo)) {
  entries_.resize(topo.portCount());
  std::vector<std::pair<std::string, PortId>> names, addrs;
  names.reserve(topo.portCount());
  for (PortId p = 0; p < topo.portCount(); ++p) {
    PortEntry& e = entries_[p];
    e.port = p;
    e.node = topo.port(p).node;
    e.ingress = topo.ingressOf(p);
    if (e.ingress != kNone) {
      e.ingress_from = topo.dirSrcNode(e.ingress);
      e.ingress_from_port = topo.dirSrcPort(e.ingress);
    }
    names.emplace_back(topo.portRef(p), p);
    const std::string& addr = topo.port(p).addr;
    if (!addr.empty()) addrs.emplace_back(addr.substr(0, addr.find('/')), p);
  }
  names_.build(names);
  addrs_.build(addrs);
}

namespace {

uint64_t keyHash(std::string_view key) { return std::hash<std::string_view>{}(key); }

}  // namespace

std::string_view Resolver::Table::keyOf(const Slot& s) const {
  if (s.size <= kInline) return {s.key, s.size};
  uint32_t offset = 0;
  std::memcpy(&offset, s.key, sizeof offset);
  return {long_keys_.data() + offset, s.size};
}

void Resolver::Table::build(const std::vector<std::pair<std::string, PortId>>& keys) {
  size_t size = 16;
  while (size < 2 * keys.size()) size *= 2;
  slots_.assign(size, Slot{});
  mask_ = size - 1;
  long_keys_.clear();
  for (const auto& [key, port] : keys) {
    const uint64_t h = keyHash(key);
    uint64_t i = h & mask_;
    bool present = false;  // the first of equal keys wins, as emplace() would
    for (; slots_[i].port != kNone; i = (i + 1) & mask_) {
      present |= slots_[i].hash == h && keyOf(slots_[i]) == key;
    }
    if (present) continue;
    Slot& s = slots_[i];
    s.hash = h;
    s.size = static_cast<uint32_t>(key.size());
    s.port = port;
    if (key.size() <= kInline) {
      std::memcpy(s.key, key.data(), key.size());
    } else {
      const auto offset = static_cast<uint32_t>(long_keys_.size());
      std::memcpy(s.key, &offset, sizeof offset);
      long_keys_ += key;
    }
  }
}

const Resolver::PortEntry* Resolver::Table::find(std::string_view key,
                                                 const std::vector<PortEntry>& entries) const {
  if (slots_.empty()) return nullptr;
  const uint64_t h = keyHash(key);
  for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.port == kNone) return nullptr;
    if (s.hash == h && s.size == key.size() && keyOf(s) == key) return &entries[s.port];
  }
}

PortId Resolver::port(std::string_view name) const {
  const PortEntry* e = entry(name);
  return e ? e->port : kNone;
}

PortId Resolver::portByAddr(std::string_view addr) const {
  const PortEntry* e = entryByAddr(addr);
  return e ? e->port : kNone;
}

namespace {

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// How a hop is named in a message.
std::string shownHop(const std::string& name) { return quoted(name); }
std::string shownHop(uint32_t id) { return "port id " + std::to_string(id); }

// Ingress ports of every hop -> directed links; each must continue the
// chain that starts at `from`, and a complete path must end at `to`.
template <typename Hops, typename Lookup>
std::string toDirLinks(const Hops& hops, Lookup lookup, const Resolver& resolver, PortId from,
                       PortId to, bool partial, std::vector<DirLinkId>& out) {
  out.clear();
  if (hops.empty()) return {};
  const topology::Topology& topo = resolver.topology();
  out.reserve(static_cast<size_t>(hops.size()));
  topology::NodeId at = resolver.entryOf(from).node;
  PortId last = kNone;
  for (int i = 0; i < hops.size(); ++i) {
    const Resolver::PortEntry* in = lookup(hops[i]);
    // Built only for a message: this runs for every hop of every record.
    auto where = [&] { return "hop " + std::to_string(i) + " " + shownHop(hops[i]); };
    if (in == nullptr) return where() + " is not a port of the topology";
    const DirLinkId d = in->ingress;
    if (d == kNone) return where() + " has no link";
    if (in->ingress_from != at) {
      return where() + " is not one hop from " + quoted(topo.node(at).name);
    }
    if (i == 0 && in->ingress_from_port != from) {
      return where() + " is not reached from " + quoted(topo.portRef(from));
    }
    out.push_back(d);
    at = in->node;
    last = in->port;
  }
  if (!partial && last != to) {
    return "path ends at " + shownHop(hops[hops.size() - 1]) + ", not at " +
           quoted(topo.portRef(to));
  }
  return {};
}

template <typename Message>
void appendHops(const topology::Topology& topo, const std::vector<DirLinkId>& path, Message* out) {
  for (DirLinkId d : path) out->Add(topo.portRef(topo.dirDstPort(d)));
}

void appendHopIds(const topology::Topology& topo, const std::vector<DirLinkId>& path,
                  google::protobuf::RepeatedField<uint32_t>* out) {
  out->Reserve(static_cast<int>(path.size()));
  for (DirLinkId d : path) out->AddAlreadyReserved(topo.dirDstPort(d) + 1);
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Whether a batch's port ids may be used, and what to say when they may not.
struct IdScope {
  const Resolver& resolver;
  uint64_t batch_fingerprint = 0;
  bool valid() const { return batch_fingerprint == resolver.fingerprint(); }
  std::string unusable(const std::string& what) const {
    return what + " is given only as a port id, under topology fingerprint " +
           hex(batch_fingerprint) + ", not this analyzer's " + hex(resolver.fingerprint()) +
           " (send names)";
  }
};

// One port of a record (`what`: "src ", "dst " or ""), by id under a
// matching fingerprint, else by name. Sets `mismatch` when an id had to be
// passed over.
std::string resolvePort(const IdScope& ids, uint32_t id, const std::string& name, const char* what,
                        PortId& out, bool& mismatch) {
  if (id != 0) {
    if (ids.valid()) {
      const Resolver::PortEntry* e = ids.resolver.entryById(id);
      if (e == nullptr) return std::string("unknown ") + what + "port id " + std::to_string(id);
      out = e->port;
      return {};
    }
    mismatch = true;
    if (name.empty()) return ids.unusable(std::string(what) + "port");
  }
  out = ids.resolver.port(name);
  if (out == kNone) return std::string("unknown ") + what + "port " + quoted(name);
  return {};
}

// Returns why the record is rejected (empty: accepted); `warning` says what
// of an accepted record was left out.
std::string probeError(const v1::Probe& m, const IdScope& ids, telemetry::ProbeRecord& r,
                       std::string& warning, bool& mismatch) {
  warning.clear();
  const Resolver& resolver = ids.resolver;
  if (!std::isfinite(m.t())) return "'t' is not a finite number";
  r.t = m.t();
  if (auto e = resolvePort(ids, m.src_id(), m.src(), "src ", r.src, mismatch); !e.empty()) return e;
  if (auto e = resolvePort(ids, m.dst_id(), m.dst(), "dst ", r.dst, mismatch); !e.empty()) return e;
  r.flow = m.flow();
  r.window_s = m.window_s() == 0 ? telemetry::kDefaultWindowS : m.window_s();
  if (!(r.window_s > 0) || !std::isfinite(r.window_s)) return "'window_s' must be positive";
  if (m.lost() > m.sent()) return "'lost' > 'sent'";
  r.sent = m.sent();
  r.lost = m.lost();
  r.lost_fwd.reset();
  r.lost_rev.reset();
  if (m.has_lost_fwd()) r.lost_fwd = m.lost_fwd();
  if (m.has_lost_rev()) r.lost_rev = m.lost_rev();
  if (r.hasOneWay() && uint64_t{*r.lost_fwd} + *r.lost_rev != r.lost) {
    return "'lost_fwd' + 'lost_rev' != 'lost'";
  }
  if (r.lost_fwd.value_or(0) > r.lost || r.lost_rev.value_or(0) > r.lost) {
    return "a one-way loss exceeds 'lost'";
  }
  r.rtt_us_p50 = m.has_rtt_us_p50() ? m.rtt_us_p50() : NAN;
  r.rtt_us_p99 = m.has_rtt_us_p99() ? m.rtt_us_p99() : NAN;
  if (r.rtt_us_p50 < 0 || r.rtt_us_p99 < 0) return "an RTT is negative";
  r.path_partial = m.path_partial();
  const auto by_name = [&](const std::string& s) { return resolver.entry(s); };
  const auto by_id = [&](uint32_t id) { return resolver.entryById(id); };
  // Each path by its ids under a matching fingerprint, else by names (or,
  // forward, addresses); one given only by foreign ids is left out.
  std::string err;
  if (!m.path_ids().empty() && ids.valid()) {
    err = toDirLinks(m.path_ids(), by_id, resolver, r.src, r.dst, r.path_partial, r.path);
  } else {
    mismatch |= !m.path_ids().empty();
    if (!m.path().empty()) {
      err = toDirLinks(m.path(), by_name, resolver, r.src, r.dst, r.path_partial, r.path);
    } else if (m.path_addrs().empty() && !m.path_ids().empty()) {
      err = ids.unusable("the path");
    } else {
      err = toDirLinks(
          m.path_addrs(), [&](const std::string& s) { return resolver.entryByAddr(s); }, resolver,
          r.src, r.dst, r.path_partial, r.path);
    }
  }
  // A path that does not map onto the topology (a hop answering from an
  // address the file does not list) costs the path, never the counts.
  if (!err.empty()) {
    r.path.clear();
    r.path_partial = false;
    warning = "path ignored, record kept without it: " + err;
  }
  if (!m.reply_path_ids().empty() && ids.valid()) {
    err = toDirLinks(m.reply_path_ids(), by_id, resolver, r.dst, r.src, false, r.reply_path);
  } else {
    mismatch |= !m.reply_path_ids().empty();
    err = m.reply_path().empty() && !m.reply_path_ids().empty()
              ? ids.unusable("the reply path")
              : toDirLinks(m.reply_path(), by_name, resolver, r.dst, r.src, false, r.reply_path);
  }
  if (!err.empty()) {
    r.reply_path.clear();
    warning += (warning.empty() ? "" : "; ") + std::string("reply_path ignored: ") + err;
  }
  return {};
}

std::string portError(const v1::PortCounters& m, const IdScope& ids, telemetry::PortRecord& r,
                      bool& mismatch) {
  if (!std::isfinite(m.t())) return "'t' is not a finite number";
  r = {};
  r.t = m.t();
  if (auto e = resolvePort(ids, m.port_id(), m.port(), "", r.port, mismatch); !e.empty()) {
    return e;
  }
  if (m.has_oper_up()) r.oper_up = m.oper_up();
  if (m.has_rx_packets()) r.rx_packets = m.rx_packets();
  if (m.has_tx_packets()) r.tx_packets = m.tx_packets();
  if (m.has_rx_errors()) r.rx_errors = m.rx_errors();
  if (m.has_rx_crc_errors()) r.rx_crc_errors = m.rx_crc_errors();
  if (m.has_rx_drops()) r.rx_drops = m.rx_drops();
  if (m.has_tx_drops()) r.tx_drops = m.tx_drops();
  if (m.has_fec_uncorrectable()) r.fec_uncorrectable = m.fec_uncorrectable();
  if (m.has_carrier_changes()) r.carrier_changes = m.carrier_changes();
  return {};
}

std::string lldpError(const v1::LldpNeighbor& m, const Resolver& resolver,
                      telemetry::LldpRecord& r) {
  if (!std::isfinite(m.t())) return "'t' is not a finite number";
  r.t = m.t();
  r.port = resolver.port(m.port());
  if (r.port == kNone) return "unknown port " + quoted(m.port());
  if (m.neighbor().empty()) return "empty 'neighbor'";
  r.neighbor = m.neighbor();
  return {};
}

}  // namespace

std::vector<std::string> decode(const v1::Batch& batch, const Resolver& resolver, Decoded& out,
                                std::vector<std::string>* warnings) {
  std::vector<std::string> errors;
  const IdScope ids{resolver, batch.topology()};
  out.probes.reserve(out.probes.size() + static_cast<size_t>(batch.probes_size()));
  std::string warning;
  for (int i = 0; i < batch.probes_size(); ++i) {
    if (ids.valid() && i + 1 < batch.probes_size()) {
      // The next record's ports start loading while this one is checked.
      const v1::Probe& next = batch.probes(i + 1);
      resolver.prefetchId(next.src_id());
      resolver.prefetchId(next.dst_id());
      for (uint32_t id : next.path_ids()) resolver.prefetchId(id);
      for (uint32_t id : next.reply_path_ids()) resolver.prefetchId(id);
    }
    // Built in place: the record's paths are never copied.
    telemetry::ProbeRecord& probe = out.probes.emplace_back();
    bool mismatch = false;
    std::string err = probeError(batch.probes(i), ids, probe, warning, mismatch);
    out.id_mismatch += mismatch;
    if (!err.empty()) {
      out.probes.pop_back();
      errors.push_back("probes[" + std::to_string(i) + "]: " + err);
    }
    if (!warning.empty() && warnings) {
      warnings->push_back("probes[" + std::to_string(i) + "]: " + warning);
    }
  }
  out.ports.reserve(out.ports.size() + static_cast<size_t>(batch.ports_size()));
  for (int i = 0; i < batch.ports_size(); ++i) {
    telemetry::PortRecord& port = out.ports.emplace_back();
    bool mismatch = false;
    std::string err = portError(batch.ports(i), ids, port, mismatch);
    out.id_mismatch += mismatch;
    if (!err.empty()) {
      out.ports.pop_back();
      errors.push_back("ports[" + std::to_string(i) + "]: " + err);
    }
  }
  out.lldp.reserve(out.lldp.size() + static_cast<size_t>(batch.lldp_size()));
  for (int i = 0; i < batch.lldp_size(); ++i) {
    telemetry::LldpRecord& lldp = out.lldp.emplace_back();
    std::string err = lldpError(batch.lldp(i), resolver, lldp);
    if (!err.empty()) {
      out.lldp.pop_back();
      errors.push_back("lldp[" + std::to_string(i) + "]: " + err);
    }
  }
  return errors;
}

std::vector<std::string> deliver(const v1::Batch& batch, const Resolver& resolver,
                                 telemetry::RecordSink& sink, std::vector<std::string>* warnings) {
  Decoded d;
  std::vector<std::string> errors = decode(batch, resolver, d, warnings);
  for (const auto& r : d.probes) sink.onProbe(r);
  for (const auto& r : d.ports) sink.onPort(r);
  for (const auto& r : d.lldp) sink.onLldp(r);
  return errors;
}

void toWire(const topology::Topology& topo, const telemetry::ProbeRecord& r, v1::Probe& out,
            bool ids) {
  out.Clear();
  out.set_t(r.t);
  if (ids) {
    out.set_src_id(r.src + 1);
    out.set_dst_id(r.dst + 1);
  } else {
    out.set_src(topo.portRef(r.src));
    out.set_dst(topo.portRef(r.dst));
  }
  out.set_flow(r.flow);
  out.set_window_s(r.window_s);
  out.set_sent(r.sent);
  out.set_lost(r.lost);
  if (r.lost_fwd) out.set_lost_fwd(*r.lost_fwd);
  if (r.lost_rev) out.set_lost_rev(*r.lost_rev);
  if (!std::isnan(r.rtt_us_p50)) out.set_rtt_us_p50(r.rtt_us_p50);
  if (!std::isnan(r.rtt_us_p99)) out.set_rtt_us_p99(r.rtt_us_p99);
  out.set_path_partial(r.path_partial);
  if (ids) {
    appendHopIds(topo, r.path, out.mutable_path_ids());
    appendHopIds(topo, r.reply_path, out.mutable_reply_path_ids());
  } else {
    appendHops(topo, r.path, out.mutable_path());
    appendHops(topo, r.reply_path, out.mutable_reply_path());
  }
}

void toWire(const topology::Topology& topo, const telemetry::PortRecord& r, v1::PortCounters& out,
            bool ids) {
  out.Clear();
  out.set_t(r.t);
  if (ids) {
    out.set_port_id(r.port + 1);
  } else {
    out.set_port(topo.portRef(r.port));
  }
  if (r.oper_up) out.set_oper_up(*r.oper_up);
  if (r.rx_packets) out.set_rx_packets(*r.rx_packets);
  if (r.tx_packets) out.set_tx_packets(*r.tx_packets);
  if (r.rx_errors) out.set_rx_errors(*r.rx_errors);
  if (r.rx_crc_errors) out.set_rx_crc_errors(*r.rx_crc_errors);
  if (r.rx_drops) out.set_rx_drops(*r.rx_drops);
  if (r.tx_drops) out.set_tx_drops(*r.tx_drops);
  if (r.fec_uncorrectable) out.set_fec_uncorrectable(*r.fec_uncorrectable);
  if (r.carrier_changes) out.set_carrier_changes(*r.carrier_changes);
}

void toWire(const topology::Topology& topo, const telemetry::LldpRecord& r, v1::LldpNeighbor& out) {
  out.Clear();
  out.set_t(r.t);
  out.set_port(topo.portRef(r.port));
  out.set_neighbor(r.neighbor);
}

namespace {

std::string bareAddr(const std::string& addr) { return addr.substr(0, addr.find('/')); }

// Adds the flows of `plan` towards nodes `want` accepts to `out`, then sorts.
template <typename Want>
void collectInbound(const topology::Topology& topo, const planner::Plan& plan, Want want,
                    std::vector<Inbound>& out) {
  for (const planner::PortPlan& pp : plan.ports) {
    const std::string src_addr = bareAddr(topo.port(pp.src).addr);
    for (const planner::Flow& f : pp.flows) {
      const topology::NodeId to = topo.port(f.dst).node;
      if (!want(to) || topo.port(f.dst).addr.empty()) continue;
      Inbound& in = out[to];
      ++in.flows;
      in.probes_per_second += pp.probes_per_second_per_flow;
      if (src_addr.empty()) {
        in.complete = false;
      } else if (in.addrs.empty() || in.addrs.back() != src_addr) {
        in.addrs.push_back(src_addr);  // a port's flows to one node are adjacent
      }
    }
  }
  for (Inbound& in : out) {
    std::sort(in.addrs.begin(), in.addrs.end());
    in.addrs.erase(std::unique(in.addrs.begin(), in.addrs.end()), in.addrs.end());
  }
}

}  // namespace

std::vector<Inbound> inboundByNode(const topology::Topology& topo, const planner::Plan& plan) {
  std::vector<Inbound> out(topo.nodeCount());
  collectInbound(
      topo, plan, [](topology::NodeId) { return true; }, out);
  return out;
}

v1::AgentPlan agentPlan(const topology::Topology& topo, const planner::Plan& plan,
                        topology::NodeId node, uint32_t responder_port, uint32_t dscp,
                        const Inbound* inbound) {
  std::vector<Inbound> own;
  if (!inbound) {
    own.resize(topo.nodeCount());
    collectInbound(
        topo, plan, [node](topology::NodeId n) { return n == node; }, own);
    inbound = &own[node];
  }
  v1::AgentPlan out;
  if (inbound->complete) {
    for (const std::string& a : inbound->addrs) out.add_probed_by_addrs(a);
    out.set_probed_by_known(true);
  }
  out.set_inbound_probes_per_second(inbound->probes_per_second);
  out.set_version(plan.version);
  out.set_window_s(plan.budget.window_s);
  out.set_responder_port(responder_port);
  out.set_dscp(dscp);
  for (PortId p : topo.portsOf(node)) out.add_monitored_ports(topo.portRef(p));
  for (const planner::PortPlan& pp : plan.ports) {
    if (topo.port(pp.src).node != node) continue;
    out.set_probes_per_second_per_flow(pp.probes_per_second_per_flow);
    const std::string& src_addr = topo.port(pp.src).addr;
    for (const planner::Flow& f : pp.flows) {
      v1::ProbeFlow* flow = out.add_flows();
      flow->set_src(topo.portRef(pp.src));
      flow->set_src_addr(src_addr.substr(0, src_addr.find('/')));
      flow->set_dst(topo.portRef(f.dst));
      const std::string& dst_addr = topo.port(f.dst).addr;
      flow->set_dst_addr(dst_addr.substr(0, dst_addr.find('/')));
      flow->set_source_port(f.source_port);
    }
  }
  return out;
}

}  // namespace netdiag::proto
