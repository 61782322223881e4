#include "server/live_analyzer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include <prometheus/gauge.h>
#include <pthread.h>

#include "analyzer/persist.h"
#include "planner/fabric_index.h"
#include "proto/convert.h"
#include "server/dedup.h"
#include "server/incident_writer.h"
#include "server/ingest_metrics.h"
#include "server/ingest_queue.h"
#include "server/reorder_buffer.h"
#include "store/incident_store.h"
#include "store/migrations.h"
#include "topology/display_text.h"

namespace netdiag::server {
namespace {

constexpr double kAuthorityLogInterval_s = 60;

// Rate limit of a log line: the first occurrence, then at most one message
// per interval carrying the count since the last one.
struct LogLimit {
  double logged_at = -std::numeric_limits<double>::infinity();
  uint64_t unlogged = 0;  // occurrences since the last message

  // The suffix to append when a message is due now (and resets), else nullopt.
  std::optional<std::string> due(double now, uint64_t records) {
    unlogged += records;
    if (now - logged_at < kAuthorityLogInterval_s) return std::nullopt;
    std::string tail = std::to_string(unlogged) + " record(s) rejected since the last message" +
                       (std::isfinite(logged_at) ? "" : " (first rejection)") +
                       "; next message in >= 60 s";
    logged_at = now;
    unlogged = 0;
    return tail;
  }
};

struct AgentState {
  double last_seen = 0;
  int streams = 0;
  uint64_t batches = 0, records = 0;
  uint64_t malformed = 0, future = 0, not_authorized = 0;    // records rejected, by reason
  double newest = -std::numeric_limits<double>::infinity();  // telemetry time reached
  LogLimit authority_log;
};

std::string shown(const std::string& s) { return "\"" + topology::escapeForDisplay(s) + "\""; }

// A batch accepted by the engine thread whose records are not all in the
// engine yet; its ack (and those of duplicates sent meanwhile) waits for it.
// It owns the batch's records until the last is in the engine, and is
// their run in the reorder buffer (positions: probes, then ports, then lldp).
struct Pending : ReorderBuffer::Run {
  BatchResult result;
  std::function<void(BatchResult)> done;
  std::vector<std::function<void(BatchResult)>> duplicates;
  std::string key;
  std::vector<telemetry::ProbeRecord> probes;
  std::vector<telemetry::PortRecord> ports;
  std::vector<telemetry::LldpRecord> lldp;
};

std::string dedupKey(const std::string& agent, uint64_t epoch, uint64_t seq) {
  return agent + '\0' + std::to_string(epoch) + '/' + std::to_string(seq);
}

nlohmann::json evidenceJson(const analyzer::LinkEvidence& e) {
  return {{"probes", e.probes},
          {"lost", e.lost},
          {"loss_ratio", e.probes > 0 ? e.lost / e.probes : 0.0}};
}

// Every open incident and the newest `recent` resolved ones, order kept.
void boundHistory(std::vector<analyzer::Incident>& incidents, size_t recent) {
  size_t resolved = 0;
  for (const auto& i : incidents) resolved += i.resolved_at.has_value();
  if (resolved <= recent) return;
  size_t drop = resolved - recent;  // the oldest resolved ones, in report order
  std::erase_if(incidents, [&](const analyzer::Incident& i) {
    if (!i.resolved_at || drop == 0) return false;
    --drop;
    return true;
  });
}

// A tick or flush for the engine thread; the caller waits for `done`.
struct Request {
  enum class Kind { kTick, kFlush } kind = Kind::kTick;
  double t = 0;
  bool done = false;
};

}  // namespace

struct LiveAnalyzer::Impl {
  Impl(const topology::Topology& t, LiveOptions o, std::shared_ptr<prometheus::Registry> r,
       std::function<double()> c)
      : topo(t),
        options(std::move(o)),
        resolver(t),
        authority(t, options.collectors, options.accept_sim_agents),
        clock(std::move(c)),
        queue(options.queue_records),
        registry(std::move(r)),
        engine(t, options.engine),
        dedup(options.dedup_window) {}

  ~Impl() {
    queue.close();
    {
      std::lock_guard lk(req_mu);
      stop = true;
    }
    queue.wake();
    if (thread.joinable()) thread.join();
  }

  // ---- set in create(), then read-only: any thread
  const topology::Topology& topo;
  const LiveOptions options;
  const proto::Resolver resolver;
  const Authority authority;
  planner::Plan plan;  // the base plan
  planner::Sizing sizing;
  std::unique_ptr<planner::FabricIndex> index;  // of `topo`, for focused plans
  std::function<double()> clock;
  IngestQueue queue;  // thread-safe itself
  std::shared_ptr<prometheus::Registry> registry;

  // ---- the agent table and ingest counters: streams and the engine thread
  // update them under `ledger_mu`, held only for a few fields.
  mutable std::mutex ledger_mu;
  // Only identities the authority knows get an entry, so the table is bounded
  // by the topology's nodes, the declared collectors and the accepted sim
  // agents; everything from any other name is counted in `unknown` (one
  // bucket, so junk names on the wire cost nothing each).
  std::map<std::string, AgentState> agents;
  AgentState unknown;
  // Every entry's `newest`, so the watermark's minimum costs O(1) per round
  // whatever the number of agents.
  std::multiset<double> newest_by_agent;
  exporter::IngestCounters counters;
  analyzer::IngestStats engine_stats;  // copied by the engine thread before each ack
  size_t held_records = 0, pending_batches = 0;

  // ---- history beyond the snapshot's bound, read from the database (WAL:
  // beside the writer's connection); readers take turns on it, never the engine.
  mutable std::mutex reader_mu;
  mutable std::optional<store::Database> reader;

