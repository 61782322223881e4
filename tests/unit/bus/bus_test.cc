// The agents' bus end to end on a real nats-server with JetStream
// (loopback; skipped where Debian's nats-server is not installed): the
// agent's BusUplink publishes into the stream, the analyzer daemon's
// durable consumer ingests and acknowledges, plans come by request/reply,
// and each side outlives the other's restart without losing or doubling a
// batch.

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "bus/connection.h"
#include "bus/stream.h"
#include "bus/tick.h"
#include "collector/agent.h"
#include "collector/bus_uplink.h"
#include "planner/plan.h"
#include "proto/convert.h"
#include "server/daemon.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "tests/unit/bus/bus_agents.h"
#include "tests/unit/bus/nats_server.h"
#include "tests/unit/collector/free_port.h"
#include "topology/generators.h"

namespace netdiag::server {
namespace {

using bus::testing::BusAgents;
using bus::testing::waitFor;
using bus::testing::wallNow;

using namespace std::chrono_literals;

topology::Topology smallFabric() {
  topology::LeafSpineParams p;
  p.spines = 2;
  p.leaves = 2;
  p.hosts_per_leaf = 2;
  return topology::generateLeafSpine(p);
}

// The first host and the port it probes from, and a second host port.
struct Hosts {
  std::string agent, src, dst, other;
};
Hosts hosts(const topology::Topology& topo) {
  Hosts h;
  for (topology::PortId p = 0; p < topo.portCount(); ++p) {
    const auto& node = topo.node(topo.port(p).node);
    if (!node.isHost()) continue;
    if (h.src.empty()) {
      h.src = topo.portRef(p);
      h.agent = node.name;
    } else if (node.name != h.agent && h.dst.empty()) {
      h.dst = topo.portRef(p);
      h.other = node.name;
    }
  }
  return h;
}

v1::Batch probeBatch(const Hosts& h) {
  v1::Batch b;
  v1::Probe& p = *b.add_probes();
  p.set_t(wallNow());
  p.set_src(h.src);
  p.set_dst(h.dst);
  p.set_flow(40000);
  p.set_window_s(5);
  p.set_sent(50);
  return b;
}

class Bus : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!bus::testing::natsServerInstalled()) {
      GTEST_SKIP() << "nats-server not installed (apt-get install nats-server)";
    }
    server_ = std::make_unique<bus::testing::NatsServer>();
    server_->start();
  }
  void TearDown() override {
    uplink_.reset();
    daemon_.reset();
    server_.reset();
  }

  bus::BusOptions busOptions(const std::string& userinfo = "") const {
    bus::BusOptions o;
    o.url = server_->url(userinfo);
    o.subjects = {"netdiag", "test"};
    o.request_timeout_s = 5;
    o.reconnect_wait_s = 0.1;
    return o;
  }
  std::unique_ptr<Daemon> startDaemon(const std::string& consumer = "analyzer",
                                      std::string* failed = nullptr,
                                      const std::string& userinfo = "") {
    DaemonOptions o;
    o.grpc.address = "127.0.0.1:0";
    o.web_listen = "127.0.0.1:0";
    o.tick_s = 0.1;
    o.delay_s = 0.2;
    o.bus.emplace();
    o.bus->bus = busOptions(userinfo);
    o.bus->bus.request_timeout_s = 20;  // the server may still be starting
    o.bus->consumer.durable = consumer;
    o.live.responder_port = collector::testing::freePort();
    o.log = [](const std::string& m) { std::cerr << "analyzer: " << m << '\n'; };
    std::string error;
    auto d = Daemon::start(topo_, o, &error);
    if (failed != nullptr) {
      *failed = error;
    } else {
      EXPECT_TRUE(d) << error;
    }
    return d;
  }
  collector::BusUplink& uplink(const std::string& agent, const std::string& userinfo = "") {
    collector::BusUplinkOptions o;
    o.bus = busOptions(userinfo);
    o.agent = agent;
    o.backoff_min_s = 0.05;
    o.backoff_max_s = 0.2;
    std::string error;
    uplink_ = collector::BusUplink::create(o, *spool_, &error);
    EXPECT_TRUE(uplink_) << error;
    return *uplink_;
  }
  std::string metrics(Daemon& d) {
    httplib::Client c("127.0.0.1", d.httpPort());
    auto r = c.Get("/metrics");
    return r ? r->body : "";
  }

  topology::Topology topo_ = smallFabric();
  Hosts h_ = hosts(topo_);
  std::unique_ptr<bus::testing::NatsServer> server_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<collector::Spool> spool_ = collector::makeMemorySpool(0);
  std::unique_ptr<collector::BusUplink> uplink_;
};

