#include "collector/agent.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <google/protobuf/util/json_util.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "actuator/actuator.h"
#include "actuator/frr_executor.h"
#include "actuator/webhook_executor.h"
#include "collector/agent_sources.h"
#include "collector/bus_uplink.h"
#include "collector/clock.h"
#include "collector/responder.h"
#include "collector/scheduler.h"
#include "collector/source_metrics.h"
#include "collector/spool.h"
#include "collector/total_counter.h"
#include "collector/uplink.h"
#include "topology/display_text.h"

namespace netdiag::collector {
namespace {

using SteadyClock = std::chrono::steady_clock;

double wallNow() { return systemClock().wallSeconds(); }

// Polled sources' runs move by up to ±5 % of their interval.
constexpr double kPollJitter = 0.1;

// The refusal counts of `s` added to `into` (of responders already replaced).
void addResponderCounts(const ResponderStats& s, ResponderStats& into) {
  into.replied += s.replied;
  into.malformed += s.malformed;
  into.not_in_plan += s.not_in_plan;
  into.rate_limited += s.rate_limited;
  into.global_rate_limited += s.global_rate_limited;
}

}  // namespace

struct Agent::Impl {
  AgentConfig cfg;
  AgentLog log;
  std::optional<bool> uplink_up;  // last state logged; unset until the first check

  std::unique_ptr<Spool> spool;
  // Before the uplink, so it outlives the uplink's reader, which feeds it.
  std::unique_ptr<actuator::Actuator> actuator;
  std::unique_ptr<Transport> uplink;  // gRPC to the analyzer, or the bus
  std::shared_ptr<prometheus::Registry> registry;
  std::unique_ptr<prometheus::Exposer> exposer;
  int metrics_port = 0;

  std::optional<v1::AgentPlan> plan;
  std::unique_ptr<Responder> responder;
  std::vector<std::unique_ptr<Source>> sources;  // in registration order
  std::unique_ptr<SourceMetrics> source_metrics;
  ResponderStats past_responder;  // of responders already replaced
  v1::Batch pending;              // records waiting for the next batch
  std::set<std::string> logged;   // problems already logged once

  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;

  // Metrics of the agent itself (each source exports its own).
  TotalCounter m_replies, m_resp_malformed, m_resp_limited, m_resp_not_in_plan,
      m_resp_global_limited;
  TotalCounter m_spool_dropped, m_up_sent, m_up_acked, m_up_reconnects, m_batches, m_up_split,
      m_up_oversized;
  prometheus::Gauge *g_plan = nullptr, *g_spool_batches = nullptr, *g_spool_bytes = nullptr,
                    *g_connected = nullptr, *g_resp_open = nullptr, *g_resp_allowed = nullptr,
                    *g_resp_global_rate = nullptr;
  prometheus::Family<prometheus::Counter>* f_drain = nullptr;
  std::map<std::pair<std::string, std::string>, TotalCounter> m_drain;
  uint64_t batches = 0;

  void logOnce(const std::string& msg) {
    if (logged.size() < 10000 && logged.insert(msg).second) log(msg);
  }