  // ---- the served plan: the base, or the base focused on the snapshot's
  // unsettled links; made again (on the requesting thread, never the
  // engine's) when those change, and each agent's share built on request
  std::mutex plans_mu;
  // The links netdiag's drains hold out (setDrained), and those the plans
  // below were made for: the base plan replanned around them
  // (formats.md §1: a drained link leaves the ECMP graph, the planner's too).
  std::vector<topology::LinkId> drained_next, drained_planned;
  std::optional<planner::Plan> base_drained;  // the base plan around drained_planned
  planner::Plan served;
  std::vector<topology::DirLinkId> served_focus;
  size_t served_added = 0;
  uint64_t next_version = 1;
  SnapshotPtr focus_of;                 // the snapshot `served_focus` was taken from
  std::vector<proto::Inbound> inbound;  // who probes each node under `served`
  std::unordered_map<topology::NodeId, v1::AgentPlan> plans;
  // netdiag_plan_version, _focus_links, _focus_flows_added (with a registry)
  prometheus::Gauge *g_plan_version = nullptr, *g_focus_links = nullptr, *g_focus_flows = nullptr;

  // Brings `served` up to the snapshot's unsettled links. plans_mu held.
  void refreshServedLocked() {
    bool replanned = false;
    if (drained_next != drained_planned) {
      drained_planned = drained_next;
      const planner::Constraints c{drained_planned, {}};
      index = std::make_unique<planner::FabricIndex>(topo, c);
      if (drained_planned.empty()) {
        base_drained.reset();
      } else {
        base_drained = planner::replan(topo, plan, c);
      }
      replanned = true;
    }
    const planner::Plan& base = base_drained ? *base_drained : plan;
    SnapshotPtr now = snapshot();
    if (!replanned && now == focus_of && served.version != 0) return;  // nothing new
    focus_of = now;
    std::vector<topology::DirLinkId> focus;
    if (options.focus_links > 0) {
      focus = analyzer::unsettledLinks(now->report.incidents, options.focus_links);
    }
    if (!replanned && focus == served_focus && served.version != 0) return;
    planner::AdaptResult a;
    if (focus.empty()) {
      a.plan = base;
    } else {
      a = planner::focusPlan(*index, base, focus);
    }
    served = std::move(a.plan);
    served.version = next_version++;
    served_focus = std::move(focus);
    served_added = a.flows_added;
    inbound = proto::inboundByNode(topo, served);
    plans.clear();
    if (g_plan_version) {
      g_plan_version->Set(static_cast<double>(served.version));
      g_focus_links->Set(static_cast<double>(served_focus.size()));
      g_focus_flows->Set(static_cast<double>(served_added));
    }
    if (options.log && served.version > 1) {
      options.log("plan version " + std::to_string(served.version) + ": " +
                  (replanned ? "around " + std::to_string(drained_planned.size()) +
                                   " link(s) netdiag holds drained; "
                             : std::string()) +
                  (served_focus.empty() ? std::string("the base plan (no unsettled links)")
                                        : std::to_string(served_added) + " flow(s) added across " +
                                              std::to_string(served_focus.size()) +
                                              " link(s) of unlocalized incidents"));
    }
  }

  // ---- the published snapshot: swapped under `snap_mu`, never modified
  mutable std::mutex snap_mu;
  SnapshotPtr snap = std::make_shared<Snapshot>();

  // ---- requests to the engine thread
  std::mutex req_mu;
  std::condition_variable req_cv;
  std::deque<Request*> requests;
  bool stop = false;

  // ---- the engine thread's alone
  analyzer::Engine engine;
  Deduplicator dedup;
  // Per port, the identity whose counters it last took (0: none yet): when
  // another one reports the port (a switch moved from the SNMP poller to
  // its own agent), its counters start from a new origin.
  std::vector<uint64_t> port_source = std::vector<uint64_t>(topo.portCount(), 0);
  ReorderBuffer held;  // of the pending batches' records
  std::unordered_map<std::string, std::unique_ptr<Pending>> pending;
  std::map<std::string, analyzer::Incident> dirty;  // changed since the last hand-over
  std::unique_ptr<exporter::AnalyzerMetrics> metrics;
  std::unique_ptr<IngestMetrics> ingest_metrics;
  std::unique_ptr<IncidentWriter> writer;
  uint64_t published_passes = 0;
  // The stream clock (options.stream_clock): the newest tick marker, and the
  // newest record time, read so far in stream order.
  double stream_tick = -std::numeric_limits<double>::infinity();
  double stream_newest = -std::numeric_limits<double>::infinity();
  // Where the last release stopped (the engine has every record before it).
  double released_to = -std::numeric_limits<double>::infinity();
  double behind_logged_at = -std::numeric_limits<double>::infinity();
  std::thread thread;

  // The entry of a known identity, made on first use.
  AgentState& agentLocked(const std::string& name) {
    auto [it, made] = agents.try_emplace(name);
    if (made) newest_by_agent.insert(it->second.newest);
    return it->second;
  }

  // The ledger's engine-side view, for readers.
  exporter::IngestCounters countersLocked() const {
    exporter::IngestCounters c = counters;
    c.probes = engine_stats.probes;
    c.ports = engine_stats.ports;
    c.lldp = engine_stats.lldp;
    c.late = engine_stats.late;
    c.too_late = engine_stats.too_late;
    return c;
  }

  std::vector<exporter::AgentStatus> agentStatusLocked() const {
    std::vector<exporter::AgentStatus> out;
    for (const auto& [name, a] : agents) {
      out.push_back({name, a.last_seen, a.streams > 0, a.batches, a.records, a.malformed, a.future,
                     a.not_authorized});
    }
    if (unknown.not_authorized > 0) {
      exporter::AgentStatus u;
      u.agent = exporter::kUnknownAgent;
      u.not_authorized = unknown.not_authorized;
      out.push_back(u);
    }
    return out;
  }