TEST_F(Bus, BatchesGoThroughTheStreamIntoTheEngineAndLeaveTheSpoolOnceStored) {
  daemon_ = startDaemon();
  ASSERT_TRUE(daemon_);
  auto& up = uplink(h_.agent);
  for (int i = 0; i < 20; ++i) up.send(probeBatch(h_));
  ASSERT_TRUE(waitFor([&] { return spool_->batches() == 0; })) << up.lastError();
  EXPECT_EQ(up.stats().acked, 20u);
  ASSERT_TRUE(waitFor([&] { return daemon_->analyzer().counters().batches == 20; }));
  EXPECT_EQ(daemon_->analyzer().counters().probes, 20u);
  ASSERT_TRUE(waitFor([&] {
    return metrics(*daemon_).find("netdiag_bus_messages_total{result=\"ingested\"} 20") !=
           std::string::npos;
  })) << metrics(*daemon_);
}

TEST_F(Bus, TheStreamHoldsBatchesWhileTheAnalyzerIsDownAndTheNextRebuildsFromItEachOnce) {
  daemon_ = startDaemon();
  ASSERT_TRUE(daemon_);
  auto& up = uplink(h_.agent);
  for (int i = 0; i < 10; ++i) up.send(probeBatch(h_));
  ASSERT_TRUE(waitFor([&] { return daemon_->analyzer().counters().batches == 10; }));
  daemon_.reset();  // stopped: what it took is acknowledged
  for (int i = 0; i < 5; ++i) up.send(probeBatch(h_));
  // Stored by the stream with no analyzer running: the spool empties.
  ASSERT_TRUE(waitFor([&] { return spool_->batches() == 0; })) << up.lastError();
  // The next analyzer replays the evidence horizon (all 15, the ten its
  // predecessor had included); its durable consumer then resumes after the
  // ten acknowledged and delivers the five again, which count once.
  daemon_ = startDaemon();
  ASSERT_TRUE(daemon_);
  ASSERT_TRUE(waitFor([&] {
    const auto c = daemon_->analyzer().counters();
    return c.batches == 15 && c.duplicate_batches == 5;
  })) << daemon_->analyzer().counters().batches
      << " " << daemon_->analyzer().counters().duplicate_batches;
  EXPECT_EQ(daemon_->analyzer().counters().probes, 15u);
}

TEST_F(Bus, TheAgentSpoolsWhileTheBusIsDownAndDeliversAfterItsRestart) {
  daemon_ = startDaemon();
  ASSERT_TRUE(daemon_);
  auto& up = uplink(h_.agent);
  for (int i = 0; i < 5; ++i) up.send(probeBatch(h_));
  ASSERT_TRUE(waitFor([&] { return daemon_->analyzer().counters().batches == 5; }));
  server_->stop();
  ASSERT_TRUE(waitFor([&] { return !up.stats().connected; }));
  for (int i = 0; i < 5; ++i) up.send(probeBatch(h_));
  EXPECT_EQ(spool_->batches(), 5u);  // nowhere to go
  server_->start();                  // same port, same store: stream and consumer survive
  ASSERT_TRUE(waitFor([&] { return spool_->batches() == 0; })) << up.lastError();
  ASSERT_TRUE(waitFor([&] { return daemon_->analyzer().counters().batches == 10; }));
  EXPECT_GE(up.stats().reconnects, 1u);
}

TEST_F(Bus, AnAgentStartedBeforeTheBusDeliversOnceItIsUp) {
  server_->stop();
  auto& up = uplink(h_.agent);  // returns at once: the connect goes on in the background
  up.send(probeBatch(h_));
  EXPECT_FALSE(up.stats().connected);
  server_->start();
  daemon_ = startDaemon();
  ASSERT_TRUE(daemon_);
  ASSERT_TRUE(waitFor([&] { return daemon_->analyzer().counters().batches == 1; }))
      << up.lastError();
  // The stream's ack reaches the agent on its own time (the analyzer may
  // take the batch first): then the spool lets it go.
  EXPECT_TRUE(waitFor([&] { return spool_->batches() == 0; })) << up.lastError();
}

