#pragma once

// Shared helpers of the analyzer tests: records as one variant type, a tiny
// leaf-spine fabric with hand-picked paths, a probe mesh that turns "these
// directed links lose x %" into probe records the way agents would report
// them, a driver that feeds an Engine, and checks of the report contract
// (formats.md §3).

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analyzer/engine.h"
#include "analyzer/incident.h"
#include "sim/score.h"
#include "telemetry/record.h"
#include "topology/generators.h"
#include "topology/model.h"

namespace netdiag::analyzer::testing {

using telemetry::LldpRecord;
using telemetry::PortRecord;
using telemetry::ProbeRecord;
using topology::DirLinkId;
using topology::kNone;
using topology::NodeId;
using topology::PortId;
using topology::Topology;

using Record = std::variant<ProbeRecord, PortRecord, LldpRecord>;

inline double timeOf(const Record& r) {
  return std::visit([](const auto& x) { return x.t; }, r);
}

// Collects a run's records in arrival order.
struct Recorder : telemetry::RecordSink {
  std::vector<Record> records;
  void onProbe(const ProbeRecord& r) override { records.emplace_back(r); }
  void onPort(const PortRecord& r) override { records.emplace_back(r); }
  void onLldp(const LldpRecord& r) override { records.emplace_back(r); }
};

inline void feed(telemetry::RecordSink& sink, const std::vector<Record>& records) {
  for (const Record& r : records) {
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, ProbeRecord>) {
            sink.onProbe(x);
          } else if constexpr (std::is_same_v<T, PortRecord>) {
            sink.onPort(x);
          } else {
            sink.onLldp(x);
          }
        },
        r);
  }
}

inline Report runEngine(const Topology& topo, const std::vector<Record>& records,
                        EngineConfig config = {}) {
  Engine engine(topo, config);
  feed(engine, records);
  engine.finish();
  return engine.report();
}

inline std::vector<Incident> localized(const Report& r) {
  std::vector<Incident> out;
  for (const Incident& i : r.incidents) {
    if (i.localized_at) out.push_back(i);
  }
  return out;
}

inline std::string describe(const Topology& topo, const Report& r) {
  return reportToJson(topo, r).dump(1);
}

// Checks every incident against formats.md §3: fields, types, ranges.
inline void expectContract(const Topology& topo, const Report& report) {
  using nlohmann::json;
  json j = reportToJson(topo, report);
  ASSERT_TRUE(j.contains("generated_at") && j["generated_at"].is_number());
  ASSERT_TRUE(j["incidents"].is_array());
  std::set<std::string> ids;
  for (const json& i : j["incidents"]) {
    SCOPED_TRACE(i.dump());
    ASSERT_TRUE(i["id"].is_string());
    EXPECT_EQ(i["id"].get<std::string>().rfind("inc-", 0), 0u);
    EXPECT_TRUE(ids.insert(i["id"].get<std::string>()).second) << "duplicate id";
    ASSERT_TRUE(i["kind"].is_string());
    const std::string kind = i["kind"];
    EXPECT_TRUE(i["opened_at"].is_number());
    ASSERT_TRUE(i.contains("localized_at"));
    ASSERT_TRUE(i.contains("resolved_at"));
    EXPECT_TRUE(i["localized_at"].is_number() || i["localized_at"].is_null());
    EXPECT_TRUE(i["resolved_at"].is_number() || i["resolved_at"].is_null());
    ASSERT_TRUE(i["confidence"].is_number());
    EXPECT_GE(i["confidence"].get<double>(), 0.0);
    EXPECT_LE(i["confidence"].get<double>(), 1.0);
    ASSERT_TRUE(i["loss_ratio"].is_number());
    EXPECT_GE(i["loss_ratio"].get<double>(), 0.0);
    EXPECT_TRUE(i["evidence"].is_object());
    const double opened = i["opened_at"];
    if (i["localized_at"].is_number()) {
      EXPECT_GE(i["localized_at"].get<double>(), opened);
    }
    if (i["resolved_at"].is_number()) {
      EXPECT_GE(i["resolved_at"].get<double>(), opened);
    }
    if (i["localized_at"].is_number() && i["resolved_at"].is_number()) {
      EXPECT_GE(i["resolved_at"].get<double>(), i["localized_at"].get<double>());
    }
    EXPECT_LE(opened, j["generated_at"].get<double>());
    if (kind.rfind("link_", 0) == 0 || kind == "congestion") {
      ASSERT_TRUE(i.contains("link") && i["link"].is_string());
      EXPECT_TRUE(topo.findDirLink(i["link"].get<std::string>()).has_value()) << i["link"];
    }
    if (kind == "host_unreachable") {
      ASSERT_TRUE(i.contains("node") && i["node"].is_string());
      EXPECT_TRUE(topo.findNode(i["node"].get<std::string>()).has_value());
    }
    if (kind == "miscabling") {
      ASSERT_TRUE(i.contains("ports") && i["ports"].is_array());
      EXPECT_FALSE(i["ports"].empty());
      for (const json& p : i["ports"]) EXPECT_TRUE(topo.findPort(p.get<std::string>()));
    }
    if (i.contains("both_directions")) {
      EXPECT_TRUE(i["both_directions"].is_boolean());
    }
  }
  // The scorer (and so `netdiag score`) reads it back.
  std::string error;
  EXPECT_TRUE(sim::reportFromJson(j.dump(), error).has_value()) << error;
}