  // Counts a refused batch's records as not_authorized under `who` (or the
  // unknown bucket) and returns the log line when one is due.
  std::string refuseLocked(const std::string& name, const Authority::Identity& who,
                           const v1::Batch& batch, const std::string& why) {
    const uint64_t n =
        static_cast<uint64_t>(batch.probes_size()) + batch.ports_size() + batch.lldp_size();
    counters.not_authorized += n;
    const bool known = who.kind != Authority::Kind::kUnknown;
    AgentState& a = known ? agentLocked(name) : unknown;
    a.not_authorized += n;
    auto tail = a.authority_log.due(clock(), n);
    if (!tail) return {};
    return "agent " + shown(name) + " batch " + std::to_string(batch.epoch()) + "/" +
           std::to_string(batch.seq()) + " refused (" + std::to_string(n) +
           " record(s) not ingested, reason not_authorized): " + why + " [" + *tail +
           (known ? "" : ", all unknown agents together") + "]";
  }

  SnapshotPtr snapshot() const {
    std::lock_guard lk(snap_mu);
    return snap;
  }

  // ================= the engine thread =================

  // How far back the engine's clock may be held for records still waiting
  // in the queue (or for room in it): back to the oldest of them, but no
  // further than the engine's late tolerance behind the wall-clock floor,
  // so an agent replaying an old spool cannot stall everyone else.
  double queueHold(double now) const {
    return std::max(queue.oldest(), now - options.delay_s - options.engine.late_tolerance_s);
  }

  // The watermark is the newest time every agent heard from has reached,
  // connected or not, between the analyzer's clock minus the delay and its
  // clock plus max_future_s. Counting only connected agents would let the
  // one agent left connected in a reconnect storm set it alone, and a clock
  // of its running ahead would turn every other agent's records too_late;
  // a departed agent holds nothing back beyond the delay. So an agent's
  // clock moves the engine ahead of the analyzer's only while every agent
  // heard from is that far ahead too (a fast simulation), and never by more
  // than the tolerated skew. Records still waiting in the queue cap it
  // (queueHold), so backpressure never turns them late.
  double watermark() const {
    if (options.stream_clock) return streamWatermark();
    const double now = clock();
    double w = std::numeric_limits<double>::infinity();
    {
      std::lock_guard lk(ledger_mu);
      if (!newest_by_agent.empty()) w = *newest_by_agent.begin();
    }
    w = std::max(w, now - options.delay_s);
    w = std::min(w, now + options.max_future_s);
    return std::min(w, queueHold(now));
  }

  // The watermark on the stream's clock: a function of what was read so far
  // in stream order only (LiveOptions::stream_clock). Agents not yet heard
  // with a record (an entry made when a batch was decoded, ahead of the
  // engine thread) do not count. The future check at decoding bounds every
  // term by the analyzer's clock plus max_future_s.
  double streamWatermark() const {
    const double lag = options.delay_s;
    double w = std::max(stream_tick - lag, stream_newest - lag - options.engine.late_tolerance_s);
    std::lock_guard lk(ledger_mu);
    auto heard = newest_by_agent.upper_bound(-std::numeric_limits<double>::infinity());
    if (heard != newest_by_agent.end()) w = std::max(w, *heard);
    return w;
  }

  // Dedup, port origins, the agent's counters, then into the reorder buffer.
  void accept(DecodedBatch& b,
              std::vector<std::pair<std::function<void(BatchResult)>, BatchResult>>& completed) {
    // A copy of a batch still in the reorder buffer is acked with it, even
    // when dedup forgot its epoch meanwhile (many epochs sent since): its
    // records are counted once, and a second Pending under the same key
    // would leave the buffer pointing at a freed one.
    std::string key = dedupKey(b.agent, b.epoch, b.seq);
    auto it = pending.find(key);
    if (it != pending.end() || dedup.seen(b.agent, b.epoch, b.seq)) {
      {
        std::lock_guard lk(ledger_mu);
        ++counters.duplicate_batches;
      }
      if (it != pending.end()) {
        it->second->duplicates.push_back(std::move(b.done));
      } else {
        BatchResult dup;
        dup.duplicate = true;
        completed.emplace_back(std::move(b.done), std::move(dup));
      }
      return;
    }
    dedup.mark(b.agent, b.epoch, b.seq);
    const uint64_t source = (static_cast<uint64_t>(b.who.kind) << 32 | b.who.index) + 1;
    for (telemetry::PortRecord& r : b.ports) {
      uint64_t& last = port_source[r.port];
      r.new_origin = last != 0 && last != source;
      last = source;
    }
    auto p = std::make_unique<Pending>();
    p->key = key;
    p->done = std::move(b.done);
    BatchResult& result = p->result;
    result.future = b.future;
    result.not_authorized = b.not_authorized;
    result.errors = std::move(b.errors);
    result.warnings = std::move(b.warnings);
    double newest = -std::numeric_limits<double>::infinity();
    p->probes = std::move(b.probes);
    p->ports = std::move(b.ports);
    p->lldp = std::move(b.lldp);
    p->sequence.reserve(p->probes.size() + p->ports.size() + p->lldp.size());
    auto hold = [&](const auto& records) {
      for (const auto& r : records) {
        newest = std::max(newest, r.t);
        p->sequence.push_back({r.t, static_cast<uint32_t>(p->sequence.size())});
      }
    };
    hold(p->probes);
    hold(p->ports);
    hold(p->lldp);
    result.accepted = p->sequence.size();
    stream_newest = std::max(stream_newest, newest);
    {
      std::lock_guard lk(ledger_mu);
      AgentState& agent = agentLocked(b.agent);
      if (newest > agent.newest) {
        newest_by_agent.erase(newest_by_agent.find(agent.newest));
        newest_by_agent.insert(newest);
        agent.newest = newest;
      }
      ++counters.batches;
      counters.malformed += b.malformed;
      counters.future += b.future;
      counters.not_authorized += b.not_authorized;
      counters.port_id_mismatch += b.port_id_mismatch;
      ++agent.batches;
      agent.records += result.accepted;
      agent.malformed += b.malformed;
      agent.future += b.future;
      agent.not_authorized += b.not_authorized;
      if (b.not_authorized > 0) {
        if (auto tail = agent.authority_log.due(clock(), b.not_authorized)) {
          result.authority_log =
              "agent " + shown(b.agent) + " batch " + std::to_string(b.epoch) + "/" +
              std::to_string(b.seq) + ": " + std::to_string(b.not_authorized) +
              " record(s) rejected, reason not_authorized; first: " + b.first_refused + " [" +
              *tail + "]";
        }
      }
    }
    if (result.accepted == 0) {
      completed.emplace_back(std::move(p->done), std::move(p->result));
      return;
    }
    held.add(*p);
    pending.emplace(std::move(key), std::move(p));  // not there: checked above
  }

