// The analyzer's ingest path (server/live_analyzer.h): the engine thread fed
// through a bounded queue, the ack contract (a batch is acknowledged once its
// records are in the engine), backpressure that drops nothing and turns
// nothing too_late, readers that answer while a pass runs, an agent table
// that stores no unknown name, and the bounded in-memory history.
//
// Every wait is on a positive signal (a hook reached, a count reached),
// never on a sleep, and nothing asserts on timing.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <prometheus/text_serializer.h>

#include "analyzer/persist.h"
#include "server/daemon.h"
#include "server/live_analyzer.h"
#include "store/incident_store.h"
#include "store/migrations.h"
#include "topology/generators.h"

namespace netdiag::server {
namespace {

using namespace std::chrono_literals;

topology::Topology smallFabric() {
  topology::LeafSpineParams p;
  p.spines = 2;
  p.leaves = 4;
  p.hosts_per_leaf = 4;
  return topology::generateLeafSpine(p);
}

double wallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The host ports of the fabric, in id order.
std::vector<topology::PortId> hostPorts(const topology::Topology& topo) {
  std::vector<topology::PortId> out;
  for (topology::PortId p = 0; p < topo.portCount(); ++p) {
    if (topo.node(topo.port(p).node).isHost()) out.push_back(p);
  }
  return out;
}

// A batch of `n` probes at time `t` from the agent of host port `src`
// (the agent that may send them) to another host port.
v1::Batch probes(const topology::Topology& topo, size_t src, uint64_t seq, double t, int n) {
  const auto ports = hostPorts(topo);
  const topology::PortId from = ports[src], to = ports[(src + 1) % ports.size()];
  v1::Batch b;
  b.set_agent(topo.node(topo.port(from).node).name);
  b.set_epoch(1);
  b.set_seq(seq);
  for (int i = 0; i < n; ++i) {
    v1::Probe* m = b.add_probes();
    m->set_t(t);
    m->set_src(topo.portRef(from));
    m->set_dst(topo.portRef(to));
    m->set_flow(40000 + i);
    m->set_window_s(5);
    m->set_sent(50);
    m->set_lost(0);
  }
  return b;
}

// Polls a cheap, lock-light predicate until it holds (a positive signal).
template <typename Pred>
bool waitFor(Pred pred, std::chrono::milliseconds limit = 20s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

// A hook that holds the engine thread inside a tick's pass until released.
struct PassGate {
  std::mutex mu;
  std::condition_variable cv;
  bool armed = false, held = false, released = false;

  void arm() {
    std::lock_guard lk(mu);
    armed = true;
  }

  void hold() {  // on the engine thread
    std::unique_lock lk(mu);
    if (!armed) return;
    armed = false;
    held = true;
    cv.notify_all();
    cv.wait(lk, [&] { return released; });
  }
  void waitHeld() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return held; });
  }
  void release() {
    std::lock_guard lk(mu);
    released = true;
    cv.notify_all();
  }
};

double metric(prometheus::Registry& registry, const std::string& name) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name || family.metric.empty()) continue;
    const auto& m = family.metric.front();
    return family.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
  }
  return -1;
}

// ---- the ack contract -------------------------------------------------------