inline sim::IncidentReport toScorable(const Topology& topo, const Report& r) {
  std::string error;
  auto parsed = sim::reportFromJson(reportToJson(topo, r).dump(), error);
  EXPECT_TRUE(parsed.has_value()) << error;
  return parsed.value_or(sim::IncidentReport{});
}

// ---- a hand-driven fabric ---------------------------------------------------

// A leaf-spine fabric (no addresses) with helpers to name its links and
// build the path of a flow through a chosen spine.
struct Fabric {
  Topology t;
  std::vector<NodeId> spines, leaves;
  std::vector<PortId> hosts;  // host ports, in port-id order

  explicit Fabric(int spine_count = 2, int leaf_count = 4, int hosts_per_leaf = 2, int nics = 1)
      : t(topology::generateLeafSpine({.spines = spine_count,
                                       .leaves = leaf_count,
                                       .hosts_per_leaf = hosts_per_leaf,
                                       .nics_per_host = nics,
                                       .parallel = 1,
                                       .addresses = false})) {
    for (NodeId n = 0; n < t.nodeCount(); ++n) {
      if (t.node(n).role == topology::Role::kSpine) spines.push_back(n);
      if (t.node(n).role == topology::Role::kLeaf) leaves.push_back(n);
    }
    for (PortId p = 0; p < t.portCount(); ++p) {
      if (t.node(t.port(p).node).isHost()) hosts.push_back(p);
    }
  }

  DirLinkId dl(const std::string& name) const {
    auto d = t.findDirLink(name);
    EXPECT_TRUE(d.has_value()) << name;
    return d.value_or(kNone);
  }
  PortId port(const std::string& ref) const {
    auto p = t.findPort(ref);
    EXPECT_TRUE(p.has_value()) << ref;
    return p.value_or(kNone);
  }
  NodeId node(const std::string& name) const { return t.findNode(name).value_or(kNone); }
  NodeId leafOf(PortId host_port) const { return t.peerNode(host_port); }
  DirLinkId between(NodeId a, NodeId b) const {
    for (DirLinkId d : t.outLinks(a)) {
      if (t.dirDstNode(d) == b) return d;
    }
    ADD_FAILURE() << "no link " << t.node(a).name << " -> " << t.node(b).name;
    return kNone;
  }
  // The path from one host port to another through spine number `spine`.
  std::vector<DirLinkId> route(PortId src, PortId dst, size_t spine) const {
    NodeId a = leafOf(src), b = leafOf(dst);
    if (a == b) return {t.egressOf(src), t.ingressOf(dst)};
    NodeId s = spines[spine % spines.size()];
    return {t.egressOf(src), between(a, s), between(s, b), t.ingressOf(dst)};
  }
};