TEST_F(Bus, WithoutAStreamTheAgentSaysSoAndKeepsItsBatches) {
  auto& up = uplink(h_.agent);
  up.send(probeBatch(h_));
  ASSERT_TRUE(waitFor([&] { return up.lastError().find("no stream") != std::string::npos; }))
      << up.lastError();
  EXPECT_EQ(spool_->batches(), 1u);
  daemon_ = startDaemon();  // creates the stream
  ASSERT_TRUE(daemon_);
  ASSERT_TRUE(waitFor([&] { return daemon_->analyzer().counters().batches == 1; }))
      << up.lastError();
}

TEST_F(Bus, ABatchOnAnotherAgentsSubjectOrNotABatchIsRefusedAndNeverRedelivered) {
  daemon_ = startDaemon();
  ASSERT_TRUE(daemon_);
  std::string error;
  auto c = bus::Connection::open(busOptions(), &error);
  ASSERT_TRUE(c) << error;
  ASSERT_TRUE(waitFor([&] { return c->connected(); }));
  auto publish = [&](const std::string& subject, const std::string& data) {
    jsPubAck* pa = nullptr;
    EXPECT_EQ(js_Publish(&pa, c->jetStream(), subject.c_str(), data.data(),
                         static_cast<int>(data.size()), nullptr, nullptr),
              NATS_OK);
    if (pa) jsPubAck_Destroy(pa);
  };
  v1::Batch spoofed = probeBatch(h_);
  spoofed.set_agent(h_.agent);  // its probes are the agent's own...
  spoofed.set_epoch(1);
  spoofed.set_seq(1);
  const bus::Subjects& s = busOptions().subjects;
  publish(s.batch(h_.other), spoofed.SerializeAsString());  // ...but on another's subject
  publish(s.batch(h_.agent), "\xff\xff not a batch");
  // As large as the server takes (its max_payload), and junk.
  publish(s.batch(h_.agent), std::string(static_cast<size_t>(c->maxPayload()) - 512, '\xff'));
  // Tick markers: one that is no time, one far beyond the analyzer's clock.
  publish(s.tick(), "soon");
  publish(s.tick(), bus::encodeTick(wallNow() + 86400));
  ASSERT_TRUE(waitFor([&] {
    const std::string m = metrics(*daemon_);
    return m.find("netdiag_bus_messages_total{result=\"refused\"} 2") != std::string::npos &&
           m.find("netdiag_bus_messages_total{result=\"malformed\"} 3") != std::string::npos;
  })) << metrics(*daemon_);
  EXPECT_EQ(daemon_->analyzer().counters().batches, 0u);
  EXPECT_EQ(daemon_->analyzer().counters().probes, 0u);
  EXPECT_GE(daemon_->analyzer().counters().not_authorized, 1u);
  // Terminated, not left to redeliver: a later genuine batch is the next
  // and only thing the consumer takes.
  auto& up = uplink(h_.agent);
  up.send(probeBatch(h_));
  ASSERT_TRUE(waitFor([&] { return daemon_->analyzer().counters().batches == 1; }));
  EXPECT_EQ(metrics(*daemon_).find("netdiag_bus_redeliveries_total 1"), std::string::npos);
}

TEST_F(Bus, PlansComeByRequestReplyAndOnlyOnTheirAgentsOwnSubject) {
  daemon_ = startDaemon();
  ASSERT_TRUE(daemon_);
  auto& up = uplink(h_.agent);
  std::string error;
  auto plan = up.fetchPlan(0, &error);
  ASSERT_TRUE(plan) << error;
  EXPECT_GT(plan->flows_size(), 0);
  for (const auto& f : plan->flows()) EXPECT_EQ(f.src().substr(0, f.src().find(':')), h_.agent);

  auto c = bus::Connection::open(busOptions(), &error);
  ASSERT_TRUE(c) << error;
  v1::PlanRequest other;
  other.set_agent(h_.other);
  const bus::Subjects& s = busOptions().subjects;
  EXPECT_FALSE(bus::request(*c, s.plan(h_.agent), other.SerializeAsString(), &error));
  EXPECT_NE(error.find("own subject"), std::string::npos) << error;
  v1::PlanRequest stranger;
  stranger.set_agent("no-such-node");
  EXPECT_FALSE(bus::request(*c, s.plan("no-such-node"), stranger.SerializeAsString(), &error));
  EXPECT_FALSE(error.empty());
}

