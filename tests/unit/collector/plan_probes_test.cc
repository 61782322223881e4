// A served plan end to end on loopback: every host of a small fabric runs a
// responder that answers only its plan's probed_by_addrs and a prober that
// runs its plan's flows (bound to the flows' src_addr, as on a real host).
// Not one probe may be refused (a refusal would read as loss on a healthy
// fabric), while a source outside the plan gets nothing.

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "collector/agent_config.h"
#include "collector/prober.h"
#include "collector/responder.h"
#include "planner/plan.h"
#include "proto/convert.h"
#include "tests/unit/collector/free_port.h"
#include "topology/generators.h"

namespace netdiag::collector {
namespace {

// 10.a.b.c -> 127.a.b.c: every interface address is then local on loopback.
void moveToLoopback(topology::Topology& topo) {
  for (topology::PortId p = 0; p < topo.portCount(); ++p) {
    std::string& addr = topo.mutablePort(p).addr;
    if (addr.rfind("10.", 0) == 0) addr = "127." + addr.substr(3);
  }
}

std::string bare(const std::string& addr) { return addr.substr(0, addr.find('/')); }

TEST(PlanProbes, EveryProbeOfAServedPlanIsAnsweredAndOnlyThose) {
  topology::LeafSpineParams lp;
  lp.spines = 2;
  lp.leaves = 2;
  lp.hosts_per_leaf = 4;
  topology::Topology topo = topology::generateLeafSpine(lp);
  moveToLoopback(topo);
  planner::Budget budget;
  budget.probes_per_second = 200;
  budget.window_s = 0.5;
  // Source ports near one free now, not the default 40000 another process may hold.
  budget.first_source_port = static_cast<uint16_t>(std::min<int>(testing::freePort(), 65000));
  const planner::Plan plan = planner::makePlan(topo, budget, {}, 3);
  const std::vector<proto::Inbound> inbound = proto::inboundByNode(topo, plan);
  const uint16_t port = testing::freePort();

  struct Host {
    std::string name, addr;
    v1::AgentPlan plan;
    std::unique_ptr<Responder> responder;
    std::unique_ptr<Prober> prober;
  };
  std::vector<Host> hosts;
  for (topology::NodeId n = 0; n < topo.nodeCount(); ++n) {
    if (topo.node(n).role != topology::Role::kHost) continue;
    Host h;
    h.name = topo.node(n).name;
    h.addr = bare(topo.port(topo.portsOf(n).front()).addr);
    h.plan = proto::agentPlan(topo, plan, n, port, 0, &inbound[n]);
    ASSERT_TRUE(h.plan.probed_by_known()) << h.name;
    ASSERT_GT(h.plan.probed_by_addrs_size(), 0) << h.name;
    ResponderOptions ro;
    ro.address = h.addr;
    ro.port = port;
    // What the agent sizes it to by default.
    ro.global_rate =
        std::max(kMinGlobalRateLimit, kGlobalRateMargin * h.plan.inbound_probes_per_second());
    std::string err;
    h.responder = Responder::start(ro, &err);
    ASSERT_NE(h.responder, nullptr) << err;
    EXPECT_TRUE(
        h.responder
            ->allowOnly({h.plan.probed_by_addrs().begin(), h.plan.probed_by_addrs().end()}, 0)
            .empty());
    hosts.push_back(std::move(h));
  }
  ASSERT_EQ(hosts.size(), 8u);

  constexpr uint64_t kProbes = 12;  // per flow
  uint64_t flows = 0;
  for (Host& h : hosts) {
    ProberOptions po;
    po.window_s = h.plan.window_s();
    po.probes_per_second = h.plan.probes_per_second_per_flow();
    po.responder_port = port;
    po.timeout_s = 2;  // generous: a busy machine must not turn late replies into losses
    po.max_probes = kProbes;
    po.path.hop_timeout_s = 2;  // path discovery's probes must be admitted too
    std::vector<std::string> errors;
    h.prober = Prober::start(po, {h.plan.flows().begin(), h.plan.flows().end()}, {}, &errors);
    ASSERT_NE(h.prober, nullptr);
    ASSERT_TRUE(errors.empty()) << errors[0];
    flows += static_cast<uint64_t>(h.plan.flows_size());
  }
  ASSERT_GT(flows, 0u);

  // A source that is no flow's src_addr: a switch port's address.
  const std::string stranger = bare(topo.port(*topo.findPort("leaf1:swp1")).addr);
  ASSERT_FALSE(stranger.empty());
  v1::ProbeFlow sf;
  sf.set_src("leaf1:swp1");
  sf.set_src_addr(stranger);
  sf.set_dst(hosts[0].plan.flows(0).src());
  sf.set_dst_addr(hosts[0].addr);
  sf.set_source_port(testing::freePort());
  ProberOptions spo;
  spo.window_s = 0.5;
  spo.probes_per_second = 20;
  spo.responder_port = port;
  spo.timeout_s = 0.5;
  spo.discover_paths = false;
  spo.max_probes = 10;
  std::vector<std::string> serr;
  auto spoofer = Prober::start(spo, {sf}, {}, &serr);
  ASSERT_NE(spoofer, nullptr);
  ASSERT_TRUE(serr.empty()) << serr[0];

  std::vector<v1::Probe> records;
  const auto t0 = std::chrono::steady_clock::now();
  auto done = [&] {
    for (Host& h : hosts) {
      const ProberStats s = h.prober->stats();
      if (s.sent < s.flows * kProbes || s.answered + s.lost < s.sent) return false;
    }
    const ProberStats s = spoofer->stats();
    return s.sent == 10 && s.lost == 10;
  };
  while (!done() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(40)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  uint64_t sent = 0, lost = 0, refused = 0, limited = 0, replied = 0;
  for (Host& h : hosts) {
    h.prober->stop();
    for (v1::Probe& r : h.prober->drain()) records.push_back(std::move(r));
    const ProberStats s = h.prober->stats();
    EXPECT_EQ(s.flows, static_cast<uint64_t>(h.plan.flows_size())) << h.name;
    sent += s.sent;
    lost += s.lost;
  }
  spoofer->stop();
  for (Host& h : hosts) {
    const ResponderStats s = h.responder->stats();
    refused += s.not_in_plan;
    limited += s.rate_limited + s.global_rate_limited;
    replied += s.replied;
  }
  EXPECT_EQ(sent, flows * kProbes);
  EXPECT_EQ(lost, 0u) << "a healthy fabric's probes were refused";
  EXPECT_EQ(limited, 0u);
  EXPECT_GE(replied, sent);  // and path discovery's on top
  for (const v1::Probe& r : records) EXPECT_EQ(r.lost(), 0u) << r.src() << " -> " << r.dst();
  // Only the stranger was refused, every time (path discovery off for it).
  EXPECT_EQ(refused, 10u);
  EXPECT_EQ(hosts[0].responder->stats().not_in_plan, 10u);
  EXPECT_EQ(spoofer->stats().answered, 0u);
}

}  // namespace
}  // namespace netdiag::collector