inline bool crosses(const std::vector<DirLinkId>& path, DirLinkId d) {
  return std::find(path.begin(), path.end(), d) != path.end();
}

// Every host port probes every host port on another leaf, one flow per
// spine (flow id 40000 + spine) with a fixed path; the reply takes a spine
// hashed from the flow (so the two directions of a link see different flows). Losses are
// deterministic: a link losing fraction p loses round(p * n) of the n probes
// that reach it.
struct Mesh {
  const Fabric& f;
  uint32_t sent = 50;
  std::map<DirLinkId, double> loss;  // per directed link
  std::set<PortId> dead;             // hosts whose responder is dead
  // Busy hosts: this share of the replies of every flow to or from them is
  // lost (dropped, or later than the probe timeout), whichever way it went.
  std::map<PortId, double> busy;
  // Hosts whose stack loses this share of the replies of their own probes
  // only (a slow prober), or of the probes of others only (a slow responder).
  std::map<PortId, double> slow_prober, slow_responder;
  // Hosts whose stack drops this share of what it receives (probes to it on
  // the way in, replies to its own probes on the way back), and hosts whose
  // stack adds this much to the round trip of every flow to or from them.
  std::map<PortId, double> receive_drop, stack_delay_us;
  // Directed links that add this much to every round trip crossing them.
  std::map<DirLinkId, double> latency_us;
  bool one_way = false;     // report lost_fwd / lost_rev
  bool reply_known = true;  // report reply_path
  // Whether a record of this flow carries its path (default: always).
  std::function<bool(PortId src, PortId dst, size_t spine)> path_known;
  // Whether a record that carries paths has its forward one too (default:
  // yes); without it only reply_path is reported (traceroute failed, the
  // reply's path is known).
  std::function<bool(PortId src, PortId dst, size_t spine)> forward_known;
  // Whether the flow is probed at all (default: every flow).
  std::function<bool(const std::vector<DirLinkId>& fwd, const std::vector<DirLinkId>& rev)> keep;
  // Links known down: flows pick the next spine instead.
  std::set<DirLinkId> down;
  // Extra flows per (pair, spine) that never carry a path (flow id + 100).
  bool pathless_twins = false;

  explicit Mesh(const Fabric& fabric) : f(fabric) {}

  // The reply's spine: a hash of the flow, as ECMP would pick it, so that
  // the two directions of a link never see the same set of flows.
  size_t replySpine(PortId src, PortId dst, size_t spine) const {
    uint64_t h = (uint64_t{src} * 0x9e3779b97f4a7c15ull) ^ (uint64_t{dst} * 0xc2b2ae3d27d4eb4full) ^
                 (uint64_t{spine} * 0x165667b19e3779f9ull);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return static_cast<size_t>(h % f.spines.size());
  }

  uint32_t lose(uint32_t n, const std::vector<DirLinkId>& path) const {
    double pass = 1;
    for (DirLinkId d : path) {
      if (auto it = loss.find(d); it != loss.end()) pass *= 1 - it->second;
    }
    return std::min(n, static_cast<uint32_t>(std::lround(n * (1 - pass))));
  }

  bool isDown(const std::vector<DirLinkId>& p) const {
    for (DirLinkId d : p) {
      if (down.contains(d) || down.contains(Topology::reverse(d))) return true;
    }
    return false;
  }

  std::vector<DirLinkId> routeUp(PortId a, PortId b, size_t spine) const {
    for (size_t i = 0; i < f.spines.size(); ++i) {
      auto p = f.route(a, b, spine + i);
      if (!isDown(p)) return p;
    }
    return f.route(a, b, spine);
  }

