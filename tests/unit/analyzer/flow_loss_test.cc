// Per-flow tallies of tracked host ports (analyzer/flow_loss.h).

#include "analyzer/flow_loss.h"

#include <gtest/gtest.h>

namespace netdiag::analyzer {
namespace {

telemetry::ProbeRecord oneWay(topology::PortId src, topology::PortId dst, uint64_t flow,
                              uint32_t sent, uint32_t fwd, uint32_t rev) {
  telemetry::ProbeRecord r;
  r.src = src, r.dst = dst, r.flow = flow, r.sent = sent;
  r.lost_fwd = fwd, r.lost_rev = rev, r.lost = fwd + rev;
  return r;
}

TEST(FlowLoss, EachDirectionOfTheAccessLinkGetsWhatCrossedIt) {
  FlowLoss fl;
  EXPECT_TRUE(fl.flows(7, true).empty());
  fl.add(oneWay(7, 9, 1, 50, 2, 1));  // untracked: nothing kept
  fl.track(7, 0);
  fl.add(oneWay(7, 9, 1, 50, 2, 1));  // its own flow: out on the way out
  fl.add(oneWay(9, 7, 1, 40, 3, 4));  // another's: in on the way in, out for the reply
  telemetry::ProbeRecord rt;
  rt.src = 7, rt.dst = 9, rt.flow = 2, rt.sent = 10, rt.lost = 5;  // a round trip crossed both
  fl.add(rt);
  auto sum = [](const std::vector<FlowLoss::Flow>& fs) {
    FlowLoss::Flow s;
    for (const auto& f : fs) s.n1 += f.n1, s.k1 += f.k1, s.n2 += f.n2, s.k2 += f.k2;
    return std::pair{s, fs.size()};
  };
  const auto [out, out_flows] = sum(fl.flows(7, true));
  EXPECT_EQ(out_flows, 3u);  // (9, 1) probed by 7, (9, 1) probed by 9, (9, 2)
  EXPECT_DOUBLE_EQ(out.n1, 50 + 37);
  EXPECT_DOUBLE_EQ(out.k1, 2 + 4);
  EXPECT_DOUBLE_EQ(out.n2, 10);
  EXPECT_DOUBLE_EQ(out.k2, 5);
  const auto [in, in_flows] = sum(fl.flows(7, false));
  EXPECT_EQ(in_flows, 3u);
  EXPECT_DOUBLE_EQ(in.n1, 48 + 40);
  EXPECT_DOUBLE_EQ(in.k1, 1 + 3);
  EXPECT_DOUBLE_EQ(in.k2, 5);
}

TEST(FlowLoss, PortsAndFlowsAreBoundedAndUnaskedPortsForgotten) {
  FlowLoss fl;
  for (topology::PortId p = 0; p < FlowLoss::kMaxPorts + 5; ++p) fl.track(p, 10);
  fl.add(oneWay(FlowLoss::kMaxPorts + 1, 0, 1, 10, 0, 0));
  EXPECT_TRUE(fl.flows(FlowLoss::kMaxPorts + 1, true).empty());  // refused
  for (uint64_t flow = 0; flow < FlowLoss::kMaxFlowsPerPort + 100; ++flow) {
    fl.add(oneWay(0, 1000, flow, 10, 1, 0));
  }
  EXPECT_EQ(fl.flows(0, true).size(), FlowLoss::kMaxFlowsPerPort);
  fl.track(1, 100);
  fl.expire(200, 180);  // port 1 asked at 100, the rest at 10
  EXPECT_TRUE(fl.flows(0, true).empty());
  fl.add(oneWay(1, 0, 1, 10, 1, 0));
  EXPECT_EQ(fl.flows(1, true).size(), 1u);
}

}  // namespace
}  // namespace netdiag::analyzer
