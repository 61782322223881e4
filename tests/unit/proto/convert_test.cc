// Wire <-> record conversion: what simulated agents send comes back as the
// same record; bad records are rejected by name; a path that does not map
// onto the topology costs the path, never the counts.

#include "proto/convert.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "topology/ecmp.h"
#include "topology/generators.h"

namespace netdiag::proto {
namespace {

using topology::DirLinkId;

struct Collect : telemetry::RecordSink {
  std::vector<telemetry::ProbeRecord> probes;
  std::vector<telemetry::PortRecord> ports;
  std::vector<telemetry::LldpRecord> lldp;
  void onProbe(const telemetry::ProbeRecord& r) override { probes.push_back(r); }
  void onPort(const telemetry::PortRecord& r) override { ports.push_back(r); }
  void onLldp(const telemetry::LldpRecord& r) override { lldp.push_back(r); }
};

class ConvertTest : public ::testing::Test {
 protected:
  ConvertTest() : topo_(topology::generateLeafSpine({})), resolver_(topo_) {}

  telemetry::ProbeRecord probeAlongFirstPath(const char* from, const char* to) {
    telemetry::ProbeRecord r;
    r.t = 100;
    EXPECT_TRUE(topo_.findPort(from) && topo_.findPort(to)) << from << " " << to;
    r.src = topo_.findPort(from).value_or(0);
    r.dst = topo_.findPort(to).value_or(1);
    r.flow = 40001;
    r.sent = 20;
    r.lost = 3;
    r.lost_fwd = 2;
    r.lost_rev = 1;
    r.rtt_us_p50 = 12.5;
    r.rtt_us_p99 = 40;
    topology::Router router(topo_);
    auto set = router.paths(r.src, r.dst);
    EXPECT_FALSE(set.empty()) << set.error();
    auto cursor = set.cursor();
    EXPECT_TRUE(cursor.next(r.path));
    return r;
  }

