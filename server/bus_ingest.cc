#include "server/bus_ingest.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "bus/tick.h"
#include "topology/display_text.h"

namespace netdiag::server {
namespace {

std::string shown(std::string_view s) {
  return "\"" + topology::escapeForDisplay(std::string(s)) + "\"";
}

}  // namespace

bus::StreamLimits busLimits(const BusIngestOptions& o, double horizon_s, double records_per_s) {
  constexpr double kBytesPerRecord = 200;  // a probe record with its path, framed
  bus::StreamLimits l = bus::deriveLimits(horizon_s, o.outage_s, records_per_s * kBytesPerRecord);
  if (o.max_bytes > 0) l.max_bytes = o.max_bytes;
  l.duplicate_window_s = o.duplicate_window_s;
  l.replicas = o.replicas;
  return l;
}

std::unique_ptr<BusIngest> BusIngest::start(LiveAnalyzer& analyzer, BusIngestOptions options,
                                            const bus::StreamLimits& limits,
                                            prometheus::Registry& registry, LogFn log,
                                            std::string* error) {
  if (options.bus.name.empty()) options.bus.name = "netdiag-analyzer " + options.consumer.durable;
  std::unique_ptr<BusIngest> b(new BusIngest(analyzer, std::move(options), std::move(log)));
  b->connection_ = bus::Connection::open(b->options_.bus, error);
  if (!b->connection_) return nullptr;
  // The stream and consumer need the server: wait for it a while (it may be
  // starting beside us), then give up with its reason.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(b->options_.bus.request_timeout_s);
  while (!b->connection_->connected() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!b->connection_->connected()) {
    *error = "bus: no NATS server answers at " + bus::redactedUrl(b->options_.bus.url);
    return nullptr;
  }
  auto& messages = prometheus::BuildCounter()
                       .Name("netdiag_bus_messages_total")
                       .Help("Batches the analyzer's bus consumer took, by result")
                       .Register(registry);
  b->m_ingested_ = &messages.Add({{"result", "ingested"}});
  b->m_duplicate_ = &messages.Add({{"result", "duplicate"}});
  b->m_refused_ = &messages.Add({{"result", "refused"}});
  b->m_malformed_ = &messages.Add({{"result", "malformed"}});
  b->m_not_ingested_ = &messages.Add({{"result", "not_ingested"}});
  b->m_ticks_ = &messages.Add({{"result", "tick"}});
  b->m_tick_errors_ = &prometheus::BuildCounter()
                           .Name("netdiag_bus_tick_publish_errors_total")
                           .Help("Tick markers this analyzer could not publish")
                           .Register(registry)
                           .Add({});
  b->m_redelivered_ = &prometheus::BuildCounter()
                           .Name("netdiag_bus_redeliveries_total")
                           .Help("Batches the stream delivered again (not acknowledged in time)")
                           .Register(registry)
                           .Add({});
  b->m_plans_ = &prometheus::BuildCounter()
                     .Name("netdiag_bus_plan_requests_total")
                     .Help("Plan requests answered over the bus")
                     .Register(registry)
                     .Add({});
  if (*error = bus::ensureStream(*b->connection_, limits); !error->empty()) {
    return nullptr;
  }
  const bus::Subjects& subjects = b->options_.bus.subjects;
  if (b->log_) {
    b->log_("bus: stream " + subjects.stream() + " (" + subjects.allBatches() + ", " +
            subjects.tick() + ") on " + bus::redactedUrl(b->options_.bus.url) + " keeps " +
            std::to_string(std::llround(limits.max_age_s)) + " s, at most " +
            std::to_string(limits.max_bytes >> 20) + " MiB, " + std::to_string(limits.replicas) +
            " replica(s); duplicate window " +
            std::to_string(std::llround(limits.duplicate_window_s)) + " s; consumer " +
            b->options_.consumer.durable + ", plans on " + subjects.allPlans());
  }
  BusIngest* self = b.get();
  b->plans_ = bus::Replier::start(
      *b->connection_, b->options_.bus.subjects.allPlans(),
      [self](std::string_view subject, std::string_view body, std::string* why) {
        return self->answerPlan(subject, body, why);
      },
      error);
  if (!b->plans_) return nullptr;
  if (b->options_.rebuild) {
    // A consumer idle for longer than the horizon delivers that horizon
    // itself, in stream order. Replaying it first would move the stream's
    // clock to now and turn the consumer's older backlog too_late.
    const std::optional<double> idle =
        bus::consumerIdleSeconds(*b->connection_, b->options_.consumer.durable);
    if (idle && *idle >= b->options_.consumer.start_back_s) {
      if (b->log_) {
        b->log_("bus: consumer " + b->options_.consumer.durable + " was idle " +
                std::to_string(std::llround(*idle)) +
                " s, longer than the evidence horizon: it rebuilds the evidence itself, no replay");
      }
    } else {
      b->rebuild();
    }
  }
  b->consumer_ = bus::DurableConsumer::start(
      *b->connection_, b->options_.consumer,
      [self](std::unique_ptr<bus::Delivery> d) { self->onDelivery(std::move(d)); }, error);
  if (!b->consumer_) return nullptr;
  return b;
}

BusIngest::~BusIngest() {
  stopDelivery();
  if (plans_) plans_->stop();
  if (connection_) {
    // Acks published just before are flushed first.
    natsConnection_FlushTimeout(connection_->nats(), 2000);
  }
}

void BusIngest::stopDelivery() {
  if (consumer_) consumer_->stop();
}

void BusIngest::logLimited(const std::string& line) {
  if (!log_) return;
  // At most one line a second: a hostile publisher must not flood the log.
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
  int64_t last = last_log_s_.load();
  if (now > last && last_log_s_.compare_exchange_strong(last, now)) log_(line);
}

void BusIngest::rebuild() {
  const auto t0 = std::chrono::steady_clock::now();
  size_t batches = 0;
  std::string error;
  const bool ok = bus::replayStream(
      *connection_, options_.consumer.start_back_s, options_.consumer.max_ack_pending,
      kRebuildTimeoutS, [this](std::unique_ptr<bus::Delivery> d) { onDelivery(std::move(d)); },
      &batches, &error);
  if (!log_) return;
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "bus: evidence rebuilt from %zu batches of the last %.0f s in %.1f s", batches,
                options_.consumer.start_back_s, took);
  log_(ok ? std::string(buf) : "bus: " + error + "; evidence rebuilt only in part (" + buf + ")");
}

