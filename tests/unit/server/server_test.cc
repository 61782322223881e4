// The analyzer daemon in-process, on real sockets (127.0.0.1, port 0):
// de-duplication, malformed input, the HTTP API, plans, a simulated gray
// link streamed over synthetic agents, and incidents surviving a restart.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "analyzer/persist.h"
#include "collector/uplink.h"
#include "loadgen/sim_agents.h"
#include "planner/plan.h"
#include "proto/convert.h"
#include "server/authority.h"
#include "server/daemon.h"
#include "server/dedup.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "store/migrations.h"
#include "topology/generators.h"

namespace netdiag::server {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

topology::Topology smallFabric() {
  topology::LeafSpineParams p;
  p.spines = 2;
  p.leaves = 4;
  p.hosts_per_leaf = 4;
  return topology::generateLeafSpine(p);
}

class TempDir {
 public:
  TempDir() {
    static int n = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("netdiag_server_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

double wallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A valid probe between the first two host ports, on its known path.
v1::Probe validProbe(const topology::Topology& topo, double t) {
  std::vector<topology::PortId> hostPorts;
  for (topology::PortId p = 0; p < topo.portCount() && hostPorts.size() < 2; ++p) {
    if (topo.node(topo.port(p).node).isHost()) hostPorts.push_back(p);
  }
  v1::Probe m;
  m.set_t(t);
  m.set_src(topo.portRef(hostPorts[0]));
  m.set_dst(topo.portRef(hostPorts[1]));
  m.set_flow(40000);
  m.set_window_s(5);
  m.set_sent(50);
  m.set_lost(0);
  return m;
}

// The node validProbe() probes from: the agent that may send it.
std::string prober(const topology::Topology& topo) {
  const std::string src = validProbe(topo, 0).src();
  return src.substr(0, src.find(':'));
}

// Another host than prober(), and one of its ports.
std::string otherHost(const topology::Topology& topo) {
  for (topology::NodeId n = 0; n < topo.nodeCount(); ++n) {
    if (topo.node(n).isHost() && topo.node(n).name != prober(topo)) return topo.node(n).name;
  }
  return {};
}
std::string portOf(const topology::Topology& topo, const std::string& node) {
  for (topology::PortId p = 0; p < topo.portCount(); ++p) {
    if (topo.node(topo.port(p).node).name == node) return topo.portRef(p);
  }
  return {};
}

template <typename Pred>
bool waitFor(Pred pred, std::chrono::milliseconds limit = 20s) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

// ---- de-duplication ---------------------------------------------------------

TEST(Dedup, MarksAndRecognizesBatches) {
  Deduplicator d(8);
  EXPECT_FALSE(d.seen("h0", 1, 1));
  d.mark("h0", 1, 1);
  EXPECT_TRUE(d.seen("h0", 1, 1));
  EXPECT_FALSE(d.seen("h0", 1, 2));
  EXPECT_FALSE(d.seen("h1", 1, 1)) << "agents are separate";
  EXPECT_FALSE(d.seen("h0", 2, 1)) << "epochs are separate";
  d.mark("h0", 1, 3);  // out of order
  EXPECT_TRUE(d.seen("h0", 1, 3));
  EXPECT_FALSE(d.seen("h0", 1, 2));
  d.mark("h0", 1, 2);
  EXPECT_EQ(d.heldSeqs(), 0u) << "a contiguous run folds into the floor";
}

TEST(Dedup, MemoryIsBoundedPerAgent) {
  Deduplicator d(16, 3);
  d.mark("h0", 1, 1);
  // Seqs 2..9 never come (the agent's spool dropped them).
  for (uint64_t s = 10; s < 10000; ++s) d.mark("h0", 1, s);
  EXPECT_LE(d.heldSeqs(), 16u);
  EXPECT_TRUE(d.seen("h0", 1, 9999));
  EXPECT_TRUE(d.seen("h0", 1, 500));
  for (uint64_t e = 2; e < 100; ++e) d.mark("h0", e, 1);
  EXPECT_TRUE(d.seen("h0", 99, 1));
  EXPECT_FALSE(d.seen("h0", 1, 1)) << "a forgotten epoch is new again (at-least-once)";
  EXPECT_LE(d.heldSeqs(), 16u * 3);
}

// Issue #15: eight batches with higher epochs pushed an agent's real epoch
// out of the window, and every real batch after that read as a duplicate
// (acked, dropped from the spool, never ingested); a wall clock stepped back
// after 8 starts did the same. Epochs are names now, not times: a smaller
// one is a new start, not an old one.
TEST(Dedup, NoNumberOfOtherEpochsMakesAnAgentsBatchesReadAsDuplicates) {
  Deduplicator d(64, 8);
  d.mark("host0", 500, 1);
  for (uint64_t e = 1000; e < 1008; ++e) d.mark("host0", e, 1);  // 8 higher epochs
  EXPECT_FALSE(d.seen("host0", 500, 2));
  EXPECT_FALSE(d.seen("host0", 400, 1)) << "a start whose epoch is below the others is new";
  d.mark("host0", 400, 1);
  EXPECT_TRUE(d.seen("host0", 400, 1));
  EXPECT_FALSE(d.seen("host0", 400, 2));
  // The epoch in use stays: the least recently marked one is forgotten.
  for (uint64_t e = 2000; e < 2006; ++e) d.mark("host0", e, 1);
  d.mark("host0", 400, 2);
  for (uint64_t e = 3000; e < 3004; ++e) d.mark("host0", e, 1);
  EXPECT_TRUE(d.seen("host0", 400, 2));
}

// ---- ingest ----------------------------------------------------------------

struct Live {
  topology::Topology topo = smallFabric();
  std::unique_ptr<LiveAnalyzer> analyzer;
  Live() {
    std::string error;
    analyzer = LiveAnalyzer::create(topo, {}, nullptr, wallNow, &error, nullptr);
    EXPECT_TRUE(analyzer) << error;
  }
};

// The analyzer serves the sized plan: on a fabric whose base rate misses the
// coverage target it raises every port's rate within the cap.
TEST(Plan, ServesTheRateTheCoverageTargetNeedsWithinTheCap) {
  topology::Topology topo = topology::generateLeafSpine(
      {.spines = 3, .leaves = 4, .hosts_per_leaf = 2, .nics_per_host = 1, .parallel = 2});
  for (double cap : {planner::kDefaultMaxProbesPerSecond, 120.0}) {
    SCOPED_TRACE(cap);
    LiveOptions o;
    o.sizing.max_probes_per_second = cap;
    std::string error;
    auto analyzer = LiveAnalyzer::create(topo, o, nullptr, wallNow, &error, nullptr);
    ASSERT_TRUE(analyzer) << error;
    const planner::Sizing& s = analyzer->planSizing();
    EXPECT_GT(s.below_at_base, 0u);
    EXPECT_TRUE(s.raised());
    EXPECT_LE(s.served_probes_per_second, cap);
    EXPECT_EQ(s.capped(), s.below > 0);
    auto plan = analyzer->plan("host1", &error);
    ASSERT_TRUE(plan) << error;
    ASSERT_GT(plan->flows_size(), 0);
    EXPECT_NEAR(plan->probes_per_second_per_flow() * plan->flows_size(), s.served_probes_per_second,
                1e-6);
  }
}

TEST(Plan, FocusesOnTheLinksOfAnUnlocalizedIncidentUntilItCloses) {
  topology::Topology topo = topology::generateLeafSpine(
      {.spines = 2, .leaves = 4, .hosts_per_leaf = 4, .nics_per_host = 1, .parallel = 2});
  // Two parallel uplinks of leaf1 to spine1 the evidence could not tell
  // apart, left open by an earlier run.
  std::vector<topology::DirLinkId> group;
  for (topology::DirLinkId d = 0; d < topo.dirLinkCount(); ++d) {
    if (topo.node(topo.dirSrcNode(d)).name == "leaf1" &&
        topo.node(topo.dirDstNode(d)).name == "spine1")
      group.push_back(d);
  }
  ASSERT_EQ(group.size(), 2u);
  TempDir dir;
  const std::string db = dir.file("netdiag.db");
  {
    auto opened = store::openAndMigrate(db);
    ASSERT_TRUE(opened) << opened.message();
    analyzer::Incident i;
    i.id = "inc-7";
    i.kind = analyzer::IncidentKind::kLinkLoss;
    i.link = group[0];
    i.opened_at = 1000;
    i.confidence = 0.5;
    i.candidates = {{.link = group[1]}};
    ASSERT_TRUE(store::upsertIncidents(*opened, {analyzer::toRow(topo, i, 1000)}));
  }
  auto flowsOf = [&](LiveAnalyzer& a) {
    std::map<std::string, std::set<std::string>> peers;  // per source port
    size_t flows = 0;
    for (topology::NodeId n = 0; n < topo.nodeCount(); ++n) {
      if (!topo.node(n).isHost()) continue;
      std::string error;
      auto p = a.plan(topo.node(n).name, &error);
      EXPECT_TRUE(p) << error;
      if (!p) continue;
      flows += p->flows_size();
      for (const auto& f : p->flows()) peers[f.src()].insert(f.dst());
    }
    return std::pair{flows, peers};
  };
  std::atomic<double> now{1000};
  std::string error;
  LiveOptions o;
  o.focus_links = 0;
  auto base = LiveAnalyzer::create(topo, o, nullptr, wallNow, &error, nullptr);
  ASSERT_TRUE(base) << error;
  const auto [base_flows, base_peers] = flowsOf(*base);
  o.focus_links = analyzer::kMaxUnsettledLinks;
  o.db_path = db;
  o.engine.resolve_after_s = 10;
  auto registry = std::make_shared<prometheus::Registry>();
  auto a = LiveAnalyzer::create(
      topo, o, registry, [&] { return now.load(); }, &error, nullptr);
  auto gauge = [&](const std::string& name) {
    for (const auto& family : registry->Collect()) {
      if (family.name == name && !family.metric.empty()) return family.metric[0].gauge.value;
    }
    return -1.0;
  };
  ASSERT_TRUE(a) << error;

  LiveAnalyzer::ServedPlan focused = a->servedPlan();
  std::sort(group.begin(), group.end());
  EXPECT_EQ(focused.focus, group);
  EXPECT_GT(focused.flows_added, 0u);
  const auto [more_flows, more_peers] = flowsOf(*a);
  EXPECT_EQ(more_flows, base_flows + focused.flows_added);
  EXPECT_EQ(more_peers, base_peers) << "flows only between ports already paired";
  EXPECT_EQ(gauge("netdiag_plan_version"), static_cast<double>(focused.version));
  EXPECT_EQ(gauge("netdiag_plan_focus_links"), 2);
  EXPECT_EQ(gauge("netdiag_plan_focus_flows_added"), static_cast<double>(focused.flows_added));

  // Unseen by the evidence, the restored incident resolves: the base again,
  // under a newer version.
  for (double t = 1005; t <= 1030; t += 5) {
    now = t + o.delay_s;
    a->tick(t);
  }
  ASSERT_TRUE(a->snapshot()->report.incidents.at(0).resolved_at);
  LiveAnalyzer::ServedPlan after = a->servedPlan();
  EXPECT_GT(after.version, focused.version);
  EXPECT_TRUE(after.focus.empty());
  EXPECT_EQ(flowsOf(*a).first, base_flows);
  EXPECT_EQ(gauge("netdiag_plan_focus_links"), 0);
}

// Issue #14: a link netdiag's drain holds out leaves the planner's graph
// too: the served plan is made again around it, and again once it is back.
TEST(Plan, IsMadeAgainAroundTheLinksNetdiagDrains) {
  topology::Topology topo = topology::generateLeafSpine(
      {.spines = 2, .leaves = 3, .hosts_per_leaf = 2, .nics_per_host = 1, .parallel = 1});
  LiveOptions o;
  o.focus_links = 0;
  std::string error;
  auto a = LiveAnalyzer::create(topo, o, nullptr, wallNow, &error, nullptr);
  ASSERT_TRUE(a) << error;
  auto flows = [&] {
    size_t n = 0;
    for (const char* h : {"host1", "host3", "host5"}) {
      auto p = a->plan(h, &error);
      EXPECT_TRUE(p) << error;
      n += p ? static_cast<size_t>(p->flows_size()) : 0;
    }
    return n;
  };
  const uint64_t v0 = a->servedPlan().version;
  const size_t base_flows = flows();
  EXPECT_EQ(a->servedPlan().version, v0) << "nothing changed: the same plan";
  const auto uplink = topo.findDirLink("leaf1:swp3->spine1:swp1");
  ASSERT_TRUE(uplink);
  analyzer::DrainState drained;
  drained.out = {topology::Topology::linkOf(*uplink)};
  a->setDrained(drained);
  const uint64_t v1 = a->servedPlan().version;
  EXPECT_GT(v1, v0);
  EXPECT_EQ(flows(), base_flows) << "an uplink with a sibling: every pair still has a path";
  a->setDrained({});
  EXPECT_GT(a->servedPlan().version, v1);
  EXPECT_EQ(flows(), base_flows);
}

TEST(Ingest, MalformedRecordsAreNamedAndCountedAndTheRestIngested) {
  Live live;
  const double now = wallNow();
  v1::Batch b;
  b.set_agent(prober(live.topo));
  b.set_epoch(1);
  b.set_seq(1);
  *b.add_probes() = validProbe(live.topo, now);
  v1::Probe* unknown = b.add_probes();
  *unknown = validProbe(live.topo, now);
  unknown->set_src("nosuch:eth9");
  v1::Probe* lossy = b.add_probes();
  *lossy = validProbe(live.topo, now);
  lossy->set_lost(99);
  v1::Probe* nan = b.add_probes();
  *nan = validProbe(live.topo, std::nan(""));
  v1::Probe* future = b.add_probes();
  *future = validProbe(live.topo, now + 86400);
  v1::PortCounters* port = b.add_ports();
  port->set_t(now);
  port->set_port("host0:nope");
  v1::LldpNeighbor* lldp = b.add_lldp();
  lldp->set_t(now);
  lldp->set_port(portOf(live.topo, prober(live.topo)));

  BatchResult r = live.analyzer->ingest(b);
  EXPECT_FALSE(r.duplicate);
  EXPECT_EQ(r.accepted, 1u);
  ASSERT_EQ(r.errors.size(), 6u);
  std::string all;
  for (auto& e : r.errors) all += e + "\n";
  EXPECT_NE(all.find("probes[1]: unknown src port \"nosuch:eth9\""), std::string::npos) << all;
  EXPECT_NE(all.find("probes[2]: 'lost' > 'sent'"), std::string::npos) << all;
  EXPECT_NE(all.find("probes[3]"), std::string::npos) << all;
  EXPECT_NE(all.find("probes[4]: 't' is 86"), std::string::npos) << all;
  EXPECT_NE(all.find("s ahead of the analyzer's clock"), std::string::npos) << all;
  EXPECT_NE(all.find("ports[0]: unknown port"), std::string::npos) << all;
  EXPECT_NE(all.find("lldp[0]: empty 'neighbor'"), std::string::npos) << all;
  EXPECT_EQ(r.future, 1u);
  exporter::IngestCounters c = live.analyzer->counters();
  EXPECT_EQ(c.malformed, 5u);
  EXPECT_EQ(c.future, 1u);
  EXPECT_EQ(c.batches, 1u);
  EXPECT_EQ(c.probes, 1u);
  auto agents = live.analyzer->agents();
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0].malformed, 5u);
  EXPECT_EQ(agents[0].future, 1u);

  v1::Batch anonymous = b;
  anonymous.clear_agent();
  r = live.analyzer->ingest(anonymous);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("agent"), std::string::npos);
}

TEST(Ingest, PortIdsCountOnlyUnderTheAnalyzersTopologyAndMismatchesAreCounted) {
  Live live;
  const double now = wallNow();
  const uint64_t own = live.analyzer->topologyFingerprint();
  EXPECT_EQ(own, proto::topologyFingerprint(live.topo));
  const telemetry::ProbeRecord named = [&] {
    v1::Batch one;
    *one.add_probes() = validProbe(live.topo, now);
    proto::Decoded d;
    EXPECT_TRUE(proto::decode(one, proto::Resolver(live.topo), d).empty());
    return d.probes.at(0);
  }();
  v1::Batch b;
  b.set_agent(prober(live.topo));
  b.set_epoch(1);
  b.set_seq(1);
  b.set_topology(own);
  proto::toWire(live.topo, named, *b.add_probes(), /*ids=*/true);
  BatchResult r = live.analyzer->ingest(b);
  EXPECT_TRUE(r.errors.empty()) << r.errors[0];
  EXPECT_EQ(r.accepted, 1u);

  b.set_seq(2);
  b.set_topology(own ^ 1);  // another fabric's ids: the record has no names to fall back on
  r = live.analyzer->ingest(b);
  EXPECT_EQ(r.accepted, 0u);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("given only as a port id"), std::string::npos) << r.errors[0];
  exporter::IngestCounters c = live.analyzer->counters();
  EXPECT_EQ(c.port_id_mismatch, 1u);
  EXPECT_EQ(c.malformed, 1u);
  EXPECT_EQ(c.probes, 1u);
}