  topology::Topology topo_;
  Resolver resolver_;
};

TEST_F(ConvertTest, ProbeRoundTripsThroughTheWire) {
  auto r = probeAlongFirstPath("host1:eth0", "host64:eth0");
  v1::Batch batch;
  toWire(topo_, r, *batch.add_probes());
  Collect out;
  EXPECT_TRUE(deliver(batch, resolver_, out).empty());
  ASSERT_EQ(out.probes.size(), 1u);
  const auto& got = out.probes[0];
  EXPECT_EQ(got.src, r.src);
  EXPECT_EQ(got.dst, r.dst);
  EXPECT_EQ(got.sent, 20u);
  EXPECT_EQ(got.lost, 3u);
  EXPECT_EQ(got.lost_fwd, 2u);
  EXPECT_EQ(got.lost_rev, 1u);
  EXPECT_DOUBLE_EQ(got.rtt_us_p50, 12.5);
  EXPECT_EQ(got.path, r.path);
}

TEST_F(ConvertTest, PathAddressesMapToIngressPorts) {
  auto r = probeAlongFirstPath("host1:eth0", "host64:eth0");
  v1::Batch batch;
  v1::Probe* p = batch.add_probes();
  toWire(topo_, r, *p);
  p->clear_path();
  for (DirLinkId d : r.path) {
    const std::string& addr = topo_.port(topo_.dirDstPort(d)).addr;
    ASSERT_FALSE(addr.empty());
    p->add_path_addrs(addr.substr(0, addr.find('/')));
  }
  Collect out;
  EXPECT_TRUE(deliver(batch, resolver_, out).empty());
  ASSERT_EQ(out.probes.size(), 1u);
  EXPECT_EQ(out.probes[0].path, r.path);
}

TEST_F(ConvertTest, AnUnmappablePathIsDroppedButTheCountsAreKept) {
  auto r = probeAlongFirstPath("host1:eth0", "host64:eth0");
  v1::Batch batch;
  v1::Probe* p = batch.add_probes();
  toWire(topo_, r, *p);
  p->clear_path();
  p->add_path_addrs("192.0.2.77");  // answers from an address the topology lacks
  Collect out;
  std::vector<std::string> warnings;
  EXPECT_TRUE(deliver(batch, resolver_, out, &warnings).empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("probes[0]: path ignored"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("192.0.2.77"), std::string::npos) << warnings[0];
  ASSERT_EQ(out.probes.size(), 1u);
  EXPECT_TRUE(out.probes[0].path.empty());
  EXPECT_EQ(out.probes[0].lost, 3u);
}

TEST_F(ConvertTest, ResolverFindsEveryPortAndNothingElse) {
  size_t with_addr = 0;
  for (topology::PortId p = 0; p < topo_.portCount(); ++p) {
    const std::string name = topo_.portRef(p);
    ASSERT_EQ(resolver_.port(name), p) << name;
    const Resolver::PortEntry* e = resolver_.entry(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->node, topo_.port(p).node);
    EXPECT_EQ(e->ingress, topo_.ingressOf(p));
    if (e->ingress != topology::kNone) {
      EXPECT_EQ(e->ingress_from, topo_.dirSrcNode(e->ingress));
      EXPECT_EQ(e->ingress_from_port, topo_.dirSrcPort(e->ingress));
      EXPECT_EQ(topo_.dirDstPort(e->ingress), p);
    }
    const std::string& addr = topo_.port(p).addr;
    if (!addr.empty()) {
      ++with_addr;
      EXPECT_EQ(resolver_.portByAddr(addr.substr(0, addr.find('/'))), p) << addr;
      EXPECT_EQ(resolver_.portByAddr(addr.find('/') == std::string::npos ? addr + "/31" : addr),
                topology::kNone)
          << "an address is looked up without its prefix length";
    }
  }
  EXPECT_GT(with_addr, 0u);
  for (const char* unknown : {"", "host1", "host1:", ":eth0", "host1:eth", "host1:eth00",
                              "xhost1:eth0", "host1:eth0 ", "HOST1:eth0"}) {
    EXPECT_EQ(resolver_.port(unknown), topology::kNone) << unknown;
    EXPECT_EQ(resolver_.entry(unknown), nullptr) << unknown;
  }
  EXPECT_EQ(resolver_.portByAddr(""), topology::kNone);
  EXPECT_EQ(resolver_.portByAddr("192.0.2.77"), topology::kNone);
  // A name with a NUL inside is not its prefix.
  EXPECT_EQ(resolver_.port(std::string("host1:eth0\0x", 12)), topology::kNone);
}

// Names longer than a table slot holds inline (24 chars) live in a buffer
// of their own; short and long ones resolve alike, and neither matches the
// other's prefix.
TEST(Resolver, LongAndShortNamesResolveAlike) {
  topology::Topology t;
  auto node = [&](std::string name, topology::Role role) {
    topology::Node n;
    n.name = std::move(name);
    n.role = role;
    return t.addNode(std::move(n));
  };
  const std::string long_host = "a-host-name-well-beyond-the-inline-slot";
  const topology::NodeId h = node(long_host, topology::Role::kHost);
  const topology::NodeId l = node("leaf1", topology::Role::kLeaf);
  const topology::PortId he = t.addPort(h, "eth0");
  const topology::PortId hf = t.addPort(h, "eth1-also-quite-a-long-interface-name");
  const topology::PortId ls = t.addPort(l, "swp1");
  const topology::PortId lt = t.addPort(l, "swp2");
  t.addLink(he, ls);
  t.addLink(hf, lt);
  t.finalize();
  Resolver resolver(t);
  for (topology::PortId p : {he, hf, ls, lt}) {
    EXPECT_EQ(resolver.port(t.portRef(p)), p) << t.portRef(p);
    ASSERT_NE(resolver.entry(t.portRef(p)), nullptr);
    EXPECT_EQ(resolver.entry(t.portRef(p))->ingress, t.ingressOf(p));
  }
  EXPECT_EQ(resolver.port(long_host + ":eth"), topology::kNone);
  EXPECT_EQ(resolver.port(long_host + ":eth00"), topology::kNone);
  EXPECT_EQ(resolver.port(t.portRef(hf) + "x"), topology::kNone);
  EXPECT_EQ(resolver.port(t.portRef(hf).substr(0, 24)), topology::kNone);
  EXPECT_EQ(resolver.port("leaf1:swp3"), topology::kNone);
}

TEST_F(ConvertTest, DecodeBuildsTheRecordsDeliverHandsOn) {
  auto r = probeAlongFirstPath("host1:eth0", "host64:eth0");
  v1::Batch batch;
  toWire(topo_, r, *batch.add_probes());
  batch.add_probes()->set_src("nowhere:eth0");  // rejected
  toWire(topo_, r, *batch.add_probes());
  v1::PortCounters* pc = batch.add_ports();
  pc->set_t(5);
  pc->set_port("host1:eth0");
  pc->set_rx_packets(7);
  v1::LldpNeighbor* l = batch.add_lldp();
  l->set_t(6);
  l->set_port("host1:eth0");
  l->set_neighbor("leaf1:eth1");
  Decoded d;
  std::vector<std::string> errors = decode(batch, resolver_, d);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("probes[1]: unknown src port \"nowhere:eth0\""), std::string::npos)
      << errors[0];
  ASSERT_EQ(d.probes.size(), 2u);
  for (const auto& got : d.probes) {
    EXPECT_EQ(got.src, r.src);
    EXPECT_EQ(got.path, r.path);
    EXPECT_EQ(got.lost_fwd, 2u);
  }
  ASSERT_EQ(d.ports.size(), 1u);
  EXPECT_EQ(d.ports[0].rx_packets, 7u);
  ASSERT_EQ(d.lldp.size(), 1u);
  EXPECT_EQ(d.lldp[0].neighbor, "leaf1:eth1");
  Collect out;
  EXPECT_EQ(deliver(batch, resolver_, out), errors);
  EXPECT_EQ(out.probes.size(), 2u);
  EXPECT_EQ(out.ports.size(), 1u);
  EXPECT_EQ(out.lldp.size(), 1u);
}

TEST_F(ConvertTest, BadRecordsAreRejectedByNameAndTheRestDelivered) {
  auto r = probeAlongFirstPath("host1:eth0", "host64:eth0");
  v1::Batch batch;
  toWire(topo_, r, *batch.add_probes());
  v1::Probe* unknown = batch.add_probes();
  toWire(topo_, r, *unknown);
  unknown->set_dst("nosuch:eth0");
  v1::Probe* too_many = batch.add_probes();
  toWire(topo_, r, *too_many);
  too_many->set_lost(21);
  v1::Probe* split = batch.add_probes();
  toWire(topo_, r, *split);
  split->set_lost_fwd(3);
  v1::PortCounters* port = batch.add_ports();
  port->set_t(std::nan(""));
  port->set_port("leaf1:swp1");
  v1::LldpNeighbor* lldp = batch.add_lldp();
  lldp->set_t(1);
  lldp->set_port("leaf1:swp1");
  lldp->set_neighbor("host1:eth0");
  Collect out;
  auto errors = deliver(batch, resolver_, out);
  ASSERT_EQ(errors.size(), 4u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0], "probes[1]: unknown dst port \"nosuch:eth0\"");
  EXPECT_EQ(errors[1], "probes[2]: 'lost' > 'sent'");
  EXPECT_EQ(errors[2], "probes[3]: 'lost_fwd' + 'lost_rev' != 'lost'");
  EXPECT_EQ(errors[3], "ports[0]: 't' is not a finite number");
  EXPECT_EQ(out.probes.size(), 1u);
  EXPECT_EQ(out.lldp.size(), 1u);
}

TEST_F(ConvertTest, PortIdsUnderTheSameTopologyStandForTheNames) {
  auto r = probeAlongFirstPath("host1:eth0", "host64:eth0");
  r.reply_path = r.path;  // any valid chain back will do: the reverse of the path
  std::reverse(r.reply_path.begin(), r.reply_path.end());
  for (DirLinkId& d : r.reply_path) d = topology::Topology::reverse(d);
  telemetry::PortRecord port;
  port.t = 100;
  port.port = r.src;
  port.rx_packets = 7;
  v1::Batch batch;
  batch.set_topology(topologyFingerprint(topo_));
  toWire(topo_, r, *batch.add_probes(), /*ids=*/true);
  toWire(topo_, port, *batch.add_ports(), /*ids=*/true);
  const v1::Probe& wire = batch.probes(0);
  EXPECT_TRUE(wire.src().empty() && wire.path().empty()) << "ids replace the names";
  EXPECT_EQ(wire.path_ids_size(), static_cast<int>(r.path.size()));
  Decoded d;
  std::vector<std::string> warnings;
  EXPECT_TRUE(decode(batch, resolver_, d, &warnings).empty());
  EXPECT_TRUE(warnings.empty()) << warnings[0];
  ASSERT_EQ(d.probes.size(), 1u);
  EXPECT_EQ(d.probes[0].src, r.src);
  EXPECT_EQ(d.probes[0].dst, r.dst);
  EXPECT_EQ(d.probes[0].path, r.path);
  EXPECT_EQ(d.probes[0].reply_path, r.reply_path);
  ASSERT_EQ(d.ports.size(), 1u);
  EXPECT_EQ(d.ports[0].port, r.src);
  EXPECT_EQ(d.id_mismatch, 0u);
}

TEST_F(ConvertTest, PortIdsUnderAnotherTopologyFallBackToNamesOrAreRejectedAndCounted) {
  auto r = probeAlongFirstPath("host1:eth0", "host64:eth0");
  // Another fabric: its fingerprint differs from ours.
  const topology::Topology other = topology::generateLeafSpine({.spines = 3});
  ASSERT_NE(topologyFingerprint(other), topologyFingerprint(topo_));
  v1::Batch batch;
  batch.set_topology(topologyFingerprint(other));
  toWire(topo_, r, *batch.add_probes(), /*ids=*/true);  // ids alone: unusable here
  v1::Probe* both = batch.add_probes();
  toWire(topo_, r, *both);  // names, plus ids that would point elsewhere
  both->set_src_id(r.dst + 1);
  both->set_dst_id(r.src + 1);
  both->add_path_ids(1);
  v1::Probe* path_only = batch.add_probes();
  toWire(topo_, r, *path_only, /*ids=*/true);
  path_only->set_src(topo_.portRef(r.src));
  path_only->set_dst(topo_.portRef(r.dst));
  Decoded d;
  std::vector<std::string> warnings;
  const auto errors = decode(batch, resolver_, d, &warnings);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("probes[0]: src port is given only as a port id"), std::string::npos)
      << errors[0];
  EXPECT_NE(errors[0].find("(send names)"), std::string::npos) << errors[0];
  ASSERT_EQ(d.probes.size(), 2u);
  EXPECT_EQ(d.probes[0].src, r.src) << "the names, never the foreign ids";
  EXPECT_EQ(d.probes[0].dst, r.dst);
  EXPECT_EQ(d.probes[0].path, r.path);
  EXPECT_EQ(d.probes[1].src, r.src);
  EXPECT_TRUE(d.probes[1].path.empty()) << "a path given only by foreign ids is left out";
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("probes[2]: path ignored"), std::string::npos) << warnings[0];
  EXPECT_EQ(d.id_mismatch, 3u);
}

