#pragma once

// The analyzer daemon's core: feeds agent batches to the engine, drops
// duplicate batches, keeps per-agent liveness and ingest counters, serves
// probe plans, persists incidents to SQLite and sets the Prometheus metrics
// after every pass. The gRPC service and the HTTP API are thin layers over it.
//
// Who owns what (docs/architecture.md, "The live pipeline"):
//  - the caller's thread (a gRPC stream) decodes a batch, resolves its names
//    and checks its authority, in parallel with other streams;
//  - one engine thread owns the engine, de-duplication, the reorder buffer
//    and the pending acks, fed through a bounded queue (server/ingest_queue.h);
//  - after each pass and tick it publishes an immutable Snapshot
//    (server/snapshot.h) that every reader uses; readers never wait for it;
//  - the agent table and ingest counters sit behind a small mutex of their
//    own, held only for a few field updates;
//  - SQLite writes run on the IncidentWriter's thread (server/incident_writer.h).
//
// Thread-safety: every public method may be called from any thread.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <prometheus/registry.h>

#include "analyzer/engine.h"
#include "analyzer/unsettled.h"
#include "exporter/analyzer_metrics.h"
#include "netdiag/v1/collector.pb.h"
#include "planner/plan.h"
#include "planner/sizing.h"
#include "server/authority.h"
#include "server/snapshot.h"
#include "topology/model.h"

namespace netdiag::server {

struct LiveOptions {
  analyzer::EngineConfig engine;
  planner::Budget budget;  // of the plans served to agents; its rate is the base
  // The served rate is raised from the base, up to the cap, where the
  // coverage target needs it (planner/sizing.h).
  planner::SizingOptions sizing;
  uint64_t plan_seed = 1;
  // While incidents are open and unlocalized (ambiguity groups, suspects
  // below the bar), the served plan adds flows across up to this many of
  // their links (planner::focusPlan, between pairs the plan already has),
  // under a new version; agents pick it up at their next plan refresh.
  // 0: always serve the base plan.
  size_t focus_links = analyzer::kMaxUnsettledLinks;
  uint32_t responder_port = 7601;
  uint32_t dscp = 0;
  size_t dedup_window = 4096;  // seqs remembered above each agent epoch's floor
  // The clock skew tolerated: records stamped further ahead of the
  // analyzer's clock are rejected (reason "future", counted per agent), and
  // the engine's clock never runs further ahead than this either.
  double max_future_s = 60;
  // Records are held back and handed to the engine in time order up to a
  // watermark: the newest time every agent heard from has reached, but at
  // least the wall clock minus this delay (so a quiet or departed agent
  // stalls nothing for longer). The engine runs a pass as soon as one record
  // crosses a boundary, so without this a fast agent's record would close a
  // window before a slower agent's records of it arrived.
  double delay_s = 2;
  // On the bus (server/bus_ingest.h): the engine's clock is the stream's.
  // The watermark moves only where the stream says so, at each batch and
  // tick marker in stream order (streamTick()), never by the wall clock:
  // the newest tick minus delay_s, or the newest time every agent heard
  // from has reached, but no further behind the newest record than
  // delay_s plus the engine's late tolerance (a stretch of stream without
  // ticks). tick() then publishes and sets metrics but moves nothing. Two
  // analyzers reading one stream so make the same decisions.
  bool stream_clock = false;
  // The bus replays the stream's last horizon into the engine at start
  // (BusIngestOptions::rebuild): incidents restored from the database are
  // decided again by the replay, not restarted (IncidentTracker::restore).
  bool evidence_replayed = false;
  // Who may speak for what besides the nodes themselves (server/authority.h):
  // the collector identities of --collectors, and grouped synthetic agents
  // sim-0..sim-(N-1) when accept_sim_agents is N > 0 (simulations only).
  std::vector<CollectorIdentity> collectors;
  size_t accept_sim_agents = 0;
  std::string db_path;  // SQLite file for incidents; empty: none
  exporter::MetricsOptions metrics;
  // The bound of the queue from the stream threads to the engine thread, in
  // decoded records: beyond it streams wait (flow control), nothing drops.
  size_t queue_records = 262144;
  // Resolved incidents kept in memory for readers besides the open ones.
  // With a database, older history is read from it; without one (--db ''),
  // this is the history the API can serve.
  size_t recent_incidents = 10000;
  // Diagnostics of the ingest path (the engine falling behind); may be empty.
  std::function<void(const std::string&)> log;
  // Tests only: called on the engine thread inside each tick's pass, so a
  // test can hold a pass while it reads.
  std::function<void()> test_hold_pass;
  // The "drain" object of an open link incident's view (incident()): the
  // daemon's drain coordinator; unset: none.
  std::function<nlohmann::json(const analyzer::Incident&, const analyzer::Report&)> drain_view;
  // Snapshots carry the port counters of the links netdiag holds drained
  // over this window (seconds): whether they are clean enough to restore.
  double drained_counter_window_s = 60;
};

struct BatchResult {
  bool duplicate = false;
  // The whole batch was refused: its agent is neither a node, a declared
  // collector nor an accepted synthetic agent. Nothing of it was ingested and
  // no de-duplication state moved; it is acknowledged all the same, so it
  // does not circle in the sender's spool forever.
  bool rejected = false;
  size_t accepted = 0;        // records handed to the engine
  size_t future = 0;          // rejected: stamped beyond the clock plus max_future_s
  size_t not_authorized = 0;  // rejected: outside what the agent may speak for
  // Set (rate-limited: once per agent per minute, unknown agents sharing
  // one limit) when the not_authorized records should be logged.
  std::string authority_log;
  std::vector<std::string> errors;    // one per rejected record, or the batch's problem
  std::vector<std::string> warnings;  // records kept without a path that did not map
  // The analyzer stopped before the batch reached the engine: not
  // acknowledged, so the agent sends it again.
  bool not_ingested = false;
};

// Incident filters of GET /api/v1/incidents.
struct IncidentFilter {
  std::optional<double> since;  // opened or resolved at or after (telemetry time)
  std::optional<std::string> kind;
  bool only_open = false;
};

class LiveAnalyzer {
 public:
  // Opens and migrates the database, restores its incidents into the engine
  // (problems go to *warnings), and computes the plan. nullptr and *error
  // when the database cannot be used or an option is out of range. `topo` must outlive it; `clock`
  // returns wall-clock Unix seconds.
  static std::unique_ptr<LiveAnalyzer> create(const topology::Topology& topo, LiveOptions options,
                                              std::shared_ptr<prometheus::Registry> registry,
                                              std::function<double()> clock, std::string* error,
                                              std::vector<std::string>* warnings);
  ~LiveAnalyzer();