void BusIngest::publishTick(double wall_s, double period_s) {
  const double t = bus::tickTime(wall_s, period_s);
  if (!(t > last_tick_)) return;
  const std::string err = bus::publishTick(*connection_, t);
  if (err.empty()) {
    last_tick_ = t;
    return;
  }
  m_tick_errors_->Increment();
  logLimited("bus: tick " + bus::encodeTick(t) + " not published: " + err);
}

void BusIngest::onTick(bus::Delivery& d) {
  const std::optional<double> t = bus::decodeTick(d.data());
  std::string why = "not a tick marker";
  if (t && analyzer_.streamTick(*t, &why)) {
    m_ticks_->Increment();
    d.ack();
    return;
  }
  (t ? m_refused_ : m_malformed_)->Increment();
  logLimited("bus: message " + std::to_string(d.streamSequence()) + " on " + shown(d.subject()) +
             ": " + why + "; terminated");
  d.term();
}

void BusIngest::onDelivery(std::unique_ptr<bus::Delivery> d) {
  if (d->delivered() > 1) m_redelivered_->Increment();
  if (d->subject() == tick_subject_) {
    onTick(*d);
    return;
  }
  v1::Batch batch;
  if (!batch.ParseFromString(d->data())) {
    m_malformed_->Increment();
    logLimited("bus: message " + std::to_string(d->streamSequence()) + " on " +
               shown(d->subject()) + " is not a batch; terminated");
    d->term();
    return;
  }
  d->dropData();  // held until the ack; the decoded batch is what counts
  const std::optional<std::string> who = options_.bus.subjects.batchAgent(d->subject());
  if (!who || *who != batch.agent()) {
    m_refused_->Increment();
    const std::string why = "published on " + shown(d->subject()) + " as agent " +
                            shown(batch.agent()) +
                            ": a batch is taken only from its agent's own subject";
    const std::string line = analyzer_.refuse(who.value_or(batch.agent()), batch, why);
    logLimited(line.empty() ? "bus: " + why : line);
    d->term();
    return;
  }
  std::shared_ptr<bus::Delivery> delivery(std::move(d));
  analyzer_.submit(batch, [this, delivery, agent = batch.agent()](BatchResult r) {
    if (r.not_ingested) {
      m_not_ingested_->Increment();
      delivery->nak();
      return;
    }
    (r.duplicate ? m_duplicate_ : m_ingested_)->Increment();
    delivery->ack();
    if (!r.authority_log.empty()) logLimited(r.authority_log + " (bus)");
    if (!r.errors.empty()) {
      logLimited("agent " + shown(agent) + " (bus) " + std::to_string(r.errors.size()) +
                 " record(s) rejected, first: " + r.errors[0]);
    }
  });
}

std::string BusIngest::answerPlan(std::string_view subject, std::string_view body,
                                  std::string* error) {
  v1::PlanRequest request;
  if (!request.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    *error = "not a PlanRequest";
    return {};
  }
  const std::optional<std::string> who = options_.bus.subjects.planAgent(subject);
  if (!who || *who != request.agent()) {
    *error = "a plan is given only to its agent's own subject (asked on " + shown(subject) +
             " for " + shown(request.agent()) + ")";
    return {};
  }
  std::optional<v1::AgentPlan> plan = analyzer_.plan(request.agent(), error);
  if (!plan) return {};
  m_plans_->Increment();
  return plan->SerializeAsString();
}

}  // namespace netdiag::server