TEST_F(ConvertTest, PortIdsOutOfRangeOrOffThePathAreNamed) {
  auto r = probeAlongFirstPath("host1:eth0", "host64:eth0");
  v1::Batch batch;
  batch.set_topology(resolver_.fingerprint());
  v1::Probe* bad_src = batch.add_probes();
  toWire(topo_, r, *bad_src, /*ids=*/true);
  bad_src->set_src_id(static_cast<uint32_t>(topo_.portCount()) + 1);  // one past the last port
  v1::Probe* bad_hop = batch.add_probes();
  toWire(topo_, r, *bad_hop, /*ids=*/true);
  bad_hop->set_path_ids(0, bad_hop->path_ids(1));  // skips the first hop
  Decoded d;
  std::vector<std::string> warnings;
  const auto errors = decode(batch, resolver_, d, &warnings);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "probes[0]: unknown src port id " + std::to_string(topo_.portCount() + 1));
  ASSERT_EQ(d.probes.size(), 1u);
  EXPECT_TRUE(d.probes[0].path.empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("hop 0 port id"), std::string::npos) << warnings[0];
}

TEST(TopologyFingerprint, SameFabricSameValueAnyChangeAnother) {
  const auto a = topology::generateLeafSpine({});
  const auto b = topology::generateLeafSpine({});
  EXPECT_EQ(topologyFingerprint(a), topologyFingerprint(b));
  EXPECT_NE(topologyFingerprint(a), 0u);
  EXPECT_NE(topologyFingerprint(a),
            topologyFingerprint(topology::generateLeafSpine({.leaves = 5})));
}