// Two agents: a record of the one ahead waits in the reorder buffer until
// the other reaches its time (or the wall clock passes it), and its batch's
// ack (`done`) comes only then, with the record counted by the engine.
TEST(AckContract, ABatchIsAcknowledgedOnlyOnceItsRecordsAreInTheEngine) {
  const topology::Topology topo = smallFabric();
  const double t0 = 1.7e9;
  std::atomic<double> now{t0};
  std::string error;
  auto live = LiveAnalyzer::create(
      topo, {}, nullptr, [&] { return now.load(); }, &error, nullptr);
  ASSERT_TRUE(live) << error;

  BatchResult r = live->ingest(probes(topo, 0, 1, t0 - 1, 1));  // agent A alone: at once
  EXPECT_EQ(r.accepted, 1u);
  EXPECT_EQ(live->counters().probes, 1u);

  // Agent B, ahead of A: held until A gets there.
  std::promise<uint64_t> engine_had;  // the engine's probe count when B's ack came
  live->submit(probes(topo, 4, 1, t0 + 1, 3), [&](BatchResult res) {
    EXPECT_EQ(res.accepted, 3u);
    engine_had.set_value(live->counters().probes);
  });
  ASSERT_TRUE(waitFor([&] { return live->pathStats().held_records == 3; }));
  EXPECT_EQ(live->pathStats().pending_batches, 1u) << "not acknowledged while held";
  EXPECT_EQ(live->counters().probes, 1u);

  // A reaches B's time: B's records go to the engine, then B is acknowledged.
  live->ingest(probes(topo, 0, 2, t0 + 1, 1));
  EXPECT_EQ(engine_had.get_future().get(), 5u) << "every record of B was in the engine";
  EXPECT_EQ(live->pathStats().pending_batches, 0u);

  // A resend of a held batch is acknowledged with the first copy, as duplicate.
  std::promise<void> first, again;
  live->submit(probes(topo, 4, 2, t0 + 3, 1), [&](BatchResult) { first.set_value(); });
  live->submit(probes(topo, 4, 2, t0 + 3, 1), [&](BatchResult res) {
    EXPECT_TRUE(res.duplicate);
    again.set_value();
  });
  ASSERT_TRUE(waitFor([&] { return live->counters().duplicate_batches == 1; }));
  EXPECT_EQ(live->pathStats().pending_batches, 1u);
  now = t0 + 10;  // the wall clock passes it: the watermark's floor
  first.get_future().get();
  again.get_future().get();
  EXPECT_EQ(live->counters().probes, 6u);
  EXPECT_EQ(live->counters().too_late, 0u);
}

// A copy of a held batch after dedup forgot its epoch (the agent sent many
// epochs since) still waits for, and counts as, the first copy.
TEST(AckContract, ACopyOfAHeldBatchIsADuplicateEvenWhenDedupForgotItsEpoch) {
  const topology::Topology topo = smallFabric();
  const double t0 = 1.7e9;
  std::atomic<double> now{t0};
  std::string error;
  auto live = LiveAnalyzer::create(
      topo, {}, nullptr, [&] { return now.load(); }, &error, nullptr);
  ASSERT_TRUE(live) << error;
  live->ingest(probes(topo, 0, 1, t0 - 1, 1));  // agent A, behind: holds B's records
  std::promise<void> first, copy;
  live->submit(probes(topo, 4, 1, t0 + 1, 2), [&](BatchResult) { first.set_value(); });
  for (uint64_t epoch = 2; epoch < 12; ++epoch) {  // B's empty batches of other epochs
    v1::Batch empty = probes(topo, 4, 1, t0, 0);
    empty.set_epoch(epoch);
    live->ingest(empty);
  }
  live->submit(probes(topo, 4, 1, t0 + 1, 2), [&](BatchResult r) {
    EXPECT_TRUE(r.duplicate);
    copy.set_value();
  });
  ASSERT_TRUE(waitFor([&] { return live->counters().duplicate_batches == 1; }));
  now = t0 + 10;
  first.get_future().get();
  copy.get_future().get();
  EXPECT_EQ(live->counters().probes, 3u) << "the copy's records are not ingested again";
}

// ---- backpressure -------------------------------------------------------------

struct Gated {
  topology::Topology topo = smallFabric();
  double t0 = 1.7e9;
  std::atomic<double> now{t0};
  PassGate gate;
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::atomic<int> logged{0};
  std::unique_ptr<LiveAnalyzer> live;

  explicit Gated(double wall_ahead_s) {
    now = t0 + wall_ahead_s;
    LiveOptions o;
    o.queue_records = 4;
    o.test_hold_pass = [this] { gate.hold(); };
    gate.arm();
    o.log = [this](const std::string&) { ++logged; };
    std::string error;
    live = LiveAnalyzer::create(
        topo, o, registry, [this] { return now.load(); }, &error, nullptr);
    EXPECT_TRUE(live) << error;
  }
};