  // Hands the engine every held record at or below the watermark (all of
  // them when `all`), then the acks of the batches now complete.
  void release(bool all,
               std::vector<std::pair<std::function<void(BatchResult)>, BatchResult>>& completed) {
    const double w = all ? std::numeric_limits<double>::infinity() : watermark();
    if (!all) released_to = std::max(released_to, w);
    std::vector<Pending*> finished;
    held.release(
        w,
        [this](ReorderBuffer::Run& run, size_t pos) {
          const Pending& p = static_cast<const Pending&>(run);
          // A run's records mostly go in a row: start loading the flow
          // state of one a few places on, so its cache misses overlap this
          // one's work instead of following it.
          constexpr size_t kAhead = 4;
          if (run.next + kAhead < run.sequence.size()) {
            const uint32_t ahead = run.sequence[run.next + kAhead].pos;
            if (ahead < p.probes.size()) engine.prefetch(p.probes[ahead]);
          }
          if (pos < p.probes.size()) {
            engine.onProbe(p.probes[pos]);
            return;
          }
          pos -= p.probes.size();
          if (pos < p.ports.size()) {
            engine.onPort(p.ports[pos]);
            return;
          }
          engine.onLldp(p.lldp[pos - p.ports.size()]);
        },
        [&finished](ReorderBuffer::Run& run) { finished.push_back(static_cast<Pending*>(&run)); });
    for (Pending* p : finished) {
      for (auto& d : p->duplicates) {
        BatchResult dup;
        dup.duplicate = true;
        completed.emplace_back(std::move(d), std::move(dup));
      }
      completed.emplace_back(std::move(p->done), std::move(p->result));
      pending.erase(p->key);
    }
    std::lock_guard lk(ledger_mu);
    engine_stats = engine.stats();
    held_records = held.records();
    pending_batches = pending.size();
  }

  void publish() {
    auto s = std::make_shared<Snapshot>();
    s->report = engine.report();
    boundHistory(s->report.incidents, options.recent_incidents);
    s->evidence.resize(topo.dirLinkCount());
    for (topology::DirLinkId d = 0; d < s->evidence.size(); ++d) {
      s->evidence[d] = engine.linkEvidence(d);
    }
    for (topology::LinkId l : drained_out) {
      s->drained_counters[l] = engine.linkCounters(l, options.drained_counter_window_s);
    }
    s->stats = engine.stats();
    s->background_loss = engine.backgroundLoss();
    published_passes = s->stats.passes;
    if (writer && !dirty.empty()) writer->submit(std::move(dirty), s->report.generated_at);
    dirty.clear();
    std::lock_guard lk(snap_mu);
    snap = std::move(s);
  }

  // Each item read from the queue in order: a batch, or on the bus a tick
  // marker. On the stream's clock, records go to the engine at these
  // places in the stream and nowhere else.
  void take(DecodedBatch& b,
            std::vector<std::pair<std::function<void(BatchResult)>, BatchResult>>& completed) {
    if (b.tick) {
      stream_tick = std::max(stream_tick, *b.tick);
      applyDrain();
      release(false, completed);
      engine.advanceTo(stream_tick - options.delay_s);  // passes on a silent fabric too
      return;
    }
    accept(b, completed);
    if (options.stream_clock) release(false, completed);
  }

  // What the drain coordinator published since the last pass, handed to
  // the engine on its own thread.
  std::mutex drain_mu;
  std::optional<analyzer::DrainState> drain_next;
  std::set<topology::LinkId> drained_out;  // the engine thread's copy
  void applyDrain() {
    decltype(drain_next) next;
    {
      std::lock_guard lk(drain_mu);
      next.swap(drain_next);
    }
    if (!next) return;
    engine.setDrained(*next);
    drained_out = next->out;
  }