TEST_F(Bus, TwoAnalyzersWithTheirOwnConsumersEachGetEveryBatchAndOneConsumerServesOne) {
  daemon_ = startDaemon("a");
  ASSERT_TRUE(daemon_);
  auto second = startDaemon("b");
  ASSERT_TRUE(second);
  std::string error;
  EXPECT_FALSE(startDaemon("a", &error));
  EXPECT_NE(error.find("in use by another analyzer"), std::string::npos) << error;
  auto& up = uplink(h_.agent);
  for (int i = 0; i < 7; ++i) up.send(probeBatch(h_));
  ASSERT_TRUE(waitFor([&] { return daemon_->analyzer().counters().batches == 7; }));
  ASSERT_TRUE(waitFor([&] { return second->analyzer().counters().batches == 7; }));
  second.reset();
}

TEST_F(Bus, ASpooledBatchOverTheServersBoundIsPublishedInPartsAndArrivesWhole) {
  daemon_ = startDaemon();
  ASSERT_TRUE(daemon_);
  // Spooled as is (by an agent whose bound was the gRPC one, 4 MiB): over
  // nats-server's default max_payload of 1 MiB.
  v1::Batch big;
  big.set_agent(h_.agent);
  big.set_epoch(99);
  big.set_seq(1);
  const v1::Probe one = probeBatch(h_).probes(0);
  for (int i = 0; i < 30000; ++i) *big.add_probes() = one;
  ASSERT_GT(big.ByteSizeLong(), size_t{1} << 20);
  spool_->push(big.SerializeAsString());
  auto& up = uplink(h_.agent);
  ASSERT_TRUE(waitFor([&] { return spool_->batches() == 0; })) << up.lastError();
  EXPECT_EQ(up.stats().split, 1u);
  EXPECT_GE(up.stats().acked, 2u);
  ASSERT_TRUE(waitFor([&] { return daemon_->analyzer().counters().probes == 30000; }))
      << daemon_->analyzer().counters().probes;
}

// What docs/security.md recommends: each agent's NATS user may publish only
// its own subjects. An agent that publishes as another node gets no ack
// (the server drops the message), so its batch stays in its spool, and the
// stream never holds it; the password never shows in what the uplink says.
TEST(BusPermissions, AnAgentsUserMayPublishOnlyItsOwnSubjects) {
  if (!bus::testing::natsServerInstalled()) GTEST_SKIP() << "nats-server not installed";
  bus::testing::NatsServer server;
  const topology::Topology topo = smallFabric();
  const Hosts h = hosts(topo);
  auto user = [](const std::string& node) {
    return "{user: " + node + ", password: pw-" + node +
           ", permissions: {publish: [\"netdiag.test.batch." + node + "\", \"netdiag.test.plan." +
           node + "\"], subscribe: \"_INBOX." + node + ".>\"}}";
  };
  server.start(
      "accounts { NETDIAG { jetstream: enabled, users: [\n"
      "{user: analyzer, password: pw-analyzer}\n" +
      user(h.agent) + "\n" + user(h.other) + "\n] } }");
  DaemonOptions o;
  o.grpc.address = "127.0.0.1:0";
  o.web_listen = "127.0.0.1:0";
  o.tick_s = 0.1;
  o.delay_s = 0.2;
  o.live.responder_port = collector::testing::freePort();
  o.bus.emplace();
  o.bus->bus.url = server.url("analyzer:pw-analyzer");
  o.bus->bus.subjects = {"netdiag", "test"};
  o.bus->bus.request_timeout_s = 20;
  std::string error;
  auto daemon = Daemon::start(topo, o, &error);
  ASSERT_TRUE(daemon) << error;

  auto open = [&](const std::string& agent, const std::string& password, collector::Spool& spool) {
    collector::BusUplinkOptions u;
    u.bus.url = server.url(h.agent + ":" + password);  // always the first host's user
    u.bus.subjects = {"netdiag", "test"};
    u.bus.request_timeout_s = 1;
    u.agent = agent;
    u.backoff_min_s = 0.05;
    u.backoff_max_s = 0.2;
    std::string e;
    auto up = collector::BusUplink::create(u, spool, &e);
    EXPECT_TRUE(up) << e;
    return up;
  };
  auto own_spool = collector::makeMemorySpool(0), spoof_spool = collector::makeMemorySpool(0);
  auto own = open(h.agent, "pw-" + h.agent, *own_spool);
  auto spoof = open(h.other, "pw-" + h.agent, *spoof_spool);  // h.agent's user, as h.other
  own->send(probeBatch(h));
  spoof->send(probeBatch(h));
  ASSERT_TRUE(waitFor([&] { return daemon->analyzer().counters().batches == 1; }));
  ASSERT_TRUE(waitFor([&] {
    return spoof->lastError().find("Not Permitted") != std::string::npos &&
           !spoof->stats().connected;
  })) << spoof->lastError();
  EXPECT_EQ(spoof_spool->batches(), 1u) << spoof->lastError();
  EXPECT_EQ(spoof->stats().acked, 0u);
  EXPECT_EQ(spoof->describe().find("pw-"), std::string::npos) << spoof->describe();
  // The plan subject too: h.agent's user cannot ask for h.other's plan.
  EXPECT_FALSE(spoof->fetchPlan(0, &error));
  std::string plan_error;
  EXPECT_TRUE(own->fetchPlan(0, &plan_error)) << plan_error;
  spoof.reset();
  own.reset();
  daemon.reset();
}