// The engine thread is held in a pass; the queue fills; the next batch's
// submit waits (its stream would stop reading) until the engine takes the
// queue. Nothing is dropped, the wait is metered, and the tick that ran
// while records waited did not move the engine past them: none is late.
TEST(Backpressure, AFullQueueBlocksIngestMetersItAndDropsNothing) {
  Gated g(/*wall_ahead_s=*/20);  // the records are 20 s old: within the late window
  std::thread ticker([&] { g.live->tick(g.now - 2); });
  g.gate.waitHeld();

  std::promise<BatchResult> a_done, b_done;
  g.live->submit(probes(g.topo, 0, 1, g.t0, 3), [&](BatchResult r) { a_done.set_value(r); });
  EXPECT_EQ(g.live->pathStats().queued_records, 3u);
  std::atomic<bool> b_queued{false};
  std::thread pusher([&] {
    g.live->submit(probes(g.topo, 0, 2, g.t0, 3), [&](BatchResult r) { b_done.set_value(r); });
    b_queued = true;
  });
  ASSERT_TRUE(waitFor([&] { return g.live->pathStats().waiting_pushes == 1; }));
  EXPECT_FALSE(b_queued) << "3 + 3 records do not fit a queue of 4";

  g.gate.release();
  ticker.join();
  pusher.join();
  EXPECT_EQ(a_done.get_future().get().accepted, 3u);
  EXPECT_EQ(b_done.get_future().get().accepted, 3u);
  EXPECT_GT(g.live->pathStats().blocked_seconds, 0.0);

  g.live->tick(g.now - 2);
  exporter::IngestCounters c = g.live->counters();
  EXPECT_EQ(c.probes, 6u);
  EXPECT_EQ(c.late, 0u) << "the tick held the engine back for the queued records";
  EXPECT_EQ(c.too_late, 0u);
  EXPECT_GT(metric(*g.registry, "netdiag_ingest_queue_blocked_seconds_total"), 0.0);
  EXPECT_EQ(metric(*g.registry, "netdiag_ingest_queue_capacity_records"), 4.0);
  EXPECT_EQ(metric(*g.registry, "netdiag_ingest_behind_late_window_total"), 0.0);
  EXPECT_EQ(g.logged, 0);
}

// The stream side (server/agent_stream.h) never blocks a gRPC thread: a
// batch that does not fit is parked, its submit returns at once, and the
// stream is told to read on only when the engine thread let it in.
TEST(Backpressure, AParkedBatchResumesItsStreamOnlyOnceQueuedAndHoldsNoThread) {
  Gated g(/*wall_ahead_s=*/20);
  std::thread ticker([&] { g.live->tick(g.now - 2); });
  g.gate.waitHeld();

  std::promise<BatchResult> a_done, b_done;
  std::atomic<int> a_resumed{0}, b_resumed{0};
  g.live->submit(
      probes(g.topo, 0, 1, g.t0, 3), [&](BatchResult r) { a_done.set_value(r); },
      [&] { ++a_resumed; });
  EXPECT_EQ(a_resumed.load(), 1) << "queued at once: read on at once";
  g.live->submit(
      probes(g.topo, 0, 2, g.t0, 3), [&](BatchResult r) { b_done.set_value(r); },
      [&] { ++b_resumed; });
  // Returned without waiting, the batch parked.
  EXPECT_EQ(b_resumed.load(), 0);
  EXPECT_EQ(g.live->pathStats().waiting_pushes, 1u);

  g.gate.release();
  ticker.join();
  ASSERT_TRUE(waitFor([&] { return b_resumed.load() == 1; }));
  g.live->tick(g.now - 2);
  EXPECT_EQ(a_done.get_future().get().accepted, 3u);
  EXPECT_EQ(b_done.get_future().get().accepted, 3u);
  EXPECT_EQ(a_resumed.load(), 1);
  EXPECT_EQ(b_resumed.load(), 1);
  EXPECT_EQ(g.live->counters().probes, 6u);
  EXPECT_EQ(g.live->counters().too_late, 0u);
}

// Records waiting longer than the engine's late window: the analyzer says so
// (a counter and a rate-limited log line) instead of aging them silently.
TEST(Backpressure, FallingBehindTheLateWindowIsCountedAndLogged) {
  Gated g(/*wall_ahead_s=*/40);
  std::thread ticker([&] { g.live->tick(g.now - 2); });
  g.gate.waitHeld();
  std::promise<void> done;
  g.live->submit(probes(g.topo, 0, 1, g.t0, 2), [&](BatchResult) { done.set_value(); });
  g.gate.release();
  ticker.join();
  done.get_future().get();
  EXPECT_EQ(metric(*g.registry, "netdiag_ingest_behind_late_window_total"), 1.0);
  EXPECT_GE(metric(*g.registry, "netdiag_ingest_backlog_seconds"), 30.0);
  EXPECT_EQ(g.logged, 1);
  EXPECT_EQ(g.live->counters().probes, 2u);
}

// ---- readers never wait for a pass -------------------------------------------