TEST(Ingest, RandomBytesNeverCrash) {
  Live live;
  std::mt19937_64 rng(42);
  v1::Batch good;
  good.set_agent(prober(live.topo));
  *good.add_probes() = validProbe(live.topo, wallNow());
  const std::string base = good.SerializeAsString();
  size_t parsed = 0;
  std::atomic<size_t> answered{0};
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = base;
    // Flip, insert and truncate: mostly still-parsable messages with odd fields.
    for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    if (rng() % 4 == 0) bytes.resize(rng() % bytes.size());
    v1::Batch b;
    if (!b.ParseFromString(bytes)) continue;
    ++parsed;
    b.set_seq(static_cast<uint64_t>(i) + 1);
    // Not waiting for each ack: a mutated agent name may be another node
    // with nothing to say, whose silence holds acks for --delay.
    live.analyzer->submit(b, [&answered](BatchResult) { ++answered; });
  }
  EXPECT_GT(parsed, 100u);
  live.analyzer->flush();
  EXPECT_EQ(answered.load(), parsed) << "every batch answered once";
  live.analyzer->tick(wallNow());
  (void)live.analyzer->locate();
}

// ---- the daemon on real sockets --------------------------------------------

struct RunningDaemon {
  topology::Topology topo = smallFabric();
  std::unique_ptr<Daemon> daemon;
  std::vector<std::string> logs;
  std::mutex logs_mu;
  std::function<double()> clock;  // empty: the system clock
  double max_future_s = 60;
  std::function<void(DaemonOptions&)> tweak;  // more options (TLS, collectors, ...)
  // The daemon goes first: its threads log into `logs` until it stops.
  ~RunningDaemon() { daemon.reset(); }