  void tickOnEngine(double t) {
    if (options.test_hold_pass) options.test_hold_pass();
    applyDrain();
    const double now = clock();
    // Never past a record still waiting in the queue (within the late window).
    if (!options.stream_clock) engine.advanceTo(std::min(t, queueHold(now)));
    publish();
    IngestPathState path;
    path.queue_records = queue.depthRecords();
    path.queue_capacity = queue.capacityRecords();
    path.held_records = held.records();
    path.blocked_seconds = queue.blockedSeconds();
    const double oldest = queue.oldest();
    path.backlog_s = std::isfinite(oldest) ? std::max(0.0, now - options.delay_s - oldest) : 0;
    path.behind = path.backlog_s > options.engine.late_tolerance_s;
    path.watermark_lag_s =
        std::isfinite(released_to) ? std::max(0.0, now - options.delay_s - released_to) : 0;
    if (path.behind && now - behind_logged_at >= kAuthorityLogInterval_s && options.log) {
      behind_logged_at = now;
      char buf[320];
      std::snprintf(
          buf, sizeof buf,
          "ingest: the oldest record waiting for the engine is %.1f s behind its clock "
          "(wall clock - %g s), beyond the late window of %g s: the analyzer is not "
          "keeping up (or an agent replays an old backlog)%s. %zu record(s) queued; "
          "next message in >= 60 s",
          path.backlog_s, options.delay_s, options.engine.late_tolerance_s,
          options.stream_clock ? ", catching up on the stream" : "; such records count as too_late",
          path.queue_records);
      options.log(buf);
    }
    if (ingest_metrics) ingest_metrics->update(path);
  }

  // The analyzer's metrics from the snapshot the last pass published, on
  // the thread that ticks (not the engine's, which goes on ingesting).
  std::mutex metrics_mu;  // one update at a time
  void updateMetrics() {
    if (!metrics) return;
    const SnapshotPtr s = snapshot();
    exporter::IngestCounters c;
    std::vector<exporter::AgentStatus> a;
    {
      std::lock_guard lk(ledger_mu);
      c = countersLocked();
      a = agentStatusLocked();
    }
    std::lock_guard lk(metrics_mu);
    metrics->update({s->report, s->evidence, s->stats, s->background_loss}, c, a, clock());
  }

  void run() {
    std::vector<DecodedBatch> in;
    std::vector<std::pair<std::function<void(BatchResult)>, BatchResult>> completed;
    for (;;) {
      // Wake when the oldest held record is due by the wall clock (bounded,
      // as the clock may be a test's), or at once on a batch or a request.
      auto timeout = std::chrono::milliseconds(1000);
      if (!held.empty()) {
        const double due_s = held.oldest() + options.delay_s - clock();
        timeout =
            std::chrono::milliseconds(static_cast<int64_t>(std::clamp(due_s * 1000, 1.0, 100.0)));
      }
      in.clear();
      queue.popAll(in, timeout);
      for (DecodedBatch& b : in) take(b, completed);
      std::deque<Request*> reqs;
      bool stopping = false;
      {
        std::lock_guard lk(req_mu);
        reqs.swap(requests);
        stopping = stop;
      }
      bool flushing = stopping;
      for (Request* r : reqs) flushing |= r->kind == Request::Kind::kFlush;
      if (flushing) {
        // Everything that reached the queue goes to the engine first.
        in.clear();
        queue.popAll(in, std::chrono::milliseconds(0));
        for (DecodedBatch& b : in) take(b, completed);
      }
      if (flushing || !options.stream_clock) release(flushing, completed);
      for (auto& [done, result] : completed) done(std::move(result));
      completed.clear();
      for (Request* r : reqs) {
        if (r->kind == Request::Kind::kTick)
          tickOnEngine(r->t);
        else
          publish();
      }
      if (reqs.empty() && engine.stats().passes != published_passes) publish();
      if (!reqs.empty()) {
        {
          std::lock_guard lk(req_mu);
          for (Request* r : reqs) r->done = true;
        }
        req_cv.notify_all();
      }
      if (stopping) return;
    }
  }

