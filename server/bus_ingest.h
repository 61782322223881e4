#pragma once

// The analyzer's side of the NATS JetStream bus (docs/operations.md, "The
// bus"): it creates or updates the batches' stream, consumes it with a
// durable consumer of its own, and answers plan requests.
//
// Each delivery is decoded on the consumer's thread and submitted to the
// LiveAnalyzer like a gRPC batch; it is acknowledged to the stream only once
// its records are in the engine (a duplicate: once the first copy's are),
// and negatively when the analyzer stopped before it got there. The
// consumer's max_ack_pending bounds what waits, and a full engine queue
// blocks the consumer's thread, so the stream holds the backlog, not the
// analyzer's memory.
//
// Tick markers (bus/tick.h) in the stream set the engine's clock
// (LiveOptions::stream_clock); the analyzer publishes its own every tick.
//
// Identity: a batch is taken as sent by the agent its subject names
// (bus/subjects.h); one whose `agent` differs is refused (its records count
// not_authorized) and terminated on the stream, never redelivered. So are
// messages that are not batches. What the agent may say then follows
// server/authority.h, as on gRPC. Plan requests are answered only for the
// agent the request subject names.
//
// Thread-safety: start and stop from one thread.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include "bus/connection.h"
#include "bus/stream.h"
#include "server/agent_stream.h"
#include "server/live_analyzer.h"

namespace netdiag::server {

struct BusIngestOptions {
  bus::BusOptions bus;
  // Its max_ack_pending 0: eight per topology node (an agent's batches of
  // the few seconds they wait in the reorder buffer before their ack).
  // Its start_back_s is set to the evidence horizon.
  bus::ConsumerOptions consumer = {.max_ack_pending = 0};
  // The stream (created or updated at start) keeps the evidence horizon
  // plus this long an analyzer outage (bus::deriveLimits)...
  double outage_s = 3600;
  // ...in at most this many bytes; 0: derived from the fabric's rate at
  // ~200 bytes per record (LiveAnalyzer::expectedRecordsPerSecond).
  int64_t max_bytes = 0;
  double duplicate_window_s = 120;
  int replicas = 1;
  // At start, before the durable consumer resumes: replay the stream's last
  // start_back_s (the evidence horizon) into the engine, so evidence lost
  // with the last process (a crash, an upgrade) is there again and a new
  // analyzer starts where a running one is. What the replay cannot rebuild
  // is in docs/operations.md, "The bus". Skipped when the durable consumer
  // was idle longer than start_back_s: its own backlog holds that horizon.
  bool rebuild = true;
};

// The stream limits `o` asks for on a fabric sending `records_per_s`, with
// the engine's evidence horizon `horizon_s`.
bus::StreamLimits busLimits(const BusIngestOptions& o, double horizon_s, double records_per_s);

class BusIngest {
 public:
  // Connects (waiting up to the bus's request timeout for a server), sets up
  // the stream and the consumer and starts delivery. nullptr and *error when
  // any of it fails.
  static std::unique_ptr<BusIngest> start(LiveAnalyzer& analyzer, BusIngestOptions options,
                                          const bus::StreamLimits& limits,
                                          prometheus::Registry& registry, LogFn log,
                                          std::string* error);
  // stopDelivery(), then closes the connection: acknowledgements not sent
  // by then are redelivered to the next analyzer (and dropped as duplicates
  // if they reached the engine).
  ~BusIngest();

  // Publishes the tick marker of `wall_s` rounded down to `period_s`
  // (bus/tick.h), unless that tick went out already. The analyzer's clock
  // loop calls it every period.
  void publishTick(double wall_s, double period_s);

  // No new deliveries; returns once the last one was submitted. The
  // analyzer's flush then acknowledges what is in the engine.
  void stopDelivery();

 private:
  BusIngest(LiveAnalyzer& a, BusIngestOptions o, LogFn log)
      : analyzer_(a),
        options_(std::move(o)),
        tick_subject_(options_.bus.subjects.tick()),
        log_(std::move(log)) {}
  static constexpr double kRebuildTimeoutS = 600;
  void rebuild();
  void onDelivery(std::unique_ptr<bus::Delivery> d);
  void onTick(bus::Delivery& d);
  std::string answerPlan(std::string_view subject, std::string_view body, std::string* error);
  void logLimited(const std::string& line);

  LiveAnalyzer& analyzer_;
  const BusIngestOptions options_;
  const std::string tick_subject_;
  LogFn log_;
  std::unique_ptr<bus::Connection> connection_;
  std::unique_ptr<bus::DurableConsumer> consumer_;
  std::unique_ptr<bus::Replier> plans_;
  prometheus::Counter *m_ingested_ = nullptr, *m_duplicate_ = nullptr, *m_refused_ = nullptr,
                      *m_malformed_ = nullptr, *m_not_ingested_ = nullptr,
                      *m_redelivered_ = nullptr, *m_plans_ = nullptr, *m_ticks_ = nullptr,
                      *m_tick_errors_ = nullptr;
  std::atomic<int64_t> last_log_s_{0};
  double last_tick_ = 0;  // the clock loop's alone
};

}  // namespace netdiag::server