  void setupMetrics() {
    using prometheus::BuildCounter;
    using prometheus::BuildGauge;
    auto counter = [&](const char* name, const char* help, const prometheus::Labels& labels = {}) {
      return TotalCounter{&BuildCounter().Name(name).Help(help).Register(*registry).Add(labels)};
    };
    auto& dropped = BuildCounter()
                        .Name("netdiag_agent_responder_dropped_total")
                        .Help("Datagrams the responder did not answer, by reason")
                        .Register(*registry);
    m_replies = counter("netdiag_agent_responder_replies_total", "Probe replies sent");
    m_resp_malformed = TotalCounter{&dropped.Add({{"reason", "malformed"}})};
    m_resp_limited = TotalCounter{&dropped.Add({{"reason", "rate_limited"}})};
    m_resp_not_in_plan = TotalCounter{&dropped.Add({{"reason", "not_in_plan"}})};
    m_resp_global_limited = TotalCounter{&dropped.Add({{"reason", "global_rate_limited"}})};
    m_spool_dropped = counter("netdiag_agent_spool_dropped_total",
                              "Batches dropped from the spool to stay within its bound");
    m_up_sent = counter("netdiag_agent_uplink_batches_sent_total", "Batches sent to the analyzer");
    m_up_acked =
        counter("netdiag_agent_uplink_batches_acked_total", "Batches the analyzer acknowledged");
    m_up_reconnects = counter("netdiag_agent_uplink_reconnects_total", "Uplink reconnects");
    m_up_split = counter("netdiag_agent_uplink_batches_split_total",
                         "Batches over the analyzer's message bound, split into parts");
    m_up_oversized = counter("netdiag_agent_uplink_oversized_records_total",
                             "Records alone over the message bound, dropped");
    m_batches = counter("netdiag_agent_batches_total", "Batches handed to the uplink");
    auto gauge = [&](const char* name, const char* help) {
      return &BuildGauge().Name(name).Help(help).Register(*registry).Add({});
    };
    g_plan = gauge("netdiag_agent_plan_version", "Version of the probe plan in use (0: none)");
    g_spool_batches = gauge("netdiag_agent_spool_batches", "Batches in the spool");
    g_spool_bytes = gauge("netdiag_agent_spool_bytes", "Bytes of batches in the spool");
    g_connected =
        gauge("netdiag_agent_uplink_connected", "1 while the stream to the analyzer is up");
    g_resp_open = gauge("netdiag_agent_responder_open",
                        "1 while the responder answers every source (no probed_by list)");
    g_resp_allowed = gauge("netdiag_agent_responder_allowed_sources",
                           "Source addresses the responder answers (its plan's and, for the grace "
                           "period, the previous plan's)");
    g_resp_global_rate = gauge("netdiag_agent_responder_global_rate_limit",
                               "Replies per second the responder sends to all sources together");
    f_drain = &BuildCounter()
                   .Name("netdiag_agent_drain_actions_total")
                   .Help(
                       "Drain actions from the analyzer by result (done, failed, refused) and "
                       "refusal reason")
                   .Register(*registry);
    source_metrics = std::make_unique<SourceMetrics>(*registry, "netdiag_agent");
  }

  // The drain actuator of the config, or nullptr and *error.
  bool setupActuator(std::string* error) {
    std::optional<actuator::DrainKey> key;
    if (!cfg.drain_key_file.empty()) {
      key = actuator::loadDrainKey(cfg.drain_key_file, error);
      if (!key) return false;
    }
    std::unique_ptr<actuator::Executor> executor;
    if (cfg.drain_executor == "frr") {
      executor = std::make_unique<actuator::FrrExecutor>(actuator::FrrOptions{
          cfg.drain_vtysh, cfg.drain_vty_socket, 10, cfg.drain_admin_down, cfg.drain_graceful_s});
    } else if (cfg.drain_executor == "webhook") {
      executor = std::make_unique<actuator::WebhookExecutor>(
          actuator::WebhookOptions{cfg.drain_webhook_url, 10});
    }
    actuator::ActuatorOptions ao;
    ao.guard.node = cfg.node;
    actuator = std::make_unique<actuator::Actuator>(ao, std::move(key), std::move(executor),
                                                    [this](const std::string& m) { log(m); });
    return true;
  }

  // Creates every registered source; false and *error when one cannot be.
  bool createSources(std::string* error) {
    AgentSourceRegistry reg;
    registerAgentSources(reg);
    const AgentSourceContext ctx{cfg, *registry};
    for (const std::string& name : reg.names()) {
      std::string err;
      std::unique_ptr<Source> s = (*reg.find(name))(ctx, &err);
      if (!s) {
        *error = name + ": " + err;
        return false;
      }
      sources.push_back(std::move(s));
    }
    return true;
  }

