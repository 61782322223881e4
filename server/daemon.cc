#include "server/daemon.h"

#include <algorithm>
#include <chrono>

#include <grpcpp/grpcpp.h>

namespace netdiag::server {

std::unique_ptr<Daemon> Daemon::start(const topology::Topology& topo, DaemonOptions options,
                                      std::string* error, std::vector<std::string>* warnings) {
  std::unique_ptr<Daemon> d(new Daemon());
  if (!options.clock) {
    options.clock = [] {
      return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
  if (!(options.tick_s > 0)) {
    *error = "the clock tick must be positive";
    return nullptr;
  }
  options.live.delay_s = options.delay_s;
  options.live.stream_clock = options.bus.has_value();  // the stream's ticks move the engine
  options.live.evidence_replayed = options.bus && options.bus->rebuild;
  if (!options.live.log) options.live.log = options.log;
  d->options_ = std::move(options);
  DaemonOptions& o = d->options_;
  d->registry_ = std::make_shared<prometheus::Registry>();
  if (!o.drain_key_file.empty()) {
    auto key = actuator::loadDrainKey(o.drain_key_file, error);
    if (!key) return nullptr;
    d->outbox_ =
        std::make_unique<DrainOutbox>(topo, std::move(*key), DrainOutboxOptions{}, o.clock, o.log);
    d->outbox_->exportMetrics(*d->registry_);
  } else if (o.drain_policy.acts()) {
    *error =
        "a drain policy of approve or auto (--drain-policy, or a scope of "
        "--drain-policy-file) acts on switches: it needs --drain-key";
    return nullptr;
  }
  if (o.drain_policy.all.restore_clean_s > o.live.engine.horizon_s) {
    *error = "the drain policy's restore_clean_s (" +
             std::to_string(static_cast<int>(o.drain_policy.all.restore_clean_s)) +
             " s) is longer than the engine's horizon (" +
             std::to_string(static_cast<int>(o.live.engine.horizon_s)) +
             " s): counters are kept that long only";
    return nullptr;
  }
  o.live.drained_counter_window_s = o.drain_policy.all.restore_clean_s;
  d->coordinator_ =
      std::make_unique<DrainCoordinator>(topo, o.drain_policy, d->outbox_.get(), o.log);
  d->coordinator_->setEvidenceSettle(o.live.engine.short_horizon_s);
  d->coordinator_->exportMetrics(*d->registry_);
  o.live.drain_view = [c = d->coordinator_.get(), pass_s = o.live.engine.pass_interval_s](
                          const analyzer::Incident& i, const analyzer::Report& r) {
    return c->view(i, r, pass_s);
  };
  d->analyzer_ = LiveAnalyzer::create(topo, o.live, d->registry_, o.clock, error, warnings);
  if (!d->analyzer_) return nullptr;
  // The engine learns which links the drains hold out, after every pass.
  d->coordinator_->onPublish(
      [a = d->analyzer_.get()](analyzer::DrainState drains) { a->setDrained(std::move(drains)); });
  // The drain audit lives beside the incidents (migrated by now).
  if (!o.live.db_path.empty() && !d->coordinator_->attachStore(o.live.db_path, error)) {
    return nullptr;
  }

  std::optional<std::string> token;
  if (!o.api_token_file.empty()) {
    token = actuator::loadSecretFile(o.api_token_file, "API token", error);
    if (!token) return nullptr;
  }
  // HTTP first: /healthz answers and /readyz says 503 until agents can connect.
  Daemon* self = d.get();
  d->http_ = std::make_unique<HttpApi>(
      *d->analyzer_, d->registry_, [self] { return self->ready_.load(); }, o.http,
      HttpWrites{d->outbox_.get(), d->coordinator_.get(), std::move(token)});
  if (std::string err = d->http_->start(o.web_listen); !err.empty()) {
    *error = err;
    return nullptr;
  }
  CollectorService::Options streams;
  streams.require_client_identity = !o.grpc.tls_ca.empty();
  streams.max_agent_records_per_s = o.live.accept_sim_agents > 0 ? 0 : o.max_agent_records_per_s;
  streams.max_streams = o.max_agent_streams;
  streams.idle_timeout_s = o.agent_idle_timeout_s;
  streams.outbox = d->outbox_.get();
  d->service_ = std::make_unique<CollectorService>(*d->analyzer_, o.log, streams);
  d->service_->exportMetrics(*d->registry_);
  if (d->outbox_) {
    d->outbox_->onIssue(
        [svc = d->service_.get()](const std::string& agent) { svc->pushActions(agent); });
  }
  d->grpc_ = startGrpcServer(*d->service_, o.grpc, &d->grpc_port_, error);
  if (!d->grpc_) return nullptr;
  if (o.bus) {
    BusIngestOptions bus = *o.bus;
    const double horizon = o.live.engine.horizon_s;
    bus.consumer.start_back_s = horizon;
    if (bus.consumer.max_ack_pending == 0) {
      bus.consumer.max_ack_pending =
          std::max<int64_t>(1024, 8 * static_cast<int64_t>(topo.nodeCount()));
    }
    const bus::StreamLimits limits =
        busLimits(bus, horizon, d->analyzer_->expectedRecordsPerSecond());
    d->bus_ = BusIngest::start(*d->analyzer_, bus, limits, *d->registry_, o.log, error);
    if (!d->bus_) return nullptr;
  }
  d->clock_ = std::thread([self] { self->clockLoop(); });
  d->ready_ = true;
  return d;
}

Daemon::~Daemon() { stop(); }

void Daemon::clockLoop() {
  const auto period = std::chrono::duration<double>(options_.tick_s);
  std::unique_lock lk(mu_);
  while (!stopping_) {
    lk.unlock();
    const double now = options_.clock();
    if (bus_) bus_->publishTick(now, options_.tick_s);
    std::string err = analyzer_->tick(now - options_.delay_s);
    if (!err.empty() && options_.log) options_.log(err);
    service_->closeIdleStreams();
    if (outbox_) outbox_->expire();
    const SnapshotPtr snap = analyzer_->snapshot();
    coordinator_->onPass(snap->report, options_.live.engine.pass_interval_s,
                         snap->drained_counters);
    lk.lock();
    cv_.wait_for(lk, period, [this] { return stopping_; });
  }
}

void Daemon::stop() {
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    stopped_ = stopping_ = true;
  }
  ready_ = false;
  cv_.notify_all();
  // Streams are long-lived: give them a moment to finish their batch, then
  // cancel; agents resend anything unacknowledged.
  if (grpc_) grpc_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (bus_) bus_->stopDelivery();
  if (http_) http_->stop();
  if (clock_.joinable()) clock_.join();
  if (analyzer_) {
    std::string err = analyzer_->tick(options_.clock() - options_.delay_s);
    if (err.empty()) err = analyzer_->flush();
    if (!err.empty() && options_.log) options_.log(err);
  }
  bus_.reset();  // after the flush: its acknowledgements go out first
}

}  // namespace netdiag::server