TEST_F(ConvertTest, AgentPlanHasTheNodesFlowsAndPorts) {
  planner::Plan plan = planner::makePlan(topo_, {}, {}, 1);
  auto node = *topo_.findNode("host3");
  v1::AgentPlan ap = agentPlan(topo_, plan, node, 7601, 26);
  EXPECT_EQ(ap.responder_port(), 7601u);
  EXPECT_EQ(ap.dscp(), 26u);
  ASSERT_GT(ap.flows_size(), 0);
  for (const auto& f : ap.flows()) {
    EXPECT_EQ(f.src(), "host3:eth0");
    EXPECT_FALSE(f.dst_addr().empty());
    EXPECT_EQ(f.dst_addr().find('/'), std::string::npos);
  }
  ASSERT_EQ(ap.monitored_ports_size(), 1);
  EXPECT_EQ(ap.monitored_ports(0), "host3:eth0");
}

// Who probes `node`, worked out from every agent's served plan: the
// source addresses of the flows towards its ports, and their rate.
std::pair<std::set<std::string>, double> probedBy(const topology::Topology& topo,
                                                  const std::vector<v1::AgentPlan>& plans,
                                                  topology::NodeId node) {
  std::set<std::string> addrs;
  double rate = 0;
  for (const v1::AgentPlan& p : plans) {
    for (const v1::ProbeFlow& f : p.flows()) {
      if (topo.port(*topo.findPort(f.dst())).node != node) continue;
      addrs.insert(f.src_addr());
      rate += p.probes_per_second_per_flow();
    }
  }
  return {addrs, rate};
}