  ProbeRecord make(double t, PortId src, PortId dst, uint64_t flow, size_t spine,
                   bool with_path) const {
    ProbeRecord r;
    r.t = t;
    r.src = src;
    r.dst = dst;
    r.flow = flow;
    r.sent = sent;
    const auto fwd = routeUp(src, dst, spine);
    const auto rev = routeUp(dst, src, replySpine(src, dst, spine));
    if (dead.contains(dst)) {
      r.lost = sent;
      if (with_path) r.path = fwd;
      return r;
    }
    uint32_t lf = lose(sent, fwd);
    if (auto it = receive_drop.find(dst); it != receive_drop.end()) {
      lf += static_cast<uint32_t>(std::lround((sent - lf) * it->second));
    }
    uint32_t lr = lose(sent - lf, rev);
    if (auto it = receive_drop.find(src); it != receive_drop.end()) {
      lr += static_cast<uint32_t>(std::lround((sent - lf - lr) * it->second));
    }
    for (PortId end : {src, dst}) {
      if (auto it = busy.find(end); it != busy.end()) {
        lr += static_cast<uint32_t>(std::lround((sent - lf - lr) * it->second));
      }
    }
    for (auto [slow, end] : {std::pair{&slow_prober, src}, std::pair{&slow_responder, dst}}) {
      if (auto it = slow->find(end); it != slow->end()) {
        lr += static_cast<uint32_t>(std::lround((sent - lf - lr) * it->second));
      }
    }
    r.lost = lf + lr;
    if (one_way) {
      r.lost_fwd = lf;
      r.lost_rev = lr;
    }
    if (r.lost < r.sent) {
      r.rtt_us_p50 = 10;
      r.rtt_us_p99 = 20;
      for (PortId end : {src, dst}) {
        if (auto it = stack_delay_us.find(end); it != stack_delay_us.end()) {
          r.rtt_us_p50 += it->second;
          r.rtt_us_p99 += it->second;
        }
      }
      for (const auto* path : {&fwd, &rev}) {
        for (DirLinkId d : *path) {
          if (auto it = latency_us.find(d); it != latency_us.end()) {
            r.rtt_us_p50 += it->second;
            r.rtt_us_p99 += it->second;
          }
        }
      }
    }
    if (with_path) {
      if (!forward_known || forward_known(src, dst, spine)) r.path = fwd;
      if (reply_known && r.lost < r.sent) r.reply_path = rev;
    }
    return r;
  }

  // The records of the window ending at t.
  void window(double t, std::vector<Record>& out) const {
    for (PortId s : f.hosts) {
      for (PortId d : f.hosts) {
        if (f.leafOf(s) == f.leafOf(d)) continue;
        for (size_t sp = 0; sp < f.spines.size(); ++sp) {
          if (keep && !keep(f.route(s, d, sp), f.route(d, s, replySpine(s, d, sp)))) continue;
          bool known = !path_known || path_known(s, d, sp);
          out.emplace_back(make(t, s, d, 40000 + sp, sp, known));
          if (pathless_twins) out.emplace_back(make(t, s, d, 40100 + sp, sp, false));
        }
      }
    }
  }
};

// Windows ending at from+5, from+10, ..., to.
inline std::vector<double> windows(double from, double to, double step = 5) {
  std::vector<double> out;
  for (double t = from + step; t <= to + 1e-9; t += step) out.push_back(t);
  return out;
}

// A port record with every counter present.
struct Counters {
  uint64_t rx = 0, tx = 0, crc = 0, drops = 0, carrier = 0;
  bool up = true;
};

inline PortRecord portRecord(double t, PortId p, const Counters& c) {
  PortRecord r;
  r.t = t;
  r.port = p;
  r.oper_up = c.up;
  r.rx_packets = c.rx;
  r.tx_packets = c.tx;
  r.rx_errors = c.crc;
  r.rx_crc_errors = c.crc;
  r.rx_drops = 0;
  r.tx_drops = c.drops;
  r.fec_uncorrectable = 0;
  r.carrier_changes = c.carrier;
  return r;
}

}  // namespace netdiag::analyzer::testing