TEST(Readers, LocateAndMetricsAnswerWhileAPassIsHeld) {
  const topology::Topology topo = smallFabric();
  auto gate = std::make_shared<PassGate>();
  DaemonOptions o;
  o.grpc.address = "127.0.0.1:0";
  o.web_listen = "127.0.0.1:0";
  o.tick_s = 0.05;
  o.live.test_hold_pass = [gate] { gate->hold(); };
  std::string error;
  auto d = Daemon::start(topo, o, &error);
  ASSERT_TRUE(d) << error;
  d->analyzer().ingest(probes(topo, 0, 1, wallNow(), 2));
  gate->arm();
  gate->waitHeld();  // the clock thread's tick is inside its pass now

  httplib::Client c("127.0.0.1", d->httpPort());
  c.set_read_timeout(30, 0);
  auto locate = c.Get("/api/v1/locate");
  ASSERT_TRUE(locate);
  EXPECT_EQ(locate->status, 200);
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("netdiag_ingest_queue_records"), std::string::npos);
  EXPECT_EQ(d->analyzer().counters().probes, 2u);
  EXPECT_EQ(d->analyzer().agents().size(), 1u);
  gate->release();
  d->stop();
}

// ---- the agent table -----------------------------------------------------------

TEST(AgentTable, UnknownAgentsAreRejectedCountedAndNeverStored) {
  const topology::Topology topo = smallFabric();
  std::string error;
  auto live = LiveAnalyzer::create(topo, {}, nullptr, wallNow, &error, nullptr);
  ASSERT_TRUE(live) << error;
  for (int i = 0; i < 1000; ++i) {
    v1::Batch b = probes(topo, 0, 1, wallNow(), 1);
    b.set_agent("nosuch-" + std::to_string(i));
    BatchResult r = live->ingest(b);
    EXPECT_TRUE(r.rejected);
    EXPECT_EQ(r.accepted, 0u);
  }
  auto agents = live->agents();
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0].agent, exporter::kUnknownAgent);
  EXPECT_EQ(agents[0].not_authorized, 1000u);
  EXPECT_EQ(live->counters().not_authorized, 1000u);
  EXPECT_EQ(live->counters().probes, 0u);
}

// ---- bounded history ------------------------------------------------------------

// Resolved incidents restored from the database: memory keeps the open ones
// and the newest `recent_incidents` resolved ones; the API serves the whole
// history from the database. Without one, the cap is the history.
TEST(History, MemoryKeepsARecentListAndTheDatabaseTheRest) {
  const topology::Topology topo = smallFabric();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("netdiag_history_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "incidents.db").string();
  {
    auto opened = store::openAndMigrate(db);
    ASSERT_TRUE(opened) << opened.message();
    std::vector<store::IncidentRow> rows;
    for (int i = 0; i < 12; ++i) {
      analyzer::Incident inc;
      inc.id = "inc-" + std::to_string(100 + i);
      inc.kind = analyzer::IncidentKind::kLinkLoss;
      inc.link = 2 * static_cast<topology::DirLinkId>(i % 4);
      inc.opened_at = 1000 + 10 * i;
      if (i != 11) inc.resolved_at = 1005 + 10 * i;  // the last one stays open
      rows.push_back(analyzer::toRow(topo, inc, 1200));
    }
    ASSERT_TRUE(store::upsertIncidents(*opened, rows));
  }
  LiveOptions o;
  o.db_path = db;
  o.recent_incidents = 3;
  std::string error;
  auto live = LiveAnalyzer::create(topo, o, nullptr, wallNow, &error, nullptr);
  ASSERT_TRUE(live) << error;
  SnapshotPtr s = live->snapshot();
  ASSERT_EQ(s->report.incidents.size(), 4u) << "1 open + 3 recent resolved";
  EXPECT_EQ(s->report.incidents.front().id, "inc-108");
  EXPECT_EQ(live->incidents({})["incidents"].size(), 12u) << "the whole history, from SQLite";
  EXPECT_TRUE(live->incident("inc-100")) << "an old one, from SQLite";
  IncidentFilter open;
  open.only_open = true;
  EXPECT_EQ(live->incidents(open)["incidents"].size(), 1u);
  live.reset();

  o.db_path.clear();
  live = LiveAnalyzer::create(topo, o, nullptr, wallNow, &error, nullptr);
  ASSERT_TRUE(live) << error;
  EXPECT_TRUE(live->incidents({})["incidents"].empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace netdiag::server