  void start(const std::string& db = "") {
    DaemonOptions o;
    o.grpc.address = "127.0.0.1:0";
    o.web_listen = "127.0.0.1:0";
    if (tweak) tweak(o);
    o.live.db_path = db;
    o.live.max_future_s = max_future_s;
    o.clock = clock;
    o.tick_s = 0.1;
    o.log = [this](const std::string& m) {
      std::lock_guard lk(logs_mu);
      logs.push_back(m);
    };
    std::string error;
    daemon = Daemon::start(topo, o, &error);
    ASSERT_TRUE(daemon) << error;
  }
  std::string grpcAddress() const { return "127.0.0.1:" + std::to_string(daemon->grpcPort()); }
  httplib::Client http() const {
    httplib::Client c("127.0.0.1", daemon->httpPort());
    c.set_read_timeout(10, 0);
    return c;
  }
};

TEST(Daemon, DuplicateAndReplayedBatchesCountOnce) {
  RunningDaemon d;
  d.start();
  auto channel = grpc::CreateChannel(d.grpcAddress(), grpc::InsecureChannelCredentials());
  auto stub = v1::Collector::NewStub(channel);
  v1::Batch b;
  b.set_agent(prober(d.topo));
  b.set_epoch(77);
  b.set_seq(1);
  *b.add_probes() = validProbe(d.topo, wallNow());

  std::vector<bool> dup;
  for (int stream_no = 0; stream_no < 2; ++stream_no) {  // the second is the "reconnect"
    grpc::ClientContext ctx;
    auto stream = stub->Stream(&ctx);
    for (int k = 0; k < 2; ++k) {
      ASSERT_TRUE(stream->Write(b));
      v1::Ack ack;
      ASSERT_TRUE(stream->Read(&ack));
      EXPECT_EQ(ack.epoch(), 77u);
      EXPECT_EQ(ack.seq(), 1u);
      dup.push_back(ack.duplicate());
    }
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  EXPECT_EQ(dup, (std::vector<bool>{false, true, true, true}));
  exporter::IngestCounters c = d.daemon->analyzer().counters();
  EXPECT_EQ(c.batches, 1u);
  EXPECT_EQ(c.duplicate_batches, 3u);
  EXPECT_EQ(c.probes, 1u);
  auto agents = d.daemon->analyzer().agents();
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0].agent, prober(d.topo));
  EXPECT_EQ(agents[0].batches, 1u);
  EXPECT_FALSE(agents[0].connected);
}

TEST(Daemon, UplinkResendsAfterAnalyzerRestartAndEachBatchCountsOnce) {
  RunningDaemon d;
  d.start();
  const int port = d.daemon->grpcPort();
  auto spool = collector::makeMemorySpool(0);
  collector::UplinkOptions o;
  o.analyzer = d.grpcAddress();
  o.agent = prober(d.topo);
  o.backoff_min_s = 0.05;
  o.backoff_max_s = 0.2;
  collector::Uplink up(o, *spool);
  for (int i = 0; i < 20; ++i) {
    v1::Batch b;
    *b.add_probes() = validProbe(d.topo, wallNow());
    up.send(b);
  }
  ASSERT_TRUE(waitFor([&] { return spool->batches() == 0; })) << up.lastError();
  EXPECT_EQ(d.daemon->analyzer().counters().batches, 20u);
  EXPECT_TRUE(waitFor([&] {
    auto a = d.daemon->analyzer().agents();
    return a.size() == 1 && a[0].connected;
  }));
  d.daemon->stop();
  EXPECT_TRUE(waitFor([&] { return !up.stats().connected; }));
  for (int i = 0; i < 5; ++i) {
    v1::Batch b;
    *b.add_probes() = validProbe(d.topo, wallNow());
    up.send(b);
  }
  // A new analyzer on the same port gets the five kept in the spool.
  DaemonOptions again;
  again.grpc.address = "127.0.0.1:" + std::to_string(port);
  again.web_listen = "127.0.0.1:0";
  std::string error;
  auto second = Daemon::start(d.topo, again, &error);
  ASSERT_TRUE(second) << error;
  ASSERT_TRUE(waitFor([&] { return spool->batches() == 0; })) << up.lastError();
  EXPECT_EQ(second->analyzer().counters().batches, 5u);
  EXPECT_GE(up.stats().reconnects, 1u);
}

// The finding of issue #15: 16 port records stamped an hour ahead moved the
// engine's clock with them once their agent was the only one connected (the
// other one reconnecting), and every record of the other agent became
// too_late. Now records beyond the skew are rejected and counted per agent,
// and an agent ahead within it waits for the analyzer's clock while another
// agent it has heard from is behind, connected or not.
TEST(Daemon, AnAgentsClockAheadCannotMakeTheOtherAgentsRecordsTooLate) {
  const double t0 = 1.7e9;
  std::atomic<double> now{t0};
  RunningDaemon d;
  d.clock = [&now] { return now.load(); };
  d.start();
  auto stub = v1::Collector::NewStub(
      grpc::CreateChannel(d.grpcAddress(), grpc::InsecureChannelCredentials()));
  struct Stream {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<v1::Batch, v1::Ack>> rw;
  };
  auto open = [&] {
    auto s = std::make_unique<Stream>();
    s->rw = stub->Stream(&s->ctx);
    return s;
  };
  // Sends and waits for the ack: the batch is ingested by then.
  auto send = [](Stream& s, v1::Batch b) {
    ASSERT_TRUE(s.rw->Write(b));
    v1::Ack ack;
    ASSERT_TRUE(s.rw->Read(&ack));
    EXPECT_EQ(ack.seq(), b.seq());
    EXPECT_FALSE(ack.duplicate());
  };
  auto close = [](Stream& s) {
    s.rw->WritesDone();
    EXPECT_TRUE(s.rw->Finish().ok());  // the server has seen the stream end
  };
  const std::string host_a = prober(d.topo), host_b = otherHost(d.topo);
  auto batch = [](const std::string& agent, uint64_t seq) {
    v1::Batch b;
    b.set_agent(agent);
    b.set_epoch(1);
    b.set_seq(seq);
    return b;
  };
  auto addPort = [&](v1::Batch& b, double t) {
    v1::PortCounters* p = b.add_ports();
    p->set_t(t);
    p->set_port(portOf(d.topo, host_b));
    p->set_rx_packets(1);
  };

  auto honest = open();
  v1::Batch b = batch(host_a, 1);
  *b.add_probes() = validProbe(d.topo, t0 - 1);
  send(*honest, b);

  // host1's records wait in the reorder buffer for the analyzer's clock, so
  // their acks come only once they are in the engine (the ack contract).
  auto ahead = open();
  b = batch(host_b, 1);
  for (int i = 0; i < 16; ++i) addPort(b, t0 + 3500);
  for (int i = 0; i < 4; ++i) addPort(b, t0 + 30);  // within the skew
  ASSERT_TRUE(ahead->rw->Write(b));
  ASSERT_TRUE(waitFor([&] { return d.daemon->analyzer().counters().future == 16; }));

  close(*honest);  // a reconnect: host1 is the only agent connected now
  b = batch(host_b, 2);
  addPort(b, t0 + 31);
  ASSERT_TRUE(ahead->rw->Write(b));
  ASSERT_TRUE(waitFor([&] { return d.daemon->analyzer().pathStats().held_records == 5; }));
  honest = open();
  b = batch(host_a, 2);
  *b.add_probes() = validProbe(d.topo, t0);
  send(*honest, b);

  exporter::IngestCounters c = d.daemon->analyzer().counters();
  EXPECT_EQ(c.too_late, 0u);
  EXPECT_EQ(c.ports, 0u) << "host1's records wait for the analyzer's clock";
  EXPECT_LE(d.daemon->analyzer().locate()["generated_at"].get<double>(), t0);

  // Once the analyzer's clock passes them, they are used, in order.
  now = t0 + 40;
  ASSERT_TRUE(waitFor([&] { return d.daemon->analyzer().counters().ports == 5; }));
  for (uint64_t seq : {1, 2}) {  // and then acknowledged
    v1::Ack ack;
    ASSERT_TRUE(ahead->rw->Read(&ack));
    EXPECT_EQ(ack.seq(), seq);
  }
  c = d.daemon->analyzer().counters();
  EXPECT_EQ(c.too_late, 0u);
  EXPECT_EQ(c.probes, 2u);
  EXPECT_EQ(c.future, 16u);
  EXPECT_EQ(c.malformed, 0u);
  for (const auto& a : d.daemon->analyzer().agents()) {
    EXPECT_EQ(a.future, a.agent == host_b ? 16u : 0u) << a.agent;
  }
  // The metric, per agent and reason.
  ASSERT_TRUE(waitFor([&] {
    auto m = d.http().Get("/metrics");
    return m && m->body.find("netdiag_ingest_future_records_total 16") != std::string::npos &&
           m->body.find("netdiag_agent_rejected_records{agent=\"" + host_b +
                        "\",reason=\"future\"} 16") != std::string::npos;
  })) << d.http().Get("/metrics")->body;
  close(*honest);
  close(*ahead);
}

TEST(Daemon, ServesPlansPerNode) {
  RunningDaemon d;
  d.start();
  auto spool = collector::makeMemorySpool(0);
  collector::UplinkOptions o;
  o.analyzer = d.grpcAddress();
  o.agent = d.topo.portRef(0).substr(0, d.topo.portRef(0).find(':'));
  collector::Uplink up(o, *spool);
  std::string error;
  auto plan = up.fetchPlan(0, &error);
  ASSERT_TRUE(plan) << error;
  EXPECT_EQ(plan->version(), 1u);
  EXPECT_EQ(plan->responder_port(), 7601u);
  EXPECT_GT(plan->flows_size(), 0);
  for (const auto& f : plan->flows()) EXPECT_EQ(f.src().rfind(o.agent + ":", 0), 0u);

  o.agent = "no-such-node";
  collector::Uplink stranger(o, *spool);
  EXPECT_FALSE(stranger.fetchPlan(0, &error));
  EXPECT_NE(error.find("not a node"), std::string::npos) << error;
}

