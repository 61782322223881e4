#pragma once

// The simulator's records as every node's own agent publishes them on the
// bus (a BusUplink per node), for tests of the bus with a real nats-server.

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "collector/bus_uplink.h"
#include "collector/spool.h"
#include "proto/convert.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::bus::testing {

using namespace std::chrono_literals;

inline double wallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

template <typename Pred>
bool waitFor(Pred pred, std::chrono::milliseconds limit = 30s) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

// The simulator's records as every node's agent publishes them on the bus:
// one BusUplink per node, a batch per node per second of telemetry.
class BusAgents final : public telemetry::RecordSink {
 public:
  BusAgents(const topology::Topology& topo, bus::BusOptions options) : topo_(topo) {
    for (topology::NodeId n = 0; n < topo.nodeCount(); ++n) {
      Agent& a = agents_[n];
      a.spool = collector::makeMemorySpool(0);
      collector::BusUplinkOptions o;
      o.bus = options;
      o.agent = topo.node(n).name;
      std::string error;
      a.uplink = collector::BusUplink::create(o, *a.spool, &error);
      EXPECT_TRUE(a.uplink) << error;
    }
  }
  // Times are shifted onto the wall clock (the first record is "now"), by
  // whole windows.
  void onProbe(const telemetry::ProbeRecord& r) override {
    telemetry::ProbeRecord shifted = r;
    shifted.t += shift(r.t);
    proto::toWire(topo_, shifted, *batch(topo_.port(r.src).node, r.t).add_probes());
    ++probes_;
  }
  uint64_t probes() const { return probes_; }
  // Once the simulation reaches time `t`: sends what is pending, waits for
  // the stream to hold it, then calls `then` (the simulation waits for it).
  void pauseAt(double t, std::function<void()> then) {
    pause_at_ = t;
    at_pause_ = std::move(then);
  }
  void onPort(const telemetry::PortRecord& r) override {
    telemetry::PortRecord shifted = r;
    shifted.t += shift(r.t);
    proto::toWire(topo_, shifted, *batch(topo_.port(r.port).node, r.t).add_ports());
  }
  void onLldp(const telemetry::LldpRecord&) override {}
  // Sends what is pending; true once every spool is empty.
  bool finish(std::chrono::milliseconds limit = 30s) {
    flush();
    return waitFor(
        [&] {
          for (auto& [n, a] : agents_) {
            if (a.spool->batches() > 0) return false;
          }
          return true;
        },
        limit);
  }

 private:
  struct Agent {
    std::unique_ptr<collector::Spool> spool;
    std::unique_ptr<collector::BusUplink> uplink;
    v1::Batch pending;
  };
  double shift(double t) {
    if (!shift_) shift_ = std::floor((wallNow() - t) / 5) * 5;
    return *shift_;
  }
  v1::Batch& batch(topology::NodeId node, double t) {
    if (t >= pause_at_) {
      pause_at_ = std::numeric_limits<double>::infinity();
      EXPECT_TRUE(finish());
      at_pause_();
    }
    // Each second of telemetry is in the stream before the next is sent,
    // as agents in real time would have it: run a hundred times faster than
    // that, a publisher a loaded machine holds back for a tenth of a second
    // is half a minute of telemetry late (too_late), a third of the records.
    if (t >= flushed_at_ + 1) {
      EXPECT_TRUE(finish());
      flushed_at_ = t;
    }
    return agents_[node].pending;
  }
  void flush() {
    for (auto& [n, a] : agents_) {
      if (a.pending.probes_size() + a.pending.ports_size() == 0) continue;
      a.uplink->send(std::move(a.pending));
      a.pending = v1::Batch();
    }
  }
  const topology::Topology& topo_;
  std::map<topology::NodeId, Agent> agents_;
  double flushed_at_ = -1e18;
  std::optional<double> shift_;
  uint64_t probes_ = 0;
  double pause_at_ = std::numeric_limits<double>::infinity();
  std::function<void()> at_pause_;
};

}  // namespace netdiag::bus::testing