  void updateMetrics() {
    ResponderStats r = past_responder;
    if (responder) {
      const ResponderStats s = responder->stats();
      addResponderCounts(s, r);
      g_resp_open->Set(s.everyone ? 1 : 0);
      g_resp_allowed->Set(static_cast<double>(s.allowed));
    }
    m_replies.set(static_cast<double>(r.replied));
    m_resp_malformed.set(static_cast<double>(r.malformed));
    m_resp_limited.set(static_cast<double>(r.rate_limited));
    m_resp_not_in_plan.set(static_cast<double>(r.not_in_plan));
    m_resp_global_limited.set(static_cast<double>(r.global_rate_limited));
    g_resp_global_rate->Set(global_rate);
    g_plan->Set(plan ? static_cast<double>(plan->version()) : 0);
    g_spool_batches->Set(static_cast<double>(spool->batches()));
    g_spool_bytes->Set(static_cast<double>(spool->bytes()));
    m_spool_dropped.set(static_cast<double>(spool->dropped()));
    const UplinkStats u = uplink->stats();
    g_connected->Set(u.connected ? 1 : 0);
    // Say so when the analyzer goes away or comes back; batches spool meanwhile.
    if (!uplink_up || *uplink_up != u.connected) {
      if (u.connected) {
        log("uplink to " + uplink->describe() + " connected");
      } else if (uplink_up) {
        const std::string why = uplink->lastError();
        log("uplink to " + uplink->describe() + " lost" + (why.empty() ? "" : ": " + why) +
            "; spooling (" + std::to_string(spool->batches()) + " batches held)");
      }
      uplink_up = u.connected;
    }
    m_up_sent.set(static_cast<double>(u.sent));
    m_up_acked.set(static_cast<double>(u.acked));
    m_up_reconnects.set(static_cast<double>(u.reconnects));
    m_up_split.set(static_cast<double>(u.split));
    m_up_oversized.set(static_cast<double>(u.oversized_records));
    m_batches.set(static_cast<double>(batches));
    for (const auto& [k, n] : actuator->counts()) {
      auto it = m_drain.find(k);
      if (it == m_drain.end()) {
        it = m_drain
                 .emplace(k,
                          TotalCounter{&f_drain->Add({{"result", k.first}, {"reason", k.second}})})
                 .first;
      }
      it->second.set(static_cast<double>(n));
    }
    std::vector<const Source*> all;
    for (const auto& s : sources) all.push_back(s.get());
    source_metrics->update(all);
  }