// Paths and parameters that are not UTF-8 (or carry control bytes) used to
// abort the daemon: the 404 handler dumped them into JSON outside
// cpp-httplib's try/catch. Every one gets a JSON error, and the daemon lives.
TEST(Daemon, HttpApiSurvivesBytesThatAreNotUtf8) {
  RunningDaemon d;
  d.start();
  auto c = d.http();
  for (const char* path :
       {"/x%FF", "/%C0%AF", "/api/v1/incidents/%FF%FE", "/api/v1/links/%80->x", "/x%1B%5B31m",
        "/api/v1/incidents?state=%FF", "/api/v1/incidents?since=%FF"}) {
    for (bool post : {false, true}) {
      auto r = post ? c.Post(path, "", "text/plain") : c.Get(path);
      ASSERT_TRUE(r) << path << " killed the daemon";
      EXPECT_GE(r->status, 400) << path;
      json body = json::parse(r->body, nullptr, false);
      ASSERT_FALSE(body.is_discarded()) << path << ": " << r->body;
      EXPECT_TRUE(body.contains("error")) << path;
      EXPECT_EQ(r->body.find('\x1b'), std::string::npos) << "raw control byte echoed for " << path;
    }
  }
  auto r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(Daemon, HttpApi) {
  RunningDaemon d;
  d.start();
  auto c = d.http();
  auto r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.Get("/");
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("/api/v1/locate"), std::string::npos);

  r = c.Get("/api/v1/locate");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  json j = json::parse(r->body);
  EXPECT_TRUE(j["incidents"].is_array());
  EXPECT_TRUE(j.contains("generated_at"));

  r = c.Get("/api/v1/incidents?state=open&kind=link_loss&since=0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  for (const char* bad : {"/api/v1/incidents?state=maybe", "/api/v1/incidents?since=yesterday"}) {
    r = c.Get(bad);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_TRUE(json::parse(r->body).contains("error")) << bad;
  }
  r = c.Get("/api/v1/incidents/inc-999");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  r = c.Get("/api/v1/incidents?since=nan");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);

  const std::string name = d.topo.dirLinkName(0);
  std::string encoded;
  for (char ch : name) {
    if (ch == ':')
      encoded += "%3A";
    else if (ch == '>')
      encoded += "%3E";
    else
      encoded += ch;
  }
  r = c.Get("/api/v1/links/" + encoded);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  j = json::parse(r->body);
  EXPECT_EQ(j["link"], name);
  for (const char* key :
       {"probes", "lost", "loss_ratio", "background_loss", "reverse", "incidents"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_TRUE(j["reverse"].contains("loss_ratio"));
  r = c.Get("/api/v1/links/nowhere");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(json::parse(r->body)["error"].get<std::string>().find("nowhere"), std::string::npos);
  r = c.Get("/api/v1/nothing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);

  ASSERT_TRUE(waitFor([&] {
    auto m = c.Get("/metrics");
    return m && m->body.find("netdiag_ingest_batches_total") != std::string::npos;
  })) << "the exporter's metrics appear after the first tick";
  r = c.Get("/metrics");
  EXPECT_NE(r->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  EXPECT_NE(r->body.find("# TYPE"), std::string::npos);
}

// ---- HTTP bounds (issue #15, item 4) ----------------------------------------

// A raw TCP connection to the daemon's HTTP port, for clients that
// misbehave the way httplib::Client cannot.
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  bool ok() const { return ok_; }
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // True when the server closed (or reset) the connection; reads and
  // discards whatever it sent before. Waits up to `limit`.
  bool closedByServer(std::chrono::milliseconds limit, std::string* got = nullptr) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return true;
      if (got) got->append(buf, static_cast<size_t>(n));
    }
    return false;
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

// Issue #15 finding 7: eight connections that send part of a request and
// stall took all eight of cpp-httplib's workers, each for its 5 s read
// timeout and then the next eight, so /readyz stopped answering. Now each
// connection has its own worker up to a bound far above that.
TEST(HttpBounds, StalledConnectionsDoNotStarveReadyz) {
  RunningDaemon d;
  d.start();
  std::vector<std::unique_ptr<RawConnection>> stalled;
  for (int i = 0; i < 64; ++i) {
    stalled.push_back(std::make_unique<RawConnection>(d.daemon->httpPort()));
    ASSERT_TRUE(stalled.back()->ok());
    ASSERT_TRUE(stalled.back()->send("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Partial: "));
  }
  auto c = d.http();  // read timeout 10 s
  const auto t0 = std::chrono::steady_clock::now();
  auto r = c.Get("/readyz");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r) << "/readyz did not answer behind 64 stalled connections: " << r.error();
  EXPECT_EQ(r->status, 200);
  std::cout << "/readyz answered in " << took << " s behind 64 stalled connections\n";
  // ...while they were still open, waiting for the rest of their requests.
  size_t open = 0;
  for (auto& s : stalled) open += s->closedByServer(0ms) ? 0 : 1;
  EXPECT_GT(open, 0u);
}

// A client that keeps sending a header byte now and then used to hold a
// worker forever (cpp-httplib bounds only each wait, not the request).
TEST(HttpBounds, ADribblingClientIsCutOffByTheRequestDeadline) {
  RunningDaemon d;
  d.tweak = [](DaemonOptions& o) { o.http.request_timeout_s = 1; };
  d.start();
  RawConnection slow(d.daemon->httpPort());
  ASSERT_TRUE(slow.ok());
  ASSERT_TRUE(slow.send("GET /healthz HTTP/1.1\r\nHost: x\r\n"));
  bool closed = false;
  std::string got;
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (!closed && std::chrono::steady_clock::now() < end) {
    closed = !slow.send("X-Slow: y\r\n") || slow.closedByServer(200ms, &got);
  }
  EXPECT_TRUE(closed) << "a request dribbled for 30 s was never cut off";
  EXPECT_EQ(got.find("200 OK"), std::string::npos) << got;
  auto r = d.http().Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(HttpBounds, ConnectionsBeyondTheBoundAreAnswered503AtOnce) {
  RunningDaemon d;
  d.tweak = [](DaemonOptions& o) { o.http.max_connections = 4; };
  d.start();
  std::vector<std::unique_ptr<RawConnection>> stalled;
  for (int i = 0; i < 4; ++i) {
    stalled.push_back(std::make_unique<RawConnection>(d.daemon->httpPort()));
    ASSERT_TRUE(stalled.back()->send("GET /metrics HTTP/1.1\r\n"));
  }
  // The fifth is refused without waiting for a worker (the stalled ones
  // hold theirs for the 10 s request deadline).
  ASSERT_TRUE(waitFor([&] {
    auto r = d.http().Get("/readyz");
    return r && r->status == 503 && r->body.find("too many HTTP connections") != std::string::npos;
  }));
  stalled.clear();
  ASSERT_TRUE(waitFor([&] {
    auto r = d.http().Get("/readyz");
    return r && r->status == 200;
  })) << "workers come back once the stalled connections go";
}

// Issue #15 finding 7: a 7.9 KB header of ranges "0-,0-,..." made /metrics
// answer 56 MB, one copy of the body per range. Ranges are ignored now.
TEST(HttpBounds, RangeHeadersNeverMultiplyTheBody) {
  RunningDaemon d;
  d.start();
  auto c = d.http();
  ASSERT_TRUE(waitFor([&] {
    auto m = c.Get("/metrics");
    return m && m->body.find("netdiag_ingest_batches_total") != std::string::npos;
  }));
  auto plain = c.Get("/metrics");
  ASSERT_TRUE(plain);
  std::string many = "bytes=0-";
  while (many.size() < 7900) many += ",0-";
  for (const char* path : {"/metrics", "/api/v1/locate", "/", "/no-such-page"}) {
    for (const std::string& range : {many, std::string("bytes=0-9")}) {
      auto r = c.Get(path, {{"Range", range}});
      ASSERT_TRUE(r) << path;
      EXPECT_NE(r->status, 206) << path;
      EXPECT_EQ(r->get_header_value("Content-Type").find("multipart"), std::string::npos) << path;
      EXPECT_EQ(r->get_header_value("Accept-Ranges"), "none") << path;
      if (std::string(path) == "/metrics") {
        EXPECT_EQ(r->status, 200);
        EXPECT_LT(r->body.size(), 2 * plain->body.size() + 4096) << "the body was multiplied";
        EXPECT_GT(r->body.size(), 10u) << "a range was applied";
      }
    }
  }
}

TEST(HttpBounds, RequestsAndTheMetricsBodyAreBounded) {
  RunningDaemon d;
  d.tweak = [](DaemonOptions& o) { o.http.max_metrics_bytes = 100; };
  d.start();
  auto c = d.http();
  // 300 KB of headers, every line under cpp-httplib's own 8 KB line limit.
  httplib::Headers big;
  for (int i = 0; i < 75; ++i) big.emplace("X-Big-" + std::to_string(i), std::string(4000, 'a'));
  auto r = c.Get("/healthz", big);
  EXPECT_TRUE(!r || r->status >= 400) << "300 KB of headers accepted";
  // A body over its bound is refused, and the refusal reaches the client.
  r = c.Post("/healthz", std::string(100000, 'b'), "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  r = c.Post("/healthz", std::string(1 << 20, 'b'), "text/plain");
  EXPECT_TRUE(!r || r->status >= 400) << "a 1 MiB body accepted";
  // /metrics over its bound: refused with the reason, not sent.
  r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("bound of 100"), std::string::npos) << r->body;
  r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// ---- gRPC bounds (issue #15, item 4) ----------------------------------------

size_t threadsOfThisProcess() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Issue #15 finding 7: 64 MiB messages were accepted (four concurrent 60 MiB
// batches peaked at 1.8 GiB). The bound is the one agents split batches to.
TEST(GrpcBounds, AMessageOverTheBoundEndsItsStreamAndTheAnalyzerLives) {
  EXPECT_EQ(GrpcListenOptions{}.max_message_bytes, collector::kMaxBatchBytes);
  RunningDaemon d;
  d.start();
  auto channel = grpc::CreateChannel(d.grpcAddress(), grpc::InsecureChannelCredentials());
  auto stub = v1::Collector::NewStub(channel);
  v1::Batch big;
  big.set_agent(prober(d.topo));
  big.set_epoch(5);
  big.set_seq(1);
  while (big.ByteSizeLong() <= collector::kMaxBatchBytes + 1024) {
    for (int i = 0; i < 1000; ++i) *big.add_probes() = validProbe(d.topo, wallNow());
  }
  {
    grpc::ClientContext ctx;
    auto stream = stub->Stream(&ctx);
    stream->Write(big);
    v1::Ack ack;
    EXPECT_FALSE(stream->Read(&ack)) << "a batch over the bound was acknowledged";
    grpc::Status st = stream->Finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  }
  v1::Batch small;
  small.set_agent(prober(d.topo));
  small.set_epoch(5);
  small.set_seq(2);
  *small.add_probes() = validProbe(d.topo, wallNow());
  grpc::ClientContext ctx;
  auto stream = stub->Stream(&ctx);
  ASSERT_TRUE(stream->Write(small));
  v1::Ack ack;
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_EQ(ack.seq(), 2u);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(d.daemon->analyzer().counters().probes, 1u);
}

// Streams used to hold a server thread each (the synchronous API). Now they
// hold none: many streams cost a bounded number of threads, and the stream
// bound refuses the ones beyond it instead.
TEST(GrpcBounds, StreamsHoldNoThreadAndTheBoundRefusesTheRest) {
  RunningDaemon d;
  constexpr size_t kBound = 96;
  d.tweak = [](DaemonOptions& o) { o.max_agent_streams = kBound; };
  d.start();
  const size_t before = threadsOfThisProcess();
  auto channel = grpc::CreateChannel(d.grpcAddress(), grpc::InsecureChannelCredentials());
  auto stub = v1::Collector::NewStub(channel);
  struct Open {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<v1::Batch, v1::Ack>> stream;
  };
  std::vector<std::unique_ptr<Open>> open;
  size_t refused = 0, acked = 0;
  for (size_t i = 0; i < kBound + 32; ++i) {
    auto o = std::make_unique<Open>();
    o->ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    o->stream = stub->Stream(&o->ctx);
    v1::Batch b;
    b.set_agent(prober(d.topo));
    b.set_epoch(9);
    b.set_seq(static_cast<uint64_t>(i + 1));
    v1::Ack ack;
    if (o->stream->Write(b) && o->stream->Read(&ack)) {
      EXPECT_EQ(ack.seq(), i + 1);
      ++acked;
      open.push_back(std::move(o));  // held open
    } else {
      grpc::Status st = o->stream->Finish();
      EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
      EXPECT_NE(st.error_message().find("--max-agent-streams"), std::string::npos);
      ++refused;
    }
  }
  const size_t during = threadsOfThisProcess();
  std::cout << acked << " streams open, " << refused << " refused; threads " << before << " -> "
            << during << "\n";
  EXPECT_EQ(acked, kBound);
  EXPECT_EQ(refused, 32u);
  EXPECT_EQ(d.daemon->analyzer().counters().probes, 0u);  // empty batches
  EXPECT_LT(during, before + 32) << kBound << " open streams took a thread each";
  {
    auto m = d.http().Get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_NE(m->body.find("netdiag_agent_streams_open 96"), std::string::npos) << m->body;
    EXPECT_NE(m->body.find("netdiag_agent_streams_refused_total 32"), std::string::npos);
  }
  // A stream that closes makes room for the next.
  open.front()->stream->WritesDone();
  EXPECT_TRUE(open.front()->stream->Finish().ok());
  open.erase(open.begin());
  bool reopened = false;
  for (int attempt = 0; attempt < 100 && !reopened; ++attempt) {  // the close is asynchronous
    Open o;
    o.ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    o.stream = stub->Stream(&o.ctx);
    v1::Batch b;
    b.set_agent(prober(d.topo));
    b.set_epoch(10);
    b.set_seq(static_cast<uint64_t>(attempt + 1));
    v1::Ack ack;
    reopened = o.stream->Write(b) && o.stream->Read(&ack);
    o.stream->WritesDone();
    o.stream->Finish();
    if (!reopened) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(reopened);
  for (auto& o : open) {
    o->stream->WritesDone();
    EXPECT_TRUE(o->stream->Finish().ok());
  }
}

// The analyzer sends only acks, so a peer gone without closing its connection
// would hold it, a descriptor and a stream slot for good (gRPC's server
// keepalive is off, server/collector_service.cc). A stream whose read has
// waited the idle timeout is closed; its agent reconnects if it is alive.
TEST(GrpcBounds, AStreamSilentForTheIdleTimeoutIsClosed) {
  RunningDaemon d;
  d.tweak = [](DaemonOptions& o) { o.agent_idle_timeout_s = 0.3; };
  d.start();
  auto channel = grpc::CreateChannel(d.grpcAddress(), grpc::InsecureChannelCredentials());
  auto stub = v1::Collector::NewStub(channel);
  v1::Batch b;
  b.set_agent(prober(d.topo));
  b.set_epoch(3);
  b.set_seq(1);
  *b.add_probes() = validProbe(d.topo, wallNow());
  // The batch must reach the analyzer within the timeout of the stream
  // opening; on a machine too busy for that, the stream is closed as idle
  // before it (the behaviour under test too) and the agent opens another.
  // Once the batch is read, the stream is owed its ack and is not idle.
  std::unique_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::Batch, v1::Ack>> stream;
  v1::Ack ack;
  int closed_early = 0;
  for (;; ++closed_early) {
    ASSERT_LT(closed_early, 20);
    ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + 60s);
    stream = stub->Stream(ctx.get());
    if (stream->Write(b) && stream->Read(&ack)) break;
    stream->Finish();
  }
  EXPECT_EQ(ack.seq(), 1u);
  // Silent from here: the next read ends when the analyzer closes the stream
  // (the deadline above is only a backstop).
  EXPECT_FALSE(stream->Read(&ack));
  grpc::Status st = stream->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::CANCELLED) << st.error_message();
  EXPECT_EQ(d.daemon->analyzer().counters().probes, 1u);
  const std::string closed =
      "netdiag_agent_streams_idle_closed_total " + std::to_string(closed_early + 1);
  ASSERT_TRUE(waitFor([&] {
    auto m = d.http().Get("/metrics");
    return m && m->body.find(closed) != std::string::npos &&
           m->body.find("netdiag_agent_streams_open 0") != std::string::npos;
  }));
  std::lock_guard lk(d.logs_mu);
  EXPECT_TRUE(std::any_of(d.logs.begin(), d.logs.end(), [&](const std::string& l) {
    return l.find("\"" + prober(d.topo) + "\"") != std::string::npos &&
           l.find("no batch for") != std::string::npos;
  }));
}

TEST(Daemon, StartFailuresAreNamed) {
  topology::Topology topo = smallFabric();
  DaemonOptions o;
  o.grpc.address = "127.0.0.1:0";
  o.web_listen = "not-an-address";
  std::string error;
  EXPECT_FALSE(Daemon::start(topo, o, &error));
  EXPECT_NE(error.find("not-an-address"), std::string::npos) << error;

  o.web_listen = "127.0.0.1:0";
  o.live.db_path = "/nonexistent-dir/x/netdiag.db";
  EXPECT_FALSE(Daemon::start(topo, o, &error));
  EXPECT_NE(error.find("/nonexistent-dir"), std::string::npos) << error;

  o.live.db_path.clear();
  o.live.max_future_s = -1;
  EXPECT_FALSE(Daemon::start(topo, o, &error));
  EXPECT_NE(error.find("max_future_s"), std::string::npos) << error;

  o.live.max_future_s = 60;
  o.grpc.tls_cert = "/nonexistent/cert.pem";
  o.grpc.tls_key = "/nonexistent/key.pem";
  EXPECT_FALSE(Daemon::start(topo, o, &error));
  EXPECT_NE(error.find("/nonexistent/cert.pem"), std::string::npos) << error;
}

// ---- a simulated gray link, streamed; incidents survive a restart ----------

TEST(Daemon, LocalizesAStreamedGrayLinkAndKeepsItAcrossARestart) {
  TempDir dir;
  RunningDaemon d;
  // At speed 0 the agents stream 150 s of telemetry in a few wall seconds:
  // their clocks run that far ahead of the analyzer's, by design.
  d.max_future_s = 3600;
  d.start(dir.file("netdiag.db"));

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
  planner::Plan plan = planner::makePlan(d.topo, load.scenario.budget, {}, 1);
  std::vector<topology::Diagnostic> errors;
  auto simulator = sim::Simulator::create(d.topo, load.scenario, plan, {}, errors);
  ASSERT_TRUE(simulator);
  ASSERT_EQ(simulator->truth().faults.size(), 1u);
  const std::string faulty = simulator->truth().faults[0].link;

  loadgen::SimAgentsOptions so;
  so.analyzer = d.grpcAddress();
  so.speed = 0;  // one stream per node (the default for a fabric this size)
  {
    loadgen::SimAgents agents(d.topo, so);
    EXPECT_TRUE(agents.perNode());
    EXPECT_EQ(agents.agentCount(), d.topo.nodeCount());
    simulator->run(agents);
    std::string error;
    ASSERT_TRUE(agents.finish(60, &error)) << error;
    EXPECT_EQ(agents.stats().acked, agents.stats().batches);
    EXPECT_GT(agents.stats().id_batches, agents.stats().batches / 2)
        << "after their first window the agents name ports by compact id";
  }
  EXPECT_EQ(d.daemon->analyzer().counters().port_id_mismatch, 0u);
  EXPECT_EQ(d.daemon->analyzer().counters().malformed, 0u);
  EXPECT_EQ(d.daemon->analyzer().counters().not_authorized, 0u)
      << "each synthetic agent speaks only for its node";
  EXPECT_EQ(d.daemon->analyzer().counters().too_late, 0u)
      << "every stream was up before the first record, so none fell behind the others";
  std::string id;
  ASSERT_TRUE(waitFor([&] {
    json j = json::parse(d.http().Get("/api/v1/locate")->body);
    for (const auto& i : j["incidents"]) {
      if (i.value("link", "") == faulty && !i["localized_at"].is_null()) id = i["id"];
    }
    return !id.empty();
  })) << "no open incident on "
      << faulty;
  // One page, and no other incident either (not even an unlocalized suspect
  // group: one appeared while a late-starting stream's records were too_late).
  json located = json::parse(d.http().Get("/api/v1/locate")->body);
  size_t localized = 0;
  for (const auto& i : located["incidents"]) localized += i["localized_at"].is_null() ? 0 : 1;
  EXPECT_EQ(localized, 1u) << located.dump(1);
  EXPECT_EQ(located["incidents"].size(), 1u) << located.dump(1);
  json one = json::parse(d.http().Get("/api/v1/incidents/" + id)->body);
  EXPECT_EQ(one["incident"]["link"], faulty);
  EXPECT_EQ(one["link"]["link"], faulty);
  EXPECT_GT(one["link"]["loss_ratio"].get<double>(), 0.01);
  // Drain advice while it is open, counted in the shared drain context
  // (drain/context.h): nothing is out of service here.
  ASSERT_TRUE(one["drain"].is_object()) << one.dump(1);
  EXPECT_EQ(one["drain"]["safe"], true) << one["drain"].dump();
  EXPECT_NE(one["drain"]["summary"].get<std::string>().find(" keeps "), std::string::npos);
  EXPECT_EQ(one["drain"]["out_of_service"], json::array());
  // And what the drain policy decides, check by check: advise acts on
  // nothing, whatever the checks say.
  const json& decision = one["drain"]["decision"];
  EXPECT_EQ(decision["mode"], "advise");
  EXPECT_EQ(decision["verdict"], "advise");
  ASSERT_TRUE(decision["checks"].is_array());
  EXPECT_EQ(decision["checks"].size(), 11u) << decision.dump(1);
  for (const auto& c : decision["checks"]) {
    EXPECT_TRUE(c["name"].is_string() && c["ok"].is_boolean() && c["detail"].is_string());
  }

  d.daemon->stop();
  d.daemon.reset();
  d.start(dir.file("netdiag.db"));
  json after = json::parse(d.http().Get("/api/v1/incidents")->body);
  bool kept = false;
  for (const auto& i : after["incidents"]) kept |= i["id"] == id && i["link"] == faulty;
  EXPECT_TRUE(kept) << after.dump(1);
}

// ---- identity and authority (issue #15) -----------------------------------

CollectorsLoad loadCollectorsText(const std::string& text, const topology::Topology& topo) {
  std::istringstream in(text);
  return loadCollectors(in, "collectors.yaml", topo);
}

TEST(Collectors, FileIsValidatedAgainstTheTopologyAndEachErrorNamesItsLine) {
  const topology::Topology topo = smallFabric();
  CollectorsLoad ok = loadCollectorsText(R"(# pollers
collectors:
  snmp-poller-1:
    nodes: [leaf1, leaf2, spine1]
  snmp-poller-2:
    nodes:
      - leaf3
)",
                                         topo);
  ASSERT_TRUE(ok.ok()) << ok.errors[0].str();
  ASSERT_EQ(ok.collectors.size(), 2u);
  EXPECT_EQ(ok.collectors[0].name, "snmp-poller-1");
  EXPECT_EQ(ok.collectors[0].nodes,
            (std::vector<topology::NodeId>{*topo.findNode("leaf1"), *topo.findNode("leaf2"),
                                           *topo.findNode("spine1")}));
  EXPECT_EQ(ok.collectors[1].nodes, std::vector<topology::NodeId>{*topo.findNode("leaf3")});

  CollectorsLoad bad = loadCollectorsText(R"(collectors:
  snmp-poller-1:
    nodes: [leaf1, leaf2]
  snmp-poller-2:
    nodes: [leaf1, nosuch, leaf3, leaf3]
  host1:
    nodes: [leaf4]
  snmp-poller-1:
    nodes: [spine2]
)",
                                          topo);
  std::string all;
  for (const auto& e : bad.errors) all += e.str("error") + "\n";
  EXPECT_TRUE(bad.collectors.empty());
  EXPECT_EQ(bad.errors.size(), 5u) << all;
  for (const char* want :
       {"collectors.yaml:5: error: node \"leaf1\" is assigned to collectors \"snmp-poller-1\" "
        "(line 3) and \"snmp-poller-2\"",
        "collectors.yaml:5: error: collector \"snmp-poller-2\": unknown node \"nosuch\"",
        "collectors.yaml:5: error: collector \"snmp-poller-2\": node \"leaf3\" listed twice",
        "collectors.yaml:6: error: collector \"host1\" is named like a node",
        "collectors.yaml:8: error: duplicate collector \"snmp-poller-1\" (first declared at line "
        "2)"}) {
    EXPECT_NE(all.find(want), std::string::npos) << want << "\nin:\n" << all;
  }
  EXPECT_FALSE(loadCollectorsText("collectors: [a, b]\n", topo).ok());
  EXPECT_FALSE(loadCollectorsText("pollers: {}\n", topo).ok());
  EXPECT_FALSE(loadCollectorsText("collectors:\n  x: {nodes: [leaf1], probes: yes}\n", topo).ok());
  EXPECT_FALSE(loadCollectorsText("collectors: {\"bad name\": {nodes: [leaf1]}}\n", topo).ok());
  EXPECT_FALSE(loadCollectorsFile("/nonexistent/collectors.yaml", topo).ok());
}