// A 3-server JetStream cluster on loopback with the stream replicated on
// all three (R3): one server killed while the agents stream loses no
// record. Publishes it did not acknowledge stay in the agents' spools and
// go to another server; the other replicas keep what was stored, and the
// analyzer's connection and consumer move on.
TEST(BusCluster, AServerKilledWhileStreamingLosesNoRecord) {
  if (!bus::testing::natsServerInstalled()) GTEST_SKIP() << "nats-server not installed";
  bus::testing::NatsCluster cluster;
  cluster.start();
  const topology::Topology topo = smallFabric();
  bus::BusOptions options;
  options.url = cluster.url();
  options.subjects = {"netdiag", "test"};
  options.request_timeout_s = 5;
  options.reconnect_wait_s = 0.1;
  DaemonOptions o;
  o.grpc.address = "127.0.0.1:0";
  o.web_listen = "127.0.0.1:0";
  o.tick_s = 0.1;
  o.live.max_future_s = 3600;  // the simulation runs ahead of the wall clock
  o.live.responder_port = collector::testing::freePort();
  o.bus.emplace();
  o.bus->bus = options;
  o.bus->replicas = 3;
  o.log = [](const std::string& m) { std::cerr << "analyzer: " << m << '\n'; };
  // The servers elect a JetStream leader after they start: until then the
  // stream cannot be made.
  std::unique_ptr<Daemon> daemon;
  std::string error;
  ASSERT_TRUE(waitFor([&] { return (daemon = Daemon::start(topo, o, &error)) != nullptr; }, 60s))
      << error;
  std::istringstream yaml(R"(name: quiet
duration_s: 90
window_s: 5
noise: {background_loss: 1.0e-4}
)");
  sim::ScenarioLoad load = sim::loadScenario(yaml, "quiet.yaml");
  ASSERT_TRUE(load.errors.empty());
  planner::Plan plan = planner::makePlan(topo, load.scenario.budget, {}, 1);
  std::vector<topology::Diagnostic> errors;
  auto simulator = sim::Simulator::create(topo, load.scenario, plan, {}, errors);
  ASSERT_TRUE(simulator);
  uint64_t probes = 0;
  {
    BusAgents agents(topo, options);
    agents.pauseAt(30, [&] {
      // The stream's leader: the server whose loss matters most.
      std::string err;
      auto c = bus::Connection::open(options, &err);
      ASSERT_TRUE(c) << err;
      ASSERT_TRUE(waitFor([&] { return c->connected(); }));
      jsStreamInfo* info = nullptr;
      ASSERT_EQ(js_GetStreamInfo(&info, c->jetStream(), "NETDIAG_TEST", nullptr, nullptr), NATS_OK);
      ASSERT_TRUE(info->Cluster != nullptr && info->Cluster->Leader != nullptr);
      const std::string leader = info->Cluster->Leader;
      EXPECT_EQ(info->Cluster->ReplicasLen, 2);  // and the leader: three copies
      jsStreamInfo_Destroy(info);
      c.reset();
      ASSERT_EQ(leader.size(), 2u);
      cluster.server(leader[1] - '0').stop(SIGKILL);
    });
    simulator->run(agents);
    ASSERT_TRUE(agents.finish(120s));
    probes = agents.probes();
  }
  ASSERT_GT(probes, 0u);
  EXPECT_TRUE(waitFor([&] { return daemon->analyzer().counters().probes == probes; }, 120s))
      << daemon->analyzer().counters().probes << " of " << probes;
  daemon.reset();
}