  // Runs `kind` on the engine thread and waits for it.
  void request(Request::Kind kind, double t) {
    Request r;
    r.kind = kind;
    r.t = t;
    std::unique_lock lk(req_mu);
    if (stop) return;
    requests.push_back(&r);
    lk.unlock();
    queue.wake();
    lk.lock();
    req_cv.wait(lk, [&] { return r.done; });
  }
};

LiveAnalyzer::LiveAnalyzer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LiveAnalyzer::~LiveAnalyzer() = default;

std::unique_ptr<LiveAnalyzer> LiveAnalyzer::create(const topology::Topology& topo,
                                                   LiveOptions options,
                                                   std::shared_ptr<prometheus::Registry> registry,
                                                   std::function<double()> clock,
                                                   std::string* error,
                                                   std::vector<std::string>* warnings) {
  auto problems = planner::validate(options.budget);
  if (!problems.empty()) {
    if (error) *error = "probe budget: " + problems.front();
    return nullptr;
  }
  if (!(options.max_future_s >= 0) || !std::isfinite(options.max_future_s)) {
    if (error) *error = "the tolerated clock skew (max_future_s) must be a finite number >= 0";
    return nullptr;
  }
  if (options.queue_records == 0) {
    if (error) *error = "the ingest queue must hold at least one record";
    return nullptr;
  }
  auto index = std::make_unique<planner::FabricIndex>(topo, planner::Constraints{});
  planner::SizedPlan sized =
      planner::sizePlan(*index, options.budget, options.plan_seed, options.sizing, 0);
  options.engine.expected_flows = sized.plan.flowCount();
  auto impl =
      std::make_unique<Impl>(topo, std::move(options), std::move(registry), std::move(clock));
  impl->plan = std::move(sized.plan);
  impl->sizing = sized.sizing;
  impl->index = std::move(index);
  Impl& m = *impl;
  if (!m.options.db_path.empty()) {
    auto opened = store::openAndMigrate(m.options.db_path);
    if (!opened) {
      if (error) *error = opened.message();
      return nullptr;
    }
    auto rows = store::loadIncidents(*opened);
    if (!rows) {
      if (error) *error = rows.message();
      return nullptr;
    }
    std::vector<std::string> bad;
    m.engine.restore(analyzer::fromRows(topo, *rows, bad), m.options.evidence_replayed);
    if (warnings) {
      for (auto& p : bad) warnings->push_back(m.options.db_path + ": " + p);
    }
    m.writer = std::make_unique<IncidentWriter>(topo, std::move(*opened), m.clock);
    auto reader = store::Database::open(m.options.db_path);
    if (!reader) {
      if (error) *error = reader.message();
      return nullptr;
    }
    m.reader.emplace(std::move(*reader));
  }
  m.engine.onIncidentChange([&m](const analyzer::Incident& i) { m.dirty[i.id] = i; });
  if (m.registry) {
    m.metrics = std::make_unique<exporter::AnalyzerMetrics>(m.registry, topo, m.options.metrics);
    m.ingest_metrics = std::make_unique<IngestMetrics>(*m.registry);
    auto gauge = [&](const char* name, const char* help) {
      return &prometheus::BuildGauge().Name(name).Help(help).Register(*m.registry).Add({});
    };
    m.g_plan_version = gauge("netdiag_plan_version", "Version of the probe plan served to agents");
    m.g_focus_links = gauge("netdiag_plan_focus_links",
                            "Links of unlocalized incidents the served plan adds flows across");
    m.g_focus_flows =
        gauge("netdiag_plan_focus_flows_added", "Flows the served plan adds across those links");
  }
  m.publish();  // restored incidents are served before the first tick
  {
    std::lock_guard lk(m.plans_mu);
    m.refreshServedLocked();  // and focused on, with its metrics set
  }
  m.thread = std::thread([&m] {
    // Named, so its CPU reads apart from the streams' (/proc/PID/task/*/comm).
    pthread_setname_np(pthread_self(), "nd-engine");
    m.run();
  });
  return std::unique_ptr<LiveAnalyzer>(new LiveAnalyzer(std::move(impl)));
}

void LiveAnalyzer::submit(const v1::Batch& batch, std::function<void(BatchResult)> done,
                          std::function<void()> resume) {
  Impl& m = *impl_;
  BatchResult result;
  if (batch.agent().empty()) {
    result.errors.push_back("batch without an agent id: dropped");
    {
      std::lock_guard lk(m.ledger_mu);
      m.counters.malformed += batch.probes_size() + batch.ports_size() + batch.lldp_size();
    }
    done(std::move(result));
    if (resume) resume();
    return;
  }
  const Authority::Identity who = m.authority.identify(batch.agent());
  if (who.kind == Authority::Kind::kUnknown) {
    // Refused whole, before anything (dedup state included) moves, and never
    // stored: only the one unknown bucket counts it.
    result.rejected = true;
    result.not_authorized =
        static_cast<size_t>(batch.probes_size()) + batch.ports_size() + batch.lldp_size();
    {
      std::lock_guard lk(m.ledger_mu);
      result.authority_log = m.refuseLocked(
          batch.agent(), who, batch,
          "it is neither a node of topology " + m.topo.name +
              ", a collector of the analyzer's --collectors file nor an accepted synthetic "
              "agent; acknowledged so that it leaves the sender's spool");
    }
    done(std::move(result));
    if (resume) resume();
    return;
  }
  {
    std::lock_guard lk(m.ledger_mu);
    m.agentLocked(batch.agent()).last_seen = m.clock();
  }
  DecodedBatch d;
  d.agent = batch.agent();
  d.epoch = batch.epoch();
  d.seq = batch.seq();
  d.who = who;
  // Records stamped too far ahead (a bad clock) are rejected, named by
  // their index on the wire.
  const double now = m.clock();
  const double limit = now + m.options.max_future_s;
  std::vector<std::string> future;
  auto ahead = [&](double t, const char* what, int i) {
    if (!(t > limit)) return false;
    char buf[160];  // %g: t is any finite double, beyond what an integer holds
    std::snprintf(buf, sizeof buf, "[%d]: 't' is %.6g s ahead of the analyzer's clock (max %g s)",
                  i, t - now, m.options.max_future_s);
    future.push_back(what + std::string(buf));
    return true;
  };
  for (int i = 0; i < batch.probes_size(); ++i) ahead(batch.probes(i).t(), "probes", i);
  for (int i = 0; i < batch.ports_size(); ++i) ahead(batch.ports(i).t(), "ports", i);
  for (int i = 0; i < batch.lldp_size(); ++i) ahead(batch.lldp(i).t(), "lldp", i);
  proto::Decoded buffer;
  d.errors = proto::decode(batch, m.resolver, buffer, &d.warnings);
  d.malformed = d.errors.size();
  d.port_id_mismatch = buffer.id_mismatch;
  // Authority: each record must be about what its agent may speak for.
  auto refuse = [&](auto& records, auto&& allowed, auto&& describe) {
    return std::erase_if(records, [&](const auto& r) {
      if (allowed(r)) return false;
      if (d.first_refused.empty()) d.first_refused = describe(r);
      return true;
    });
  };
  const std::string& agent_name = batch.agent();
  const auto what_it_may = [&] {
    switch (who.kind) {
      case Authority::Kind::kCollector:
        return std::string("a collector speaks only for its nodes, and sends no probes");
      case Authority::Kind::kSim:
        return std::string("a synthetic agent speaks only for its simulated group");
      default:
        return "an agent speaks only for its own node " + shown(agent_name);
    }
  };
  d.not_authorized =
      refuse(
          buffer.probes,
          [&](const telemetry::ProbeRecord& r) {
            return m.authority.mayProbe(who, m.topo.port(r.src).node);
          },
          [&](const telemetry::ProbeRecord& r) {
            return "a probe from " + shown(m.topo.portRef(r.src)) + " (" + what_it_may() + ")";
          }) +
      refuse(
          buffer.ports,
          [&](const telemetry::PortRecord& r) {
            return m.authority.mayDescribe(who, m.topo.port(r.port).node);
          },
          [&](const telemetry::PortRecord& r) {
            return "counters of " + shown(m.topo.portRef(r.port)) + " (" + what_it_may() + ")";
          }) +
      refuse(
          buffer.lldp,
          [&](const telemetry::LldpRecord& r) {
            return m.authority.mayDescribe(who, m.topo.port(r.port).node);
          },
          [&](const telemetry::LldpRecord& r) {
            return "LLDP of " + shown(m.topo.portRef(r.port)) + " (" + what_it_may() + ")";
          });
  if (!future.empty()) {
    // Counted among the records deliver() accepted, so a record both
    // malformed and ahead counts once.
    auto ahead_of_limit = [&](const auto& r) { return r.t > limit; };
    d.future = std::erase_if(buffer.probes, ahead_of_limit) +
               std::erase_if(buffer.ports, ahead_of_limit) +
               std::erase_if(buffer.lldp, ahead_of_limit);
    d.errors.insert(d.errors.end(), future.begin(), future.end());
  }
  d.probes = std::move(buffer.probes);
  d.ports = std::move(buffer.ports);
  d.lldp = std::move(buffer.lldp);
  for (const auto& r : d.probes) d.oldest = std::min(d.oldest, r.t);
  for (const auto& r : d.ports) d.oldest = std::min(d.oldest, r.t);
  for (const auto& r : d.lldp) d.oldest = std::min(d.oldest, r.t);
  d.done = std::move(done);
  if (!resume) {
    m.queue.push(std::move(d));  // closed: `done` says not ingested
    return;
  }
  // Exactly once: here when queued now, else by the queue (a copy: the
  // lambda is built before offer() says which).
  if (m.queue.offer(std::move(d), [resume](bool) { resume(); })) resume();
}

void LiveAnalyzer::submit(const v1::Batch& batch, std::function<void(BatchResult)> done) {
  submit(batch, std::move(done), nullptr);
}

uint64_t LiveAnalyzer::topologyFingerprint() const { return impl_->resolver.fingerprint(); }

BatchResult LiveAnalyzer::ingest(const v1::Batch& batch) {
  std::promise<BatchResult> promise;
  std::future<BatchResult> result = promise.get_future();
  submit(batch, [&promise](BatchResult r) { promise.set_value(std::move(r)); });
  return result.get();
}

bool LiveAnalyzer::streamTick(double t, std::string* why) {
  Impl& m = *impl_;
  const double now = m.clock();
  if (!m.options.stream_clock) {
    *why = "the analyzer is not on a stream's clock";
    return false;
  }
  if (!std::isfinite(t) || t > now + m.options.max_future_s) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "tick %.6g is %.6g s ahead of the analyzer's clock (max %g s)",
                  t, t - now, m.options.max_future_s);
    *why = buf;
    return false;
  }
  DecodedBatch d;
  d.tick = t;
  if (!m.queue.push(std::move(d))) {
    *why = "the analyzer stopped";
    return false;
  }
  return true;
}