// Issue #15, finding 5: any agent could report any port and `src` of any
// node, and a stream named like no node (`sim-0`) paged a healthy link.
TEST(Authority, AnAgentSpeaksOnlyForItsOwnPortsAndACollectorOnlyForItsSwitches) {
  const topology::Topology topo = smallFabric();
  LiveOptions o;
  o.collectors = {{"snmp-poller-1", {*topo.findNode("leaf1"), *topo.findNode("spine1")}}};
  std::string error;
  auto live = LiveAnalyzer::create(topo, o, nullptr, wallNow, &error, nullptr);
  ASSERT_TRUE(live) << error;
  const double now = wallNow();
  const std::string me = prober(topo), other = otherHost(topo);
  auto port = [&](v1::Batch& b, const std::string& ref) {
    v1::PortCounters* p = b.add_ports();
    p->set_t(now);
    p->set_port(ref);
    p->set_rx_packets(1);
  };
  auto lldp = [&](v1::Batch& b, const std::string& ref) {
    v1::LldpNeighbor* l = b.add_lldp();
    l->set_t(now);
    l->set_port(ref);
    l->set_neighbor("spine1:swp1");
  };

  v1::Batch b;
  b.set_agent(me);
  b.set_epoch(1);
  b.set_seq(1);
  *b.add_probes() = validProbe(topo, now);  // from its own port: fine
  v1::Probe* theirs = b.add_probes();
  *theirs = validProbe(topo, now);
  theirs->set_src(portOf(topo, other));  // claims another host's probe
  theirs->set_dst(validProbe(topo, now).src());
  port(b, portOf(topo, me));
  port(b, "leaf1:swp1");
  lldp(b, portOf(topo, other));
  BatchResult r = live->ingest(b);
  EXPECT_FALSE(r.rejected);
  EXPECT_EQ(r.accepted, 2u);
  EXPECT_EQ(r.not_authorized, 3u);
  EXPECT_NE(r.authority_log.find("not_authorized"), std::string::npos) << r.authority_log;
  EXPECT_NE(r.authority_log.find(portOf(topo, other)), std::string::npos) << r.authority_log;
  b.set_seq(2);
  r = live->ingest(b);
  EXPECT_EQ(r.not_authorized, 3u);
  EXPECT_TRUE(r.authority_log.empty()) << "logged once a minute per agent: " << r.authority_log;

  v1::Batch c;
  c.set_agent("snmp-poller-1");
  c.set_epoch(1);
  c.set_seq(1);
  port(c, "leaf1:swp1");
  port(c, "spine1:swp1");
  lldp(c, "leaf1:swp2");
  port(c, "leaf2:swp1");                    // not assigned to it
  *c.add_probes() = validProbe(topo, now);  // a collector sends no probes
  r = live->ingest(c);
  EXPECT_EQ(r.accepted, 3u);
  EXPECT_EQ(r.not_authorized, 2u);

  // Neither a node nor a collector: refused whole, one bucket for all names.
  for (int i = 0; i < 100; ++i) {
    v1::Batch u = b;
    u.set_agent(i == 0 ? "sim-0" : "junk-" + std::to_string(i));
    r = live->ingest(u);
    EXPECT_TRUE(r.rejected);
    EXPECT_EQ(r.accepted, 0u);
    EXPECT_EQ(r.not_authorized, 5u);
    EXPECT_EQ(r.authority_log.empty(), i > 0) << "unknown agents share one log limit";
  }
  exporter::IngestCounters counters = live->counters();
  EXPECT_EQ(counters.not_authorized, 3u + 3u + 2u + 500u);
  EXPECT_EQ(counters.malformed, 0u);
  std::map<std::string, uint64_t> per_agent;
  for (const auto& a : live->agents()) per_agent[a.agent] = a.not_authorized;
  EXPECT_EQ(per_agent, (std::map<std::string, uint64_t>{
                           {me, 6}, {"snmp-poller-1", 2}, {exporter::kUnknownAgent, 500}}));
  live->flush();
  counters = live->counters();
  EXPECT_EQ(counters.probes, 2u);
  EXPECT_EQ(counters.ports, 2u + 2u);
  EXPECT_EQ(counters.lldp, 1u);
}