// What the rebuild is for: an analyzer that starts after another one had
// localized a gray link (a crash, an upgrade, a second replica) has that
// link's evidence at once, from the stream, and the same incident.
TEST_F(Bus, ANewAnalyzerRebuildsTheEvidenceOfALocalizedGrayLinkFromTheStream) {
  const std::filesystem::path db = std::filesystem::temp_directory_path() /
                                   ("netdiag_bus_rebuild_" + std::to_string(::getpid()) + ".db");
  std::filesystem::remove(db);
  // Four leaves: on two, a leaf's uplink and the spine's downlink to the
  // other leaf are crossed by the same flows and cannot be told apart.
  topology::LeafSpineParams params;
  params.spines = 2;
  params.leaves = 4;
  params.hosts_per_leaf = 4;
  const topology::Topology topo = topology::generateLeafSpine(params);
  std::unique_ptr<Daemon> daemon;  // after topo: it must go first, even on failure
  auto start = [&] {
    DaemonOptions o;
    o.grpc.address = "127.0.0.1:0";
    o.web_listen = "127.0.0.1:0";
    o.tick_s = 0.1;
    o.live.db_path = db.string();
    // The simulation streams 150 s of telemetry in a few wall seconds: its
    // clock runs that far ahead of the analyzer's, by design.
    o.live.max_future_s = 3600;
    o.live.responder_port = collector::testing::freePort();
    o.bus.emplace();
    o.bus->bus = busOptions();
    o.bus->bus.request_timeout_s = 20;
    std::string error;
    auto d = Daemon::start(topo, o, &error);
    EXPECT_TRUE(d) << error;
    return d;
  };
  daemon = start();
  ASSERT_TRUE(daemon);
  std::istringstream yaml(R"(name: gray
duration_s: 150
window_s: 5
noise: {background_loss: 1.0e-5, path_unknown: 0.3}
faults:
  - kind: link_loss
    link: {from: leaf, to: spine}
    loss: 0.03
    onset: 20
)");
  sim::ScenarioLoad load = sim::loadScenario(yaml, "gray.yaml");
  ASSERT_TRUE(load.errors.empty());
  planner::Plan plan = planner::makePlan(topo, load.scenario.budget, {}, 1);
  std::vector<topology::Diagnostic> errors;
  auto simulator = sim::Simulator::create(topo, load.scenario, plan, {}, errors);
  ASSERT_TRUE(simulator);
  const std::string faulty = simulator->truth().faults.at(0).link;
  uint64_t probes = 0;
  {
    BusAgents agents(topo, busOptions());
    simulator->run(agents);
    ASSERT_TRUE(agents.finish());
    probes = agents.probes();
  }
  auto locate = [&](Daemon& d) {
    httplib::Client c("127.0.0.1", d.httpPort());
    auto r = c.Get("/api/v1/locate");
    return r ? nlohmann::json::parse(r->body) : nlohmann::json::object();
  };
  auto localizedId = [&](Daemon& d) {
    for (const auto& i : locate(d).value("incidents", nlohmann::json::array())) {
      if (i.value("link", "") == faulty && !i["localized_at"].is_null()) {
        return i["id"].get<std::string>();
      }
    }
    return std::string();
  };
  auto lossRatio = [&](Daemon& d) {
    httplib::Client c("127.0.0.1", d.httpPort());
    auto r = c.Get("/api/v1/links/" + faulty);
    if (!r || r->status != 200) return 0.0;
    return nlohmann::json::parse(r->body).value("loss_ratio", 0.0);
  };
  std::string id;
  ASSERT_TRUE(waitFor([&] { return !(id = localizedId(*daemon)).empty(); }))
      << locate(*daemon).dump(1) << " probes " << daemon->analyzer().counters().probes
      << " too_late " << daemon->analyzer().counters().too_late << " future "
      << daemon->analyzer().counters().future << " not_authorized "
      << daemon->analyzer().counters().not_authorized << " malformed "
      << daemon->analyzer().counters().malformed << " ports " << daemon->analyzer().counters().ports
      << " loss " << lossRatio(*daemon);
  EXPECT_GT(lossRatio(*daemon), 0.01);
  ASSERT_TRUE(waitFor([&] { return daemon->analyzer().counters().probes == probes; }));
  daemon.reset();

  // No agent sends anything now: what the next analyzer knows of the link
  // comes from the stream.
  daemon = start();
  ASSERT_TRUE(daemon);
  EXPECT_TRUE(waitFor([&] { return daemon->analyzer().counters().probes == probes; }))
      << daemon->analyzer().counters().probes << " of " << probes;
  ASSERT_TRUE(waitFor([&] { return lossRatio(*daemon) > 0.01; })) << lossRatio(*daemon);
  ASSERT_TRUE(waitFor([&] { return localizedId(*daemon) == id; })) << locate(*daemon).dump(1);
  daemon.reset();
  std::filesystem::remove(db);
}