void LiveAnalyzer::setDrained(analyzer::DrainState drains) {
  {
    std::lock_guard lk(impl_->plans_mu);
    impl_->drained_next.assign(drains.out.begin(), drains.out.end());
  }
  std::lock_guard lk(impl_->drain_mu);
  impl_->drain_next = std::move(drains);
}

std::string LiveAnalyzer::tick(double engine_time) {
  impl_->request(Request::Kind::kTick, engine_time);
  impl_->updateMetrics();
  return impl_->writer ? impl_->writer->takeError() : std::string();
}

std::string LiveAnalyzer::flush() {
  impl_->request(Request::Kind::kFlush, 0);
  return impl_->writer ? impl_->writer->flush() : std::string();
}

void LiveAnalyzer::streamOpened(const std::string& agent) {
  if (impl_->authority.identify(agent).kind == Authority::Kind::kUnknown) return;
  std::lock_guard lk(impl_->ledger_mu);
  AgentState& a = impl_->agentLocked(agent);
  ++a.streams;
  a.last_seen = impl_->clock();
}

void LiveAnalyzer::streamClosed(const std::string& agent) {
  if (impl_->authority.identify(agent).kind == Authority::Kind::kUnknown) return;
  {
    std::lock_guard lk(impl_->ledger_mu);
    AgentState& a = impl_->agentLocked(agent);
    if (a.streams > 0) --a.streams;
  }
  impl_->queue.wake();  // the watermark may move
}

std::string LiveAnalyzer::refuse(const std::string& as_agent, const v1::Batch& batch,
                                 const std::string& why) {
  const Authority::Identity who = impl_->authority.identify(as_agent);
  std::lock_guard lk(impl_->ledger_mu);
  return impl_->refuseLocked(as_agent, who, batch, why);
}

const Authority& LiveAnalyzer::authority() const { return impl_->authority; }

std::optional<v1::AgentPlan> LiveAnalyzer::plan(const std::string& agent, std::string* error) {
  Impl& m = *impl_;
  auto node = m.topo.findNode(agent);
  if (!node) {
    if (error) *error = "agent \"" + agent + "\" is not a node of topology " + m.topo.name;
    return std::nullopt;
  }
  std::lock_guard lk(m.plans_mu);
  m.refreshServedLocked();
  auto it = m.plans.find(*node);
  if (it == m.plans.end()) {
    it = m.plans
             .emplace(*node, proto::agentPlan(m.topo, m.served, *node, m.options.responder_port,
                                              m.options.dscp, &m.inbound[*node]))
             .first;
  }
  return it->second;
}

LiveAnalyzer::ServedPlan LiveAnalyzer::servedPlan() {
  Impl& m = *impl_;
  std::lock_guard lk(m.plans_mu);
  m.refreshServedLocked();
  return {m.served.version, m.served_focus, m.served_added};
}

SnapshotPtr LiveAnalyzer::snapshot() const { return impl_->snapshot(); }