// Helpers for raw streams to a running daemon.
struct RawStream {
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::Batch, v1::Ack>> rw;
  RawStream(v1::Collector::Stub& stub) : rw(stub.Stream(&ctx)) {}
  // Sends and reads the ack; nullopt when the stream ended instead.
  std::optional<v1::Ack> send(const v1::Batch& b) {
    if (!rw->Write(b)) return std::nullopt;
    v1::Ack ack;
    if (!rw->Read(&ack)) return std::nullopt;
    return ack;
  }
  grpc::Status finish() {
    rw->WritesDone();
    return rw->Finish();
  }
};

v1::Batch probeBatch(const topology::Topology& topo, const std::string& agent, uint64_t epoch,
                     uint64_t seq, const std::string& src = "") {
  v1::Batch b;
  b.set_agent(agent);
  b.set_epoch(epoch);
  b.set_seq(seq);
  v1::Probe* p = b.add_probes();
  *p = validProbe(topo, wallNow());
  if (!src.empty()) {
    p->set_src(src);
    p->set_dst(validProbe(topo, 0).src());
  }
  return b;
}

TEST(Authority, AStreamIsOneIdentityAndUnknownAgentsAreAckedNotIngested) {
  RunningDaemon d;
  d.start();
  auto stub = v1::Collector::NewStub(
      grpc::CreateChannel(d.grpcAddress(), grpc::InsecureChannelCredentials()));
  const std::string a = prober(d.topo), b = otherHost(d.topo);

  // A batch of an unknown agent is acknowledged (it must leave the sender's
  // spool) but not ingested.
  {
    RawStream s(*stub);
    auto ack = s.send(probeBatch(d.topo, "not-a-node", 1, 1));
    ASSERT_TRUE(ack);
    EXPECT_FALSE(ack->duplicate());
    EXPECT_TRUE(s.finish().ok());
  }
  // Eight forged batches with higher epochs, sent as `a` on a stream that
  // is `b`: each ends its stream, none is ingested or moves a's dedup state.
  for (uint64_t e = 1000; e < 1008; ++e) {
    RawStream s(*stub);
    ASSERT_TRUE(s.send(probeBatch(d.topo, b, 1, e - 999, portOf(d.topo, b))));
    EXPECT_FALSE(s.send(probeBatch(d.topo, a, e, 1)));
    grpc::Status st = s.finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_NE(st.error_message().find("one stream, one identity"), std::string::npos)
        << st.error_message();
  }
  // a's own batches, in a lower epoch, are new.
  RawStream real(*stub);
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    auto ack = real.send(probeBatch(d.topo, a, 5, seq));
    ASSERT_TRUE(ack);
    EXPECT_FALSE(ack->duplicate()) << "seq " << seq;
  }
  EXPECT_TRUE(real.finish().ok());
  d.daemon->stop();
  exporter::IngestCounters c = d.daemon->analyzer().counters();
  EXPECT_EQ(c.probes, 3u + 8u) << "a's three and b's own eight";
  EXPECT_EQ(c.not_authorized, 1u + 8u);
  EXPECT_EQ(c.duplicate_batches, 0u);
  for (const auto& ag : d.daemon->analyzer().agents()) {
    EXPECT_NE(ag.agent, "not-a-node") << "unknown names get no state of their own";
    if (ag.agent == b) {
      EXPECT_EQ(ag.not_authorized, 8u);
    }
    if (ag.agent == exporter::kUnknownAgent) {
      EXPECT_EQ(ag.not_authorized, 1u);
    }
  }
}