  // The plan: from the file when configured, else from the analyzer.
  std::optional<v1::AgentPlan> loadPlan(std::string* error) {
    if (cfg.plan_file.empty()) return uplink->fetchPlan(plan ? plan->version() : 0, error);
    std::ifstream in(cfg.plan_file, std::ios::binary);
    if (!in) {
      *error = cfg.plan_file + ": cannot open plan file";
      return std::nullopt;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    v1::AgentPlan p;
    auto status = google::protobuf::util::JsonStringToMessage(ss.str(), &p);
    if (!status.ok()) {
      *error = cfg.plan_file + ": not an AgentPlan in JSON: " + std::string(status.message());
      return std::nullopt;
    }
    return p;
  }

  // This node's interfaces among the plan's monitored ports ("node:if").
  std::vector<std::string> interfaces() const {
    std::vector<std::string> out;
    const std::string prefix = cfg.node + ":";
    for (const std::string& p : plan->monitored_ports()) {
      if (p.compare(0, prefix.size(), prefix) == 0) out.push_back(p.substr(prefix.size()));
    }
    return out;
  }

  // The global rate limit: the configured one, or sized to the plan's
  // inbound probe rate.
  double global_rate = 0;
  double responderGlobalRate() {
    global_rate =
        cfg.responder_global_rate_limit > 0
            ? cfg.responder_global_rate_limit
            : std::max(kMinGlobalRateLimit,
                       kGlobalRateMargin * std::max(0.0, plan->inbound_probes_per_second()));
    return global_rate;
  }

  // Who the responder answers, and how fast, under the plan just applied.
  // The previous plan's sources keep their replies for responderGrace()
  // (docs/security.md).
  double responderGrace() const { return 2 * cfg.plan_refresh; }
  void limitResponder() {
    const double rate = responderGlobalRate();
    responder->setGlobalRate(rate, std::max(100.0, rate / 10));
    if (!plan->probed_by_known()) {
      responder->allowEveryone();
      logOnce(std::string("responder answers every source: the ") +
              (cfg.plan_file.empty() ? "analyzer's plan" : "plan file") +
              " does not say who probes this node (probed_by_known; an analyzer from before "
              "it, or a flow towards this node whose source has no address)");
      return;
    }
    const std::vector<std::string> bad = responder->allowOnly(
        {plan->probed_by_addrs().begin(), plan->probed_by_addrs().end()}, responderGrace());
    log("responder answers " + std::to_string(plan->probed_by_addrs_size() - bad.size()) +
        " source address(es) of the plan (those of the plan it replaces for " +
        std::to_string(static_cast<int>(responderGrace())) + " s more), at most " +
        std::to_string(static_cast<uint64_t>(rate)) + " replies/s in all");
    for (size_t i = 0; i < bad.size() && i < 5; ++i) {
      log("responder: probed_by_addrs: not an IPv4 address, ignored: \"" +
          topology::escapeForDisplay(bad[i].substr(0, 64)) + "\"");
    }
  }

  void applyPlan(v1::AgentPlan next) {
    const bool port_changed =
        !plan || plan->responder_port() != next.responder_port() || !responder;
    plan = std::move(next);
    actuator->setOwnPorts({plan->monitored_ports().begin(), plan->monitored_ports().end()});
    log("plan version " + std::to_string(plan->version()) + ": " +
        std::to_string(plan->flows_size()) + " flows, " +
        std::to_string(plan->probes_per_second_per_flow()) + " probes/s per flow, window " +
        std::to_string(plan->window_s()) + " s, responder port " +
        std::to_string(plan->responder_port()));
    if (port_changed) {
      if (responder) {
        addResponderCounts(responder->stats(), past_responder);
        responder.reset();
      }
      ResponderOptions ro;
      ro.address = cfg.responder_address;
      ro.port = static_cast<uint16_t>(plan->responder_port());
      ro.rate_per_source = cfg.responder_rate_limit;
      ro.burst_per_source = std::max(10.0, cfg.responder_rate_limit / 10);
      ro.global_rate = responderGlobalRate();
      ro.global_burst = std::max(100.0, ro.global_rate / 10);
      if (plan->probed_by_known())
        ro.allow_only.emplace(plan->probed_by_addrs().begin(), plan->probed_by_addrs().end());
      std::string err;
      responder = Responder::start(ro, &err);
      if (!responder) log("responder not running: " + err);
    }
    if (responder) limitResponder();
    const SourceScope scope{interfaces(), &*plan};
    for (const auto& s : sources) {
      std::vector<std::string> problems;
      s->applyScope(scope, &problems);
      for (const std::string& p : problems) log(p);
    }
  }

  void collect(Source& s) {
    std::vector<std::string> problems;
    s.collect(wallNow(), pending, &problems);
    for (const std::string& e : problems) logOnce(s.name() + ": " + e);
  }

  // Continuous sources hand over what they have; then one batch goes out.
  void flush() {
    for (const auto& s : sources) {
      if (s->interval() == 0) collect(*s);
    }
    for (v1::ActionResult& r : actuator->takeResults())
      *pending.add_action_results() = std::move(r);
    if (pending.probes_size() + pending.ports_size() + pending.lldp_size() +
            pending.action_results_size() ==
        0) {
      return;
    }
    v1::Batch b;
    b.Swap(&pending);
    b.set_sent_at(wallNow());
    uplink->send(std::move(b));
    ++batches;
  }

  bool waitUntil(double mono_s) {
    using std::chrono::duration_cast;
    const auto t = SteadyClock::time_point(
        duration_cast<SteadyClock::duration>(std::chrono::duration<double>(mono_s)));
    std::unique_lock lock(mu);
    cv.wait_until(lock, t, [&] { return stop; });
    return stop;
  }

  // The plan task: load, apply when changed; returns seconds to the next check.
  double plan_backoff = 1;
  std::string last_plan_error;
  double refreshPlan() {
    std::string err;
    auto p = loadPlan(&err);
    if (p) {
      // A new version (or an edited plan file) replaces the plan in use.
      if (!plan || p->version() != plan->version() ||
          p->SerializeAsString() != plan->SerializeAsString()) {
        applyPlan(*p);
      }
      plan_backoff = 1;
      last_plan_error.clear();
      return cfg.plan_refresh;
    }
    if (err != last_plan_error) log("no plan yet: " + err);
    last_plan_error = err;
    // Until a first plan arrives, retry sooner, backing off.
    const double wait = plan ? cfg.plan_refresh : plan_backoff;
    plan_backoff = std::min(plan_backoff * 2, cfg.plan_refresh);
    return wait;
  }

  void run() {
    const Clock& clock = systemClock();
    Scheduler scheduler(std::random_device{}());
    const double start = clock.monoSeconds();
    // Added in this order so that, due together, the plan comes first.
    scheduler.selfTimed("plan", start, 0, [this](double) { return refreshPlan(); });
    for (const auto& s : sources) {
      if (s->interval() > 0) {
        Source* src = s.get();
        scheduler.every(src->name(), start, Cadence{src->interval(), kPollJitter, 0, false},
                        [this, src](double) { collect(*src); });
      }
    }
    scheduler.every("batch", start, Cadence{cfg.batch_interval, 0, cfg.batch_interval, false},
                    [this](double) {
                      flush();
                      updateMetrics();
                    });
    while (true) {
      scheduler.runDue(clock.monoSeconds());
      if (waitUntil(scheduler.nextDue())) break;
    }
    // Shutdown: last records into the spool; unacknowledged ones stay there.
    for (const auto& s : sources) s->stop();
    for (const auto& s : sources) {
      if (s->interval() > 0) collect(*s);
    }
    flush();
    updateMetrics();
    const auto deadline = SteadyClock::now() + std::chrono::seconds(2);
    while (SteadyClock::now() < deadline && uplink->stats().connected && spool->batches() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    uplink->stop();
    responder.reset();
    log("stopped; " + std::to_string(spool->batches()) + " batches left in the spool");
  }
};

std::unique_ptr<Agent> Agent::create(const AgentConfig& config, AgentLog log, std::string* error) {
  const std::vector<std::string> problems = validateAgentConfig(config);
  if (!problems.empty()) {
    *error = problems.front();
    for (size_t i = 1; i < problems.size(); ++i) *error += "; " + problems[i];
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->cfg = config;
  impl->log = log ? std::move(log) : [](const std::string&) {};
  if (config.spool_dir.empty()) {
    impl->spool = makeMemorySpool(config.spool_max_bytes);
  } else {
    std::vector<std::string> warnings;
    impl->spool = openDiskSpool(config.spool_dir, config.spool_max_bytes, error, &warnings);
    if (!impl->spool) return nullptr;
    for (const std::string& w : warnings) impl->log("spool: " + w);
  }
  UplinkOptions uo;
  uo.analyzer = config.analyzer;
  uo.agent = config.node;
  uo.tls_ca = config.tls_ca;
  uo.tls_cert = config.tls_cert;
  uo.tls_key = config.tls_key;
  BusUplinkOptions bo;
  bo.agent = config.node;
  bo.bus.url = config.bus;
  bo.bus.subjects = {config.bus_subject_prefix, config.bus_fabric};
  bo.bus.creds_file = config.bus_creds;
  bo.bus.tls_ca = config.tls_ca;
  bo.bus.tls_cert = config.tls_cert;
  bo.bus.tls_key = config.tls_key;
  std::string bad = config.bus.empty() ? checkUplinkOptions(uo) : bus::checkBusOptions(bo.bus);
  if (!bad.empty()) {
    *error = bad;
    return nullptr;
  }
  impl->registry = std::make_shared<prometheus::Registry>();
  impl->setupMetrics();
  if (!impl->setupActuator(error)) return nullptr;
  if (config.drain_executor.empty()) {
    impl->log("drain actions: refused (no drain_executor)");
  } else {
    impl->log("drain actions: carried out by " + config.drain_executor + ", key from " +
              config.drain_key_file);
  }
  uo.on_action = [a = impl->actuator.get()](const v1::DrainAction& action) { a->offer(action); };
  if (!impl->createSources(error)) return nullptr;
  if (!config.metrics_address.empty()) {
    try {
      impl->exposer = std::make_unique<prometheus::Exposer>(config.metrics_address, 1);
      impl->exposer->RegisterCollectable(impl->registry);
      const auto ports = impl->exposer->GetListeningPorts();
      impl->metrics_port = ports.empty() ? 0 : ports.front();
    } catch (const std::exception& e) {
      *error = "metrics_address " + config.metrics_address + ": cannot listen: " + e.what();
      return nullptr;
    }
  }
  if (config.bus.empty()) {
    impl->uplink = std::make_unique<Uplink>(uo, *impl->spool);
  } else {
    impl->uplink = BusUplink::create(bo, *impl->spool, error);
    if (!impl->uplink) return nullptr;
  }
  return std::unique_ptr<Agent>(new Agent(std::move(impl)));
}

Agent::Agent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Agent::~Agent() = default;

void Agent::run() { impl_->run(); }

void Agent::requestStop() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
}

int Agent::metricsPort() const { return impl_->metrics_port; }

}  // namespace netdiag::collector