// Replicas (docs/operations.md, "Two analyzers on one stream"): two
// analyzers, each with its own durable consumer and database, read one
// stream and make the same decisions, the same incident ids, kinds, links
// and times, because their engines' clocks are the stream's. One of them
// is restarted while the gray link is open and still agrees: on the
// incident it had, and on what both decide after (the link resolving).
TEST_F(Bus, TwoAnalyzersOnOneStreamDecideTheSameAlsoAcrossARestartOfOne) {
  auto dbPath = [](const char* name) {
    auto p = std::filesystem::temp_directory_path() /
             ("netdiag_bus_replica_" + std::string(name) + std::to_string(::getpid()) + ".db");
    std::filesystem::remove(p);
    return p.string();
  };
  const std::string db_a = dbPath("a"), db_b = dbPath("b");
  topology::LeafSpineParams params;
  params.spines = 2;
  params.leaves = 4;
  params.hosts_per_leaf = 4;
  const topology::Topology topo = topology::generateLeafSpine(params);
  std::unique_ptr<Daemon> a, b;  // after topo: they must go first, even on failure
  auto start = [&](const std::string& consumer, const std::string& db) {
    DaemonOptions o;
    o.grpc.address = "127.0.0.1:0";
    o.web_listen = "127.0.0.1:0";
    o.tick_s = 0.1;
    o.live.db_path = db;
    o.live.max_future_s = 3600;  // the simulation runs ahead of the wall clock
    o.live.responder_port = collector::testing::freePort();
    o.bus.emplace();
    o.bus->bus = busOptions();
    o.bus->bus.request_timeout_s = 20;
    o.bus->consumer.durable = consumer;
    std::string error;
    auto d = Daemon::start(topo, o, &error);
    EXPECT_TRUE(d) << error;
    return d;
  };
  a = start("a", db_a);
  b = start("b", db_b);
  ASSERT_TRUE(a && b);
  std::istringstream yaml(R"(name: gray
duration_s: 330
window_s: 5
noise: {background_loss: 1.0e-5, path_unknown: 0.3}
faults:
  - kind: link_loss
    link: {from: leaf, to: spine}
    loss: 0.03
    onset: 20
    end: 150
)");
  sim::ScenarioLoad load = sim::loadScenario(yaml, "gray.yaml");
  ASSERT_TRUE(load.errors.empty());
  planner::Plan plan = planner::makePlan(topo, load.scenario.budget, {}, 1);
  std::vector<topology::Diagnostic> errors;
  auto simulator = sim::Simulator::create(topo, load.scenario, plan, {}, errors);
  ASSERT_TRUE(simulator);
  const std::string faulty = simulator->truth().faults.at(0).link;
  auto incidents = [](Daemon& d) {
    httplib::Client c("127.0.0.1", d.httpPort());
    auto r = c.Get("/api/v1/incidents");
    if (!r || r->status != 200) return nlohmann::json::array();
    return nlohmann::json::parse(r->body).value("incidents", nlohmann::json::array());
  };
  auto localized = [&](Daemon& d) {
    for (const auto& i : incidents(d)) {
      if (i.value("link", "") == faulty && !i["localized_at"].is_null()) return i;
    }
    return nlohmann::json();
  };
  // The same incidents: ids, kinds, links; each time equal within a pass.
  auto agree = [&](const nlohmann::json& x, const nlohmann::json& y, std::string* why) {
    std::map<std::string, nlohmann::json> by_id;
    for (const auto& i : y) by_id[i["id"].get<std::string>()] = i;
    if (x.size() != y.size()) {
      *why = "different counts";
      return false;
    }
    for (const auto& i : x) {
      auto it = by_id.find(i["id"].get<std::string>());
      if (it == by_id.end()) {
        *why = i["id"].get<std::string>() + " only on one";
        return false;
      }
      const nlohmann::json& j = it->second;
      if (i.value("kind", "") != j.value("kind", "") ||
          i.value("link", "") != j.value("link", "")) {
        *why = i["id"].get<std::string>() + " differs in kind or link";
        return false;
      }
      for (const char* t : {"opened_at", "localized_at", "resolved_at"}) {
        if (i[t].is_null() != j[t].is_null() ||
            (!i[t].is_null() && std::abs(i[t].get<double>() - j[t].get<double>()) > 5)) {
          *why = i["id"].get<std::string>() + " differs in " + t;
          return false;
        }
      }
    }
    return true;
  };
  std::string id, why;
  uint64_t probes = 0;
  {
    BusAgents agents(topo, busOptions());
    agents.pauseAt(120, [&] {
      // Both localized the link, as the same incident.
      ASSERT_TRUE(waitFor([&] { return !localized(*a).is_null() && !localized(*b).is_null(); }))
          << incidents(*a).dump(1) << incidents(*b).dump(1);
      id = localized(*a)["id"].get<std::string>();
      EXPECT_EQ(localized(*b)["id"], id);
      // One restarts mid-fault: it keeps the incident and rebuilds the rest.
      b.reset();
      b = start("b", db_b);
      ASSERT_TRUE(b);
      ASSERT_TRUE(waitFor([&] { return localized(*b).value("id", "") == id; }))
          << incidents(*b).dump(1);
    });
    simulator->run(agents);
    ASSERT_TRUE(agents.finish());
    probes = agents.probes();
  }
  ASSERT_FALSE(id.empty());
  // Both take every record and see the link resolve after the fault ended.
  for (Daemon* d : {a.get(), b.get()}) {
    ASSERT_TRUE(waitFor([&] { return d->analyzer().counters().probes >= probes; }))
        << d->analyzer().counters().probes << " of " << probes;
    // (It resolves some 100 s of telemetry after the fault ended, well
    // before the simulation's end.)
    ASSERT_TRUE(waitFor([&] { return !localized(*d)["resolved_at"].is_null(); }))
        << (d == a.get() ? "a " : "b ") << incidents(*d).dump(1);
  }
  EXPECT_EQ(a->analyzer().counters().probes, probes);
  // What each took: the same, and none of it too late (the agents send in
  // time order, second by second).
  auto took = [](Daemon& d) {
    const auto c = d.analyzer().counters();
    return "batches " + std::to_string(c.batches) + ", probes " + std::to_string(c.probes) +
           ", late " + std::to_string(c.late) + ", too_late " + std::to_string(c.too_late);
  };
  EXPECT_EQ(a->analyzer().counters().too_late, 0u) << took(*a);
  EXPECT_TRUE(waitFor([&] { return agree(incidents(*a), incidents(*b), &why); }))
      << why << "\na: " << took(*a) << "\nb: " << took(*b) << "\n"
      << incidents(*a).dump(1) << "\n"
      << incidents(*b).dump(1);
  a.reset();
  b.reset();
  std::filesystem::remove(db_a);
  std::filesystem::remove(db_b);
}