TEST(Authority, TheRejectedRecordsMetricHasOneUnknownBucket) {
  RunningDaemon d;
  d.start();
  auto stub = v1::Collector::NewStub(
      grpc::CreateChannel(d.grpcAddress(), grpc::InsecureChannelCredentials()));
  RawStream s(*stub);
  for (int i = 0; i < 20; ++i) {
    // Each on its own stream would do the same; one stream is quicker.
    RawStream one(*stub);
    ASSERT_TRUE(one.send(probeBatch(d.topo, "junk-" + std::to_string(i), 1, 1)));
    EXPECT_TRUE(one.finish().ok());
  }
  ASSERT_TRUE(waitFor([&] {
    auto m = d.http().Get("/metrics");
    return m && m->body.find(R"x(netdiag_agent_rejected_records{agent="(unknown)",)x"
                             R"x(reason="not_authorized"} 20)x") != std::string::npos;
  })) << d.http().Get("/metrics")->body;
  auto m = d.http().Get("/metrics");
  EXPECT_EQ(m->body.find("junk-"), std::string::npos) << "no series per unknown name";
  EXPECT_NE(m->body.find("netdiag_ingest_not_authorized_records_total 20"), std::string::npos);
  s.finish();
}

// --- mutual TLS: the certificate names the agent ---