  // Delivers a batch unless (agent, epoch, seq) was delivered before: decodes
  // it on the calling thread, then queues it for the engine thread, waiting
  // while the queue is full. `done` is called exactly once, when the
  // batch's records are all in the engine (a duplicate: when the first copy's
  // are), or at once when nothing of it goes to the engine (no agent, an
  // unknown agent); the caller acks then. It runs on the engine thread or
  // the caller's and must not block.
  void submit(const v1::Batch& batch, std::function<void(BatchResult)> done);
  // The same without waiting: the batch is decoded on the calling thread,
  // then `resume` is called exactly once when the caller may submit its next
  // batch: at once when the batch went into the queue (or nowhere), or
  // later, from the engine thread, when it was parked for room (flow
  // control without holding a thread). `resume` must not block.
  void submit(const v1::Batch& batch, std::function<void(BatchResult)> done,
              std::function<void()> resume);
  // submit() and wait for `done`.
  BatchResult ingest(const v1::Batch& batch);

  // A tick marker of the bus's stream (stream_clock only), queued behind
  // the batches submitted before it: the engine's clock moves to `t` minus
  // the delay once they are in. False and *why, and nothing moves, for a
  // tick beyond the analyzer's clock plus max_future_s (a broken or hostile
  // publisher) or once the analyzer stopped. Blocks while the queue is full.
  bool streamTick(double t, std::string* why);

  // What netdiag's drains did (the links held out of service, the
  // incidents mitigated, the routing changes), from the drain coordinator;
  // the engine takes it at its next pass (analyzer::Engine::setDrained).
  void setDrained(analyzer::DrainState drains);

  // The live clock: moves the engine to `engine_time` (wall clock minus the
  // delivery delay; never past a record still waiting for it), publishes a
  // snapshot, hands changed incidents to the writer and updates metrics
  // (with stream_clock, all but the move).
  // Returns once the engine thread did. Returns a persistence error, empty
  // when none.
  std::string tick(double engine_time);
  // At shutdown: hands the engine every record queued or held (they may be
  // acknowledged) and writes every changed incident. Error text or empty.
  std::string flush();

  void streamOpened(const std::string& agent);
  void streamClosed(const std::string& agent);

  // A batch refused before ingest (its stream may not send as its agent,
  // server/collector_service.h): its records are counted not_authorized
  // under `as_agent` when that is a known identity, else under "(unknown)",
  // and nothing else moves. Returns the log line to write (rate-limited as
  // BatchResult::authority_log), or empty.
  std::string refuse(const std::string& as_agent, const v1::Batch& batch, const std::string& why);

  const Authority& authority() const;
  // The fingerprint compact port ids on the wire must be under
  // (proto::topologyFingerprint of the analyzer's topology); sent in acks.
  uint64_t topologyFingerprint() const;

  // The plan of the agent of node `agent`; nullopt and *error for an agent
  // that is not a node of the topology.
  std::optional<v1::AgentPlan> plan(const std::string& agent, std::string* error);

  // HTTP API bodies (see docs/architecture.md, "The live pipeline").
  nlohmann::json locate() const;
  nlohmann::json incidents(const IncidentFilter& filter) const;
  std::optional<nlohmann::json> incident(const std::string& id) const;
  std::optional<nlohmann::json> link(const std::string& name) const;

  // Telemetry records per second the fabric sends at the base plan: a
  // probe record per flow per window, and port counters every 5 s (the
  // agents' default) for every port. What the bus's stream is sized from.
  double expectedRecordsPerSecond() const;
  // How the served plan's rate was sized against the coverage target.
  const planner::Sizing& planSizing() const;
  // The plan served now: its version, and the links it focuses on (empty:
  // the base plan).
  struct ServedPlan {
    uint64_t version = 0;
    std::vector<topology::DirLinkId> focus;
    size_t flows_added = 0;
  };
  ServedPlan servedPlan();

  // The snapshot the engine thread published last (never null).
  SnapshotPtr snapshot() const;
  // Records queued for and held by the engine thread, and the time streams
  // waited for room (what the ingest metrics show).
  struct PathStats {
    size_t queued_records = 0, held_records = 0, pending_batches = 0;
    size_t waiting_pushes = 0;  // submits waiting for room in the queue now
    double blocked_seconds = 0;
  };
  PathStats pathStats() const;

  exporter::IngestCounters counters() const;
  std::vector<exporter::AgentStatus> agents() const;
  const topology::Topology& topology() const;

 private:
  struct Impl;
  explicit LiveAnalyzer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace netdiag::server