LiveAnalyzer::PathStats LiveAnalyzer::pathStats() const {
  PathStats s;
  s.queued_records = impl_->queue.depthRecords();
  s.waiting_pushes = impl_->queue.waitingPushes();
  s.blocked_seconds = impl_->queue.blockedSeconds();
  std::lock_guard lk(impl_->ledger_mu);
  s.held_records = impl_->held_records;
  s.pending_batches = impl_->pending_batches;
  return s;
}

nlohmann::json LiveAnalyzer::locate() const {
  SnapshotPtr s = impl_->snapshot();
  analyzer::Report open;
  open.generated_at = s->report.generated_at;
  for (const auto& i : s->report.incidents) {
    if (!i.resolved_at) open.incidents.push_back(i);
  }
  return analyzer::reportToJson(impl_->topo, open);
}

nlohmann::json LiveAnalyzer::incidents(const IncidentFilter& f) const {
  const Impl& m = *impl_;
  SnapshotPtr s = m.snapshot();
  // By id: the database's history, then the snapshot's, which is newer for
  // what it holds (the writer may not have written it yet).
  std::map<std::string, analyzer::Incident> by_id;
  if (m.reader) {
    store::IncidentQuery q;
    q.only_open = f.only_open;
    q.kind = f.kind;
    q.since = f.since;
    std::lock_guard lk(m.reader_mu);
    auto rows = store::loadIncidents(*m.reader, q);
    std::vector<std::string> bad;  // skipped here; create() reported them
    if (rows) {
      for (auto& i : analyzer::fromRows(m.topo, *rows, bad)) by_id.emplace(i.id, std::move(i));
    }
  }
  for (const auto& i : s->report.incidents) by_id[i.id] = i;
  analyzer::Report r;
  r.generated_at = s->report.generated_at;
  for (auto& [id, i] : by_id) {
    if (f.only_open && i.resolved_at) continue;
    if (f.kind && analyzer::kindName(i.kind) != *f.kind) continue;
    // As store::IncidentQuery::since: opened or resolved at or after it.
    if (f.since && !(i.opened_at >= *f.since || (i.resolved_at && *i.resolved_at >= *f.since))) {
      continue;
    }
    r.incidents.push_back(std::move(i));
  }
  // The engine's order (analyzer::Engine::report).
  std::sort(r.incidents.begin(), r.incidents.end(),
            [](const analyzer::Incident& a, const analyzer::Incident& b) {
              return a.opened_at != b.opened_at ? a.opened_at < b.opened_at : a.id < b.id;
            });
  return analyzer::reportToJson(m.topo, r);
}

std::optional<nlohmann::json> LiveAnalyzer::incident(const std::string& id) const {
  const Impl& m = *impl_;
  SnapshotPtr s = m.snapshot();
  std::optional<analyzer::Incident> found;
  for (const auto& i : s->report.incidents) {
    if (i.id == id) found = i;
  }
  if (!found && m.reader) {
    std::lock_guard lk(m.reader_mu);
    auto row = store::loadIncident(*m.reader, id);
    if (row && *row) {
      std::vector<std::string> bad;
      auto restored = analyzer::fromRows(m.topo, {**row}, bad);
      if (!restored.empty()) found = std::move(restored.front());
    }
  }
  if (!found) return std::nullopt;
  nlohmann::json out;
  out["incident"] = analyzer::incidentToJson(m.topo, *found);
  out["link"] = found->link != topology::kNone ? *link(m.topo.dirLinkName(found->link))
                                               : nlohmann::json(nullptr);
  // Drain advice while it is open: the plan in the shared context, the
  // policy's decision check by check, netdiag's own drain of the link.
  if (found->link != topology::kNone && !found->resolved_at && m.options.drain_view) {
    out["drain"] = m.options.drain_view(*found, s->report);
  }
  return out;
}

std::optional<nlohmann::json> LiveAnalyzer::link(const std::string& name) const {
  const Impl& m = *impl_;
  auto d = m.topo.findDirLink(name);
  if (!d) return std::nullopt;
  const topology::DirLinkId reverse = *d ^ 1;
  SnapshotPtr s = m.snapshot();
  const analyzer::LinkEvidence none;
  const analyzer::LinkEvidence& e = *d < s->evidence.size() ? s->evidence[*d] : none;
  nlohmann::json out = evidenceJson(e);
  out["link"] = m.topo.dirLinkName(*d);
  out["background_loss"] = e.background;
  out["reverse"] = evidenceJson(reverse < s->evidence.size() ? s->evidence[reverse] : none);
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& i : s->report.incidents) {
    if (i.link == *d || (i.link == reverse && i.both_directions)) ids.push_back(i.id);
  }
  out["incidents"] = std::move(ids);
  return out;
}

exporter::IngestCounters LiveAnalyzer::counters() const {
  std::lock_guard lk(impl_->ledger_mu);
  return impl_->countersLocked();
}

std::vector<exporter::AgentStatus> LiveAnalyzer::agents() const {
  std::lock_guard lk(impl_->ledger_mu);
  return impl_->agentStatusLocked();
}

const topology::Topology& LiveAnalyzer::topology() const { return impl_->topo; }

double LiveAnalyzer::expectedRecordsPerSecond() const {
  constexpr double kCountersIntervalS = 5;  // collector/agent_config.h's default
  const double window = impl_->plan.budget.window_s > 0 ? impl_->plan.budget.window_s : 5;
  return static_cast<double>(impl_->plan.flowCount()) / window +
         static_cast<double>(impl_->topo.portCount()) / kCountersIntervalS;
}

// Set once in create(), never changed: no lock needed.
const planner::Sizing& LiveAnalyzer::planSizing() const { return impl_->sizing; }

}  // namespace netdiag::server