class TlsCerts {
 public:
  // A CA, the analyzer's certificate (SAN IP:127.0.0.1) and client
  // certificates: "cn" with CN=<cn_name> and no SAN, "san" with CN=someone
  // and SAN DNS:<san_name>.
  TlsCerts(const std::string& cn_name, const std::string& san_name) {
    const std::string d = dir_.file("");
    std::string cmd =
        "cd " + d +
        " && (openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 "
        "-subj /CN=netdiag-test-ca && "
        "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "
        "/CN=analyzer && printf 'subjectAltName=IP:127.0.0.1' > server.ext && "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out "
        "server.pem -days 1 -extfile server.ext && "
        "openssl req -newkey rsa:2048 -nodes -keyout cn.key -out cn.csr -subj /CN=" +
        cn_name +
        " && openssl x509 -req -in cn.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cn.pem "
        "-days 1 && "
        "openssl req -newkey rsa:2048 -nodes -keyout san.key -out san.csr -subj /CN=someone && "
        "printf 'subjectAltName=DNS:" +
        san_name +
        "' > san.ext && openssl x509 -req -in san.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
        "-out san.pem -days 1 -extfile san.ext) >/dev/null 2>&1";
    ok_ = std::system(cmd.c_str()) == 0;
  }
  bool ok() const { return ok_; }
  std::string file(const std::string& name) const { return dir_.file(name); }
  std::string read(const std::string& name) const {
    std::ifstream in(file(name));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::unique_ptr<v1::Collector::Stub> stub(const std::string& address,
                                            const std::string& who) const {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = read("ca.pem");
    o.pem_cert_chain = read(who + ".pem");
    o.pem_private_key = read(who + ".key");
    return v1::Collector::NewStub(grpc::CreateChannel(address, grpc::SslCredentials(o)));
  }

 private:
  TempDir dir_;
  bool ok_ = false;
};

// Issue #15, finding 5: under mTLS one certificate (CN=host1) sent 476
// batches as host7, spine1 and not-a-node, all acknowledged.
TEST(Authority, UnderMutualTlsTheCertificateMustNameTheAgent) {
  RunningDaemon d;
  const std::string a = prober(d.topo), b = otherHost(d.topo);
  TlsCerts certs(a, b);
  if (!certs.ok()) GTEST_SKIP() << "openssl could not make test certificates";
  d.tweak = [&](DaemonOptions& o) {
    o.grpc.tls_cert = certs.file("server.pem");
    o.grpc.tls_key = certs.file("server.key");
    o.grpc.tls_ca = certs.file("ca.pem");
  };
  d.start();
  auto as_a = certs.stub(d.grpcAddress(), "cn");   // CN=a
  auto as_b = certs.stub(d.grpcAddress(), "san");  // SAN DNS:b

  {
    RawStream s(*as_a);  // the CN names it
    auto ack = s.send(probeBatch(d.topo, a, 1, 1));
    ASSERT_TRUE(ack);
    EXPECT_FALSE(ack->duplicate());
    EXPECT_TRUE(s.finish().ok());
  }
  // Eight forged batches with higher epochs as b, from a's certificate:
  // each stream is refused before anything is ingested.
  for (uint64_t e = 1000; e < 1008; ++e) {
    RawStream s(*as_a);
    EXPECT_FALSE(s.send(probeBatch(d.topo, b, e, 1, portOf(d.topo, b))));
    grpc::Status st = s.finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_NE(st.error_message().find("the client certificate names \"" + a + "\""),
              std::string::npos)
        << st.error_message();
    EXPECT_NE(st.error_message().find("not the agent \"" + b + "\""), std::string::npos)
        << st.error_message();
  }
  {
    RawStream s(*as_a);
    EXPECT_FALSE(s.send(probeBatch(d.topo, "not-a-node", 1, 1)));
    EXPECT_EQ(s.finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    RawStream s(*as_b);  // the SAN names it; its real batches are new
    for (uint64_t seq = 1; seq <= 3; ++seq) {
      auto ack = s.send(probeBatch(d.topo, b, 5, seq, portOf(d.topo, b)));
      ASSERT_TRUE(ack) << "seq " << seq;
      EXPECT_FALSE(ack->duplicate()) << "seq " << seq;
    }
    EXPECT_TRUE(s.finish().ok());
  }
  // Plans too: only for an agent the certificate names.
  for (const auto& [who, stub] : {std::pair{b, as_a.get()}, std::pair{a, as_a.get()}}) {
    grpc::ClientContext ctx;
    v1::PlanRequest req;
    req.set_agent(who);
    v1::AgentPlan plan;
    grpc::Status st = stub->GetPlan(&ctx, req, &plan);
    EXPECT_EQ(st.error_code(),
              who == a ? grpc::StatusCode::OK : grpc::StatusCode::PERMISSION_DENIED)
        << who << ": " << st.error_message();
  }
  d.daemon->stop();
  exporter::IngestCounters c = d.daemon->analyzer().counters();
  EXPECT_EQ(c.probes, 1u + 3u);
  EXPECT_EQ(c.duplicate_batches, 0u);
  EXPECT_EQ(c.not_authorized, 8u + 1u);
  bool logged = false;
  {
    // Under the lock its writers take: gRPC's own synchronization between a
    // finished stream and this thread is invisible to TSan.
    std::lock_guard lk(d.logs_mu);
    for (const auto& l : d.logs) logged |= l.find("refused") != std::string::npos;
  }
  EXPECT_TRUE(logged);
}

// Plaintext on an address other hosts reach leaves agents unauthenticated.
TEST(Authority, ANonLoopbackListenerNeedsMutualTlsOrInsecure) {
  for (const char* host : {"localhost", "127.0.0.1", "127.1.2.3", "::1"}) {
    EXPECT_TRUE(isLoopbackHost(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "::", "", "192.168.77.1", "127.example.com", "example"}) {
    EXPECT_FALSE(isLoopbackHost(host)) << host;
  }
  topology::Topology topo = smallFabric();
  DaemonOptions o;
  o.grpc.address = "0.0.0.0:0";
  o.web_listen = "127.0.0.1:0";
  std::string error;
  EXPECT_FALSE(Daemon::start(topo, o, &error));
  EXPECT_NE(error.find("--insecure"), std::string::npos) << error;
  EXPECT_NE(error.find("--tls-ca"), std::string::npos) << error;
  o.grpc.insecure = true;
  auto d = Daemon::start(topo, o, &error);
  EXPECT_TRUE(d) << error;
}

// Synthetic agents: one stream per node by default (each speaking for its
// node); fewer streams than nodes are grouped sim-<i> agents, which the
// analyzer accepts only with --accept-sim-agents for the same count.
TEST(Authority, GroupedSyntheticAgentsNeedAcceptSimAgents) {
  for (size_t accept : {size_t{0}, size_t{4}}) {
    SCOPED_TRACE(accept);
    RunningDaemon d;
    d.tweak = [&](DaemonOptions& o) { o.live.accept_sim_agents = accept; };
    d.start();
    loadgen::SimAgentsOptions so;
    so.analyzer = d.grpcAddress();
    so.speed = 0;
    so.agents = 4;
    size_t records = 0;
    {
      loadgen::SimAgents agents(d.topo, so);
      EXPECT_FALSE(agents.perNode());
      EXPECT_EQ(agents.agentName(0), "sim-0");
      const double t = wallNow();
      std::vector<topology::PortId> host_ports;
      for (topology::PortId p = 0; p < d.topo.portCount(); ++p) {
        if (d.topo.node(d.topo.port(p).node).isHost()) host_ports.push_back(p);
        telemetry::PortRecord r;
        r.t = t;
        r.port = p;
        r.rx_packets = 1;
        agents.onPort(r);
        ++records;
      }
      for (size_t i = 0; i < host_ports.size(); ++i) {
        telemetry::ProbeRecord r;
        r.t = t;
        r.src = host_ports[i];
        r.dst = host_ports[(i + 1) % host_ports.size()];
        r.flow = 40000;
        r.window_s = 5;
        r.sent = 50;
        agents.onProbe(r);
        ++records;
      }
      std::string error;
      ASSERT_TRUE(agents.finish(30, &error)) << error;
    }
    d.daemon->stop();
    exporter::IngestCounters c = d.daemon->analyzer().counters();
    EXPECT_EQ(c.not_authorized, accept ? 0u : records);
    EXPECT_EQ(c.probes + c.ports, accept ? records : 0u);
  }
  topology::Topology topo = smallFabric();
  EXPECT_TRUE(loadgen::simAgentsLayout(topo, 0).per_node);
  EXPECT_EQ(loadgen::simAgentsLayout(topo, 0).streams, topo.nodeCount());
  EXPECT_TRUE(loadgen::simAgentsLayout(topo, 1000).per_node);
  EXPECT_FALSE(loadgen::simAgentsLayout(topo, 5).per_node);
}

}  // namespace
}  // namespace netdiag::server

namespace netdiag::server {
namespace {

// Each agent's ingest is bounded as back-pressure: a stream over its rate
// waits (nothing is dropped), and another agent's stream does not.
TEST(AgentRate, AnAgentOverItsRateWaitsAndOthersDoNot) {
  RunningDaemon d;
  d.tweak = [](DaemonOptions& o) { o.max_agent_records_per_s = 2000; };
  d.start();
  auto stub = v1::Collector::NewStub(
      grpc::CreateChannel(d.grpcAddress(), grpc::InsecureChannelCredentials()));
  const std::string a = prober(d.topo), b = otherHost(d.topo);
  auto batchOf = [&](const std::string& agent, uint64_t seq, int records, const std::string& src) {
    v1::Batch batch = probeBatch(d.topo, agent, 9, seq, src);
    for (int i = 1; i < records; ++i) *batch.add_probes() = batch.probes(0);
    return batch;
  };
  std::atomic<int> a_acked{0};
  std::atomic<bool> a_done{false};
  const auto start = std::chrono::steady_clock::now();
  double a_seconds = 0;
  std::thread fast([&] {
    RawStream s(*stub);
    // 5 x 2000 records at 2000/s with a 2 s burst: at least 3 s.
    for (uint64_t seq = 1; seq <= 5; ++seq) {
      if (!s.send(batchOf(a, seq, 2000, ""))) return;
      ++a_acked;
    }
    s.finish();
    a_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    a_done = true;
  });
  ASSERT_TRUE(waitFor([&] { return a_acked.load() >= 2; }));
  bool b_before_a = false;
  {
    RawStream s(*stub);
    ASSERT_TRUE(s.send(batchOf(b, 1, 100, portOf(d.topo, b))));
    b_before_a = !a_done.load();
    s.finish();
  }
  fast.join();
  EXPECT_TRUE(b_before_a) << "the other agent waited behind the fast one";
  EXPECT_GE(a_seconds, 2.9) << "the fast agent was not held to its rate";
  d.daemon->stop();
  EXPECT_EQ(d.daemon->analyzer().counters().probes, 5u * 2000 + 100) << "nothing is dropped";
}

}  // namespace
}  // namespace netdiag::server

namespace netdiag::server {
namespace {

// A switch moved from the SNMP poller to its own agent: the agent's carrier
// count (the kernel's, since boot) is not a jump from the poller's (its own,
// since it started), so it is no flap; the same jump from one source is.
TEST(Ingest, AnotherCollectorsCountersStartFromANewOrigin) {
  for (bool moved : {true, false}) {
    SCOPED_TRACE(moved ? "poller, then agent" : "agent only");
    topology::Topology topo = smallFabric();
    LiveOptions o;
    const topology::NodeId leaf = *topo.findNode("leaf1");
    o.collectors = {{"snmp-poller-1", {leaf}}};
    std::string error;
    auto live = LiveAnalyzer::create(topo, o, nullptr, wallNow, &error, nullptr);
    ASSERT_TRUE(live) << error;
    std::string port;
    for (topology::PortId p = 0; p < topo.portCount(); ++p) {
      const auto& pt = topo.port(p);
      if (pt.node == leaf && pt.link != topology::kNone &&
          topo.node(topo.port(topo.dirDstPort(topo.egressOf(p))).node).name.rfind("spine", 0) ==
              0) {
        port = topo.portRef(p);
        break;
      }
    }
    ASSERT_FALSE(port.empty());
    const double now = wallNow();
    uint64_t seq = 0;
    auto send = [&](const std::string& agent, double t, uint64_t carrier) {
      v1::Batch b;
      b.set_agent(agent);
      b.set_epoch(1);
      b.set_seq(++seq);
      v1::PortCounters* c = b.add_ports();
      c->set_t(t);
      c->set_port(port);
      c->set_oper_up(true);
      c->set_carrier_changes(carrier);
      c->set_rx_packets(static_cast<uint64_t>(t - now + 1000) * 1000);
      EXPECT_EQ(live->ingest(b).not_authorized, 0u);
    };
    for (double t : {-60.0, -50.0, -40.0}) send(moved ? "snmp-poller-1" : "leaf1", now + t, 0);
    for (double t : {-30.0, -20.0, -10.0}) send("leaf1", now + t, 40);
    live->tick(now);
    const nlohmann::json located = live->locate();
    size_t flaps = 0;
    for (const auto& i : located["incidents"]) flaps += i["kind"] == "link_flap" ? 1 : 0;
    EXPECT_EQ(flaps, moved ? 0u : 1u) << located.dump(1);
  }
}

}  // namespace
}  // namespace netdiag::server
