// The bus's rates and an analyzer's catch-up after an outage (issue #13,
// item 4), whole process, against a running nats-server with JetStream
// (bench/bus_catchup.sh starts one):
//
//   1. an analyzer starts on the bus (making the stream and its durable
//      consumer) and stops: the outage begins;
//   2. TELEMETRY_S seconds of a simulated fabric (by default rail, 12,800
//      host ports) are published into the stream by 64 grouped synthetic
//      agents, a batch per agent per telemetry second, with JetStream
//      acknowledgements: the publish rate, and bytes per record on the wire;
//   3. the analyzer starts again and its durable consumer takes the whole
//      backlog: the catch-up's wall time and the process's CPU time, per
//      record and as a multiple of the fabric's real-time rate.
//
//   bus_catchup TELEMETRY_S --url nats://127.0.0.1:PORT [--fabric SPEC] [--agents N]
//               [--rebuild]
//
// --rebuild: step 3 is instead a new analyzer (a consumer it never had)
// rebuilding its evidence at start: the replay of the stream's last
// horizon through a temporary consumer, which holds the whole backlog here
// (published in the last minutes). The figures are then the replay's.
//
// Prints one JSON object on stdout (docs/benchmarks.md, "The bus").

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include "bus/connection.h"
#include "bus/stream.h"
#include "bus/subjects.h"
#include "planner/plan.h"
#include "proto/convert.h"
#include "server/authority.h"
#include "server/daemon.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace {

using namespace netdiag;
using Clock = std::chrono::steady_clock;

double cpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

double wallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The simulation as grouped synthetic agents publish it: records of each
// node to its group's batch, every batch out per telemetry second, times
// shifted so that the run ends now (it happened during the outage).
class Publisher final : public telemetry::RecordSink {
 public:
  Publisher(const topology::Topology& topo, bus::Connection& c, size_t agents, double shift)
      : topo_(topo), c_(c), group_(server::simAgentGroups(topo, agents)), shift_(shift) {
    batches_.resize(agents);
    seq_.resize(agents);
    for (size_t i = 0; i < agents; ++i) batches_[i].set_agent("sim-" + std::to_string(i));
  }
  void onProbe(const telemetry::ProbeRecord& r) override {
    telemetry::ProbeRecord s = r;
    s.t += shift_;
    proto::toWire(topo_, s, *at(topo_.port(r.src).node, r.t).add_probes());
    ++records_;
  }
  void onPort(const telemetry::PortRecord& r) override {
    telemetry::PortRecord s = r;
    s.t += shift_;
    proto::toWire(topo_, s, *at(topo_.port(r.port).node, r.t).add_ports());
    ++records_;
  }
  void onLldp(const telemetry::LldpRecord&) override {}
  // Sends what is left and waits for every acknowledgement; false on an error.
  bool finish() {
    flush();
    return complete() && failed_ == 0;
  }
  uint64_t records() const { return records_; }
  uint64_t messages() const { return messages_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t probes = 0;

 private:
  bool complete() {
    jsPubOptions o;
    jsPubOptions_Init(&o);
    o.MaxWait = 120000;
    return js_PublishAsyncComplete(c_.jetStream(), &o) == NATS_OK;
  }
  v1::Batch& at(topology::NodeId node, double t) {
    if (t >= flushed_at_ + 1) {
      flush();
      flushed_at_ = t;
    }
    return batches_[group_[node]];
  }
  void flush() {
    for (size_t i = 0; i < batches_.size(); ++i) {
      v1::Batch& b = batches_[i];
      if (b.probes_size() + b.ports_size() == 0) continue;
      b.set_epoch(1);
      b.set_seq(++seq_[i]);  // each agent its own sequence, as agents do
      probes += static_cast<uint64_t>(b.probes_size());
      const std::string body = b.SerializeAsString();
      const std::string subject = c_.options().subjects.batch(b.agent());
      const std::string id = bus::messageId(b.agent(), 1, b.seq());
      jsPubOptions o;
      jsPubOptions_Init(&o);
      o.MsgId = id.c_str();
      if (js_PublishAsync(c_.jetStream(), subject.c_str(), body.data(),
                          static_cast<int>(body.size()), &o) != NATS_OK) {
        ++failed_;
      }
      // Acknowledged in windows, so what waits for its ack stays bounded.
      if (++messages_ % 256 == 0 && !complete()) ++failed_;
      bytes_ += body.size();
      const std::string agent = b.agent();
      b.Clear();
      b.set_agent(agent);
    }
  }

  const topology::Topology& topo_;
  bus::Connection& c_;
  std::vector<uint32_t> group_;
  std::vector<v1::Batch> batches_;
  double shift_ = 0, flushed_at_ = -1e18;
  std::vector<uint64_t> seq_;
  uint64_t records_ = 0, messages_ = 0, bytes_ = 0, failed_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s TELEMETRY_S --url nats://HOST:PORT [--fabric SPEC] [--agents N]\n",
                 argv[0]);
    return 2;
  }
  std::string url,
      fabric = "rail:sus=50,hosts_per_su=32,rails=8,spines=32,leaf_uplinks=32,cores=16";
  size_t agents = 64;
  bool rebuild = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rebuild") {
      rebuild = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", a.c_str());
      return 2;
    }
    ++i;
    if (a == "--url") {
      url = argv[i];
    } else if (a == "--fabric") {
      fabric = argv[i];
    } else if (a == "--agents") {
      agents = std::strtoull(argv[i], nullptr, 10);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  sim::Scenario sc;
  sc.name = "catchup";
  sc.duration_s = std::atof(argv[1]);
  if (url.empty() || agents == 0 || !(sc.duration_s > 0) ||
      !sim::parseFabricSpec(fabric, sc.fabric).empty()) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  std::vector<topology::Diagnostic> errors;
  auto topo = sim::buildFabric(sc.fabric, errors);
  if (!topo) return 2;
  planner::Plan plan = planner::makePlan(*topo, sc.budget, {}, 1);

  const int64_t max_ack_pending =
      std::max<int64_t>(1024, 8 * static_cast<int64_t>(topo->nodeCount()));
  server::DaemonOptions o;
  o.grpc.address = "127.0.0.1:0";
  o.web_listen = "127.0.0.1:0";
  o.live.accept_sim_agents = agents;
  o.live.max_future_s = 60;
  o.bus.emplace();
  o.bus->bus.url = url;
  o.bus->bus.request_timeout_s = 20;
  o.bus->consumer.durable = "catchup";
  o.bus->consumer.max_ack_pending = max_ack_pending;
  o.bus->max_bytes = int64_t{32} << 30;
  o.bus->rebuild = false;  // the consumer's backlog is the whole outage
  o.log = [](const std::string& m) { std::fprintf(stderr, "analyzer: %s\n", m.c_str()); };
  std::string error;
  // 1. The stream and the analyzer's consumer exist, as the analyzer left
  // them (made here: an analyzer would also have put a tick of its clock
  // in the stream, ahead of the backdated records below).
  auto c = bus::Connection::open(o.bus->bus, &error);
  if (!c) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  for (int i = 0; i < 2000 && !c->connected(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  bus::StreamLimits limits = server::busLimits(*o.bus, o.live.engine.horizon_s, 0);
  if (error = bus::ensureStream(*c, limits); !error.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  bus::ConsumerOptions consumer = o.bus->consumer;
  consumer.start_back_s = o.live.engine.horizon_s;
  if (!bus::DurableConsumer::start(
          *c, consumer, [](std::unique_ptr<bus::Delivery>) {}, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }

  // 2. The outage's telemetry goes into the stream.
  auto simulator = sim::Simulator::create(*topo, sc, plan, {}, errors);
  if (!simulator) return 2;
  const double shift = std::floor((wallNow() - sc.duration_s - 5) / 5) * 5;
  Publisher pub(*topo, *c, agents, shift);
  const auto p0 = Clock::now();
  simulator->run(pub);
  if (!pub.finish()) {
    std::fprintf(stderr, "publishing failed\n");
    return 1;
  }
  const double publish_s = std::chrono::duration<double>(Clock::now() - p0).count();
  c.reset();

  // 3. The analyzer comes back and catches up; or, with --rebuild, a new
  // one replays the stream's last horizon before anything else.
  if (rebuild) {
    o.bus->consumer.durable = "new-replica";
    o.bus->rebuild = true;
  }
  const double cpu0 = cpuSeconds();
  const auto t0 = Clock::now();
  auto daemon = server::Daemon::start(*topo, o, &error);
  if (!daemon) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  while (daemon->analyzer().counters().probes + daemon->analyzer().counters().too_late <
         pub.probes) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (std::chrono::duration<double>(Clock::now() - t0).count() > 3600) break;
  }
  const double catchup_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu_s = cpuSeconds() - cpu0;
  const exporter::IngestCounters n = daemon->analyzer().counters();
  daemon.reset();

  const double records = static_cast<double>(pub.records());
  const double realtime = records / sc.duration_s;  // the fabric's records per second
  nlohmann::json out = {
      {"fabric", fabric},
      {"nodes", topo->nodeCount()},
      {"telemetry_s", sc.duration_s},
      {"agents", agents},
      {"mode", rebuild ? "rebuild (replay at start)" : "catch-up (durable consumer)"},
      {"records", pub.records()},
      {"messages", pub.messages()},
      {"bytes_per_record", static_cast<double>(pub.bytes()) / records},
      {"publish_s", publish_s},
      {"publish_messages_per_s", static_cast<double>(pub.messages()) / publish_s},
      {"publish_mb_per_s", static_cast<double>(pub.bytes()) / publish_s / 1e6},
      {"catchup_s", catchup_s},
      {"catchup_records_per_s", records / catchup_s},
      {"catchup_x_realtime", records / catchup_s / realtime},
      {"analyzer_cpu_s", cpu_s},
      {"analyzer_cpu_us_per_record", cpu_s / records * 1e6},
      {"x_realtime_per_core", records / cpu_s / realtime},
      {"probes_published", pub.probes},
      {"probes_ingested", n.probes},
      {"too_late", n.too_late},
  };
  std::printf("%s\n", out.dump(1).c_str());
  return n.probes == pub.probes ? 0 : 1;
}