TEST_F(ConvertTest, AgentPlanNamesEverySourceThatProbesItAndNoOther) {
  planner::Plan plan = planner::makePlan(topo_, {}, {}, 1);
  const std::vector<Inbound> inbound = inboundByNode(topo_, plan);
  std::vector<topology::NodeId> hosts;
  std::vector<v1::AgentPlan> plans;
  for (topology::NodeId n = 0; n < topo_.nodeCount(); ++n) {
    if (topo_.node(n).role != topology::Role::kHost) continue;
    hosts.push_back(n);
    plans.push_back(agentPlan(topo_, plan, n, 7601, 26, &inbound[n]));
    // The same without the index.
    EXPECT_EQ(agentPlan(topo_, plan, n, 7601, 26).SerializeAsString(),
              plans.back().SerializeAsString());
  }
  size_t total = 0;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const auto [want, rate] = probedBy(topo_, plans, hosts[i]);
    const v1::AgentPlan& p = plans[i];
    EXPECT_TRUE(p.probed_by_known());
    ASSERT_GT(p.probed_by_addrs_size(), 0) << topo_.node(hosts[i]).name;
    const std::vector<std::string> got(p.probed_by_addrs().begin(), p.probed_by_addrs().end());
    EXPECT_EQ(got, std::vector<std::string>(want.begin(), want.end()));  // sorted, unique
    EXPECT_NEAR(p.inbound_probes_per_second(), rate, 1e-9);
    EXPECT_EQ(
        inbound[hosts[i]].flows,
        static_cast<size_t>(std::llround(rate / plan.ports.front().probes_per_second_per_flow)));
    for (const std::string& a : got) EXPECT_EQ(a.find('/'), std::string::npos);
    total += inbound[hosts[i]].flows;
  }
  EXPECT_EQ(total, plan.flowCount());  // every flow targets a host
  // Switches are probed by no one, and their plans say so.
  const v1::AgentPlan leaf = agentPlan(topo_, plan, *topo_.findNode("leaf1"), 7601, 26);
  EXPECT_TRUE(leaf.probed_by_known());
  EXPECT_EQ(leaf.probed_by_addrs_size(), 0);
  EXPECT_EQ(leaf.inbound_probes_per_second(), 0);
}

TEST_F(ConvertTest, AgentPlanCarriesNoListWhenASourceHasNoAddress) {
  planner::Plan plan = planner::makePlan(topo_, {}, {}, 1);
  // host1's flows target some hosts; without its address their lists
  // cannot name it, so they carry none (answer everyone) rather than
  // refuse host1's probes.
  const topology::PortId h1 = *topo_.findPort("host1:eth0");
  topo_.mutablePort(h1).addr.clear();
  std::set<topology::NodeId> targets;
  for (const planner::PortPlan& pp : plan.ports) {
    if (pp.src != h1) continue;
    for (const planner::Flow& f : pp.flows) targets.insert(topo_.port(f.dst).node);
  }
  ASSERT_FALSE(targets.empty());
  const std::vector<Inbound> inbound = inboundByNode(topo_, plan);
  for (topology::NodeId n = 0; n < topo_.nodeCount(); ++n) {
    if (topo_.node(n).role != topology::Role::kHost) continue;
    const v1::AgentPlan p = agentPlan(topo_, plan, n, 7601, 26, &inbound[n]);
    if (n == topo_.port(h1).node) {
      // Nobody can probe a port without address: known, and nobody.
      EXPECT_TRUE(p.probed_by_known());
      EXPECT_EQ(p.probed_by_addrs_size(), 0);
      EXPECT_EQ(p.inbound_probes_per_second(), 0);
      continue;
    }
    EXPECT_EQ(p.probed_by_known(), targets.count(n) == 0) << topo_.node(n).name;
    EXPECT_EQ(p.probed_by_addrs_size() == 0, targets.count(n) == 1) << topo_.node(n).name;
    EXPECT_GT(p.inbound_probes_per_second(), 0);
  }
}

}  // namespace
}  // namespace netdiag::proto