// The whole agent with `bus` set: its plan by request/reply, its port
// counters (a fake sysfs) through the stream into the analyzer.
TEST_F(Bus, AnAgentWithBusSetGetsItsPlanAndDeliversItsCountersThroughTheStream) {
  daemon_ = startDaemon();
  ASSERT_TRUE(daemon_);
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("netdiag-bus-agent-" + std::to_string(::getpid()));
  const std::string port = h_.src.substr(h_.src.find(':') + 1);
  const fs::path eth = dir / "sys/class/net" / port;
  fs::create_directories(eth / "statistics");
  std::ofstream(eth / "operstate") << "up\n";
  for (const char* f : {"rx_packets", "tx_packets", "rx_errors", "rx_dropped", "tx_dropped"}) {
    std::ofstream(eth / "statistics" / f) << "5\n";
  }
  collector::AgentConfig cfg;
  cfg.node = h_.agent;
  cfg.bus = server_->url();
  cfg.bus_fabric = "test";
  cfg.metrics_address = "";
  cfg.sysfs_root = (dir / "sys").string();
  cfg.batch_interval = 0.1;
  cfg.counters_interval = 0.1;
  cfg.plan_refresh = 3600;  // one plan request in this test
  cfg.responder_address = "127.0.0.1";
  cfg.lldp = false;
  std::string error;
  auto agent = collector::Agent::create(cfg, nullptr, &error);
  ASSERT_TRUE(agent) << error;
  std::thread runner([&] { agent->run(); });
  const bool arrived = waitFor([&] { return daemon_->analyzer().counters().ports >= 2; });
  agent->requestStop();
  runner.join();
  std::error_code ec;
  fs::remove_all(dir, ec);
  EXPECT_TRUE(arrived) << daemon_->analyzer().counters().ports;
  EXPECT_NE(metrics(*daemon_).find("netdiag_bus_plan_requests_total 1"), std::string::npos);
  EXPECT_EQ(daemon_->analyzer().counters().not_authorized, 0u);
}

}  // namespace
}  // namespace netdiag::server
