#include "collector/agent.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <google/protobuf/util/json_util.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "collector/counters.h"
#include "collector/lldp.h"
#include "collector/prober.h"
#include "collector/responder.h"
#include "collector/spool.h"
#include "collector/uplink.h"

namespace netdiag::collector {
namespace {

using SteadyClock = std::chrono::steady_clock;

double wallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A Prometheus counter fed from a running total kept elsewhere.
struct TotalCounter {
  prometheus::Counter* counter = nullptr;
  double last = 0;
  void set(double total) {
    if (total > last) counter->Increment(total - last);
    last = std::max(last, total);
  }
};

// Running totals of the probers an agent has had (one per plan version).
struct ProbeTotals {
  uint64_t sent = 0, lost = 0, send_errors = 0, receive_errors = 0, malformed = 0, traces = 0;
  void add(const ProberStats& s) {
    sent += s.sent;
    lost += s.lost;
    send_errors += s.send_errors;
    receive_errors += s.receive_errors;
    malformed += s.malformed;
    traces += s.traces;
  }
};

}  // namespace

struct Agent::Impl {
  AgentConfig cfg;
  AgentLog log;
  std::optional<bool> uplink_up;  // last state logged; unset until the first check

  std::unique_ptr<Spool> spool;
  std::unique_ptr<Uplink> uplink;
  std::shared_ptr<prometheus::Registry> registry;
  std::unique_ptr<prometheus::Exposer> exposer;
  int metrics_port = 0;

  std::optional<v1::AgentPlan> plan;
  std::unique_ptr<Responder> responder;
  std::unique_ptr<Prober> prober;
  std::unique_ptr<CounterReader> counters;
  std::unique_ptr<LldpCapture> lldp;
  ProbeTotals past_probes;        // of probers already replaced
  ResponderStats past_responder;  // likewise
  v1::Batch pending;              // records waiting for the next batch
  std::set<std::string> logged;   // problems already logged once

  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;

  // Metrics.
  TotalCounter m_sent, m_lost, m_err_send, m_err_recv, m_err_malformed, m_traces;
  TotalCounter m_replies, m_resp_malformed, m_resp_limited;
  TotalCounter m_spool_dropped, m_up_sent, m_up_acked, m_up_reconnects, m_batches;
  TotalCounter m_counter_errors, m_lldp_frames;
  prometheus::Gauge *g_flows = nullptr, *g_plan = nullptr, *g_spool_batches = nullptr,
                    *g_spool_bytes = nullptr, *g_connected = nullptr;
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
    auto& errors = BuildCounter()
                       .Name("netdiag_agent_probe_errors_total")
                       .Help("Probe socket errors, by reason")
                       .Register(*registry);
    m_sent = counter("netdiag_agent_probes_sent_total", "Probes sent");
    m_lost = counter("netdiag_agent_probes_lost_total",
                     "Probes without a reply by their window's end plus the timeout");
    m_err_send = TotalCounter{&errors.Add({{"reason", "send"}})};
    m_err_recv = TotalCounter{&errors.Add({{"reason", "receive"}})};
    m_err_malformed = TotalCounter{&errors.Add({{"reason", "malformed_reply"}})};
    m_traces = counter("netdiag_agent_path_discoveries_total", "Path discoveries finished");
    auto& dropped = BuildCounter()
                        .Name("netdiag_agent_responder_dropped_total")
                        .Help("Datagrams the responder did not answer, by reason")
                        .Register(*registry);
    m_replies = counter("netdiag_agent_responder_replies_total", "Probe replies sent");
    m_resp_malformed = TotalCounter{&dropped.Add({{"reason", "malformed"}})};
    m_resp_limited = TotalCounter{&dropped.Add({{"reason", "rate_limited"}})};
    m_spool_dropped = counter("netdiag_agent_spool_dropped_total",
                              "Batches dropped from the spool to stay within its bound");
    m_up_sent = counter("netdiag_agent_uplink_batches_sent_total", "Batches sent to the analyzer");
    m_up_acked =
        counter("netdiag_agent_uplink_batches_acked_total", "Batches the analyzer acknowledged");
    m_up_reconnects = counter("netdiag_agent_uplink_reconnects_total", "Uplink reconnects");
    m_batches = counter("netdiag_agent_batches_total", "Batches handed to the uplink");
    m_counter_errors =
        counter("netdiag_agent_counter_read_errors_total", "Problems reading port counters");
    m_lldp_frames = counter("netdiag_agent_lldp_frames_total", "LLDP frames decoded");
    auto gauge = [&](const char* name, const char* help) {
      return &BuildGauge().Name(name).Help(help).Register(*registry).Add({});
    };
    g_flows = gauge("netdiag_agent_flows", "Probe flows being probed");
    g_plan = gauge("netdiag_agent_plan_version", "Version of the probe plan in use (0: none)");
    g_spool_batches = gauge("netdiag_agent_spool_batches", "Batches in the spool");
    g_spool_bytes = gauge("netdiag_agent_spool_bytes", "Bytes of batches in the spool");
    g_connected =
        gauge("netdiag_agent_uplink_connected", "1 while the stream to the analyzer is up");
  }

  void updateMetrics() {
    ProbeTotals t = past_probes;
    uint64_t flows = 0;
    if (prober) {
      const ProberStats s = prober->stats();
      t.add(s);
      flows = s.flows;
    }
    m_sent.set(static_cast<double>(t.sent));
    m_lost.set(static_cast<double>(t.lost));
    m_err_send.set(static_cast<double>(t.send_errors));
    m_err_recv.set(static_cast<double>(t.receive_errors));
    m_err_malformed.set(static_cast<double>(t.malformed));
    m_traces.set(static_cast<double>(t.traces));
    ResponderStats r = past_responder;
    if (responder) {
      const ResponderStats s = responder->stats();
      r.replied += s.replied;
      r.malformed += s.malformed;
      r.rate_limited += s.rate_limited;
    }
    m_replies.set(static_cast<double>(r.replied));
    m_resp_malformed.set(static_cast<double>(r.malformed));
    m_resp_limited.set(static_cast<double>(r.rate_limited));
    g_flows->Set(static_cast<double>(flows));
    g_plan->Set(plan ? static_cast<double>(plan->version()) : 0);
    g_spool_batches->Set(static_cast<double>(spool->batches()));
    g_spool_bytes->Set(static_cast<double>(spool->bytes()));
    m_spool_dropped.set(static_cast<double>(spool->dropped()));
    const UplinkStats u = uplink->stats();
    g_connected->Set(u.connected ? 1 : 0);
    // Say so when the analyzer goes away or comes back; batches spool meanwhile.
    if (!uplink_up || *uplink_up != u.connected) {
      if (u.connected) {
        log("uplink to " + cfg.analyzer + " connected");
      } else if (uplink_up) {
        const std::string why = uplink->lastError();
        log("uplink to " + cfg.analyzer + " lost" + (why.empty() ? "" : ": " + why) +
            "; spooling (" + std::to_string(spool->batches()) + " batches held)");
      }
      uplink_up = u.connected;
    }
    m_up_sent.set(static_cast<double>(u.sent));
    m_up_acked.set(static_cast<double>(u.acked));
    m_up_reconnects.set(static_cast<double>(u.reconnects));
    m_batches.set(static_cast<double>(batches));
    if (counters) m_counter_errors.set(static_cast<double>(counters->errors()));
    if (lldp) m_lldp_frames.set(static_cast<double>(lldp->frames()));
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

  void drainProber() {
    if (!prober) return;
    for (v1::Probe& r : prober->drain()) *pending.add_probes() = std::move(r);
  }

  void applyPlan(v1::AgentPlan next) {
    const bool port_changed =
        !plan || plan->responder_port() != next.responder_port() || !responder;
    plan = std::move(next);
    log("plan version " + std::to_string(plan->version()) + ": " +
        std::to_string(plan->flows_size()) + " flows, " +
        std::to_string(plan->probes_per_second_per_flow()) + " probes/s per flow, window " +
        std::to_string(plan->window_s()) + " s, responder port " +
        std::to_string(plan->responder_port()));
    if (port_changed) {
      if (responder) {
        const ResponderStats s = responder->stats();
        past_responder.replied += s.replied;
        past_responder.malformed += s.malformed;
        past_responder.rate_limited += s.rate_limited;
        responder.reset();
      }
      ResponderOptions ro;
      ro.address = cfg.responder_address;
      ro.port = static_cast<uint16_t>(plan->responder_port());
      ro.rate_per_source = cfg.responder_rate_limit;
      ro.burst_per_source = std::max(10.0, cfg.responder_rate_limit / 10);
      std::string err;
      responder = Responder::start(ro, &err);
      if (!responder) log("responder not running: " + err);
    }
    std::map<std::string, FlowPath> paths;
    if (prober) {
      paths = prober->paths();
      prober->stop();
      drainProber();
      past_probes.add(prober->stats());
      prober.reset();
    }
    ProberOptions po;
    po.window_s = plan->window_s() > 0 ? plan->window_s() : 5;
    po.probes_per_second =
        plan->probes_per_second_per_flow() > 0 ? plan->probes_per_second_per_flow() : 1;
    po.responder_port = static_cast<uint16_t>(plan->responder_port());
    po.dscp = static_cast<uint8_t>(std::min<uint32_t>(plan->dscp(), 63));
    po.timeout_s = cfg.probe_timeout;
    po.path_refresh_s = cfg.path_refresh;
    std::vector<std::string> errors;
    prober =
        Prober::start(po, {plan->flows().begin(), plan->flows().end()}, std::move(paths), &errors);
    for (size_t i = 0; i < errors.size() && i < 5; ++i) log("flow skipped: " + errors[i]);
    if (errors.size() > 5)
      log("... and " + std::to_string(errors.size() - 5) + " more flows skipped");
    const std::vector<std::string> ifs = interfaces();
    if (!counters) {
      counters = std::make_unique<CounterReader>(cfg.sysfs_root, cfg.node, ifs);
    } else {
      counters->setInterfaces(ifs);
    }
    if (cfg.lldp) {
      if (!lldp) {
        std::string err;
        lldp = std::make_unique<LldpCapture>(cfg.node, ifs, &err);
        if (!err.empty()) log("LLDP capture (needs CAP_NET_RAW): " + err);
      } else {
        lldp->setInterfaces(ifs);
      }
    }
  }

  void readCounters() {
    if (!counters) return;
    std::vector<std::string> errors;
    for (v1::PortCounters& c : counters->read(wallNow(), &errors))
      *pending.add_ports() = std::move(c);
    for (const std::string& e : errors) logOnce("counters: " + e);
  }

  void pollLldp() {
    if (!lldp) return;
    std::vector<std::string> errors;
    for (v1::LldpNeighbor& n : lldp->poll(wallNow(), &errors)) *pending.add_lldp() = std::move(n);
    for (const std::string& e : errors) logOnce("lldp: " + e);
  }

  void flush() {
    drainProber();
    pollLldp();
    if (pending.probes_size() + pending.ports_size() + pending.lldp_size() == 0) return;
    v1::Batch b;
    b.Swap(&pending);
    b.set_sent_at(wallNow());
    uplink->send(std::move(b));
    ++batches;
  }

  bool waitUntil(SteadyClock::time_point t) {
    std::unique_lock lock(mu);
    cv.wait_until(lock, t, [&] { return stop; });
    return stop;
  }

  void run() {
    using std::chrono::duration_cast;
    auto secs = [](double s) {
      return duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
    };
    SteadyClock::time_point now = SteadyClock::now();
    SteadyClock::time_point next_plan = now, next_batch = now + secs(cfg.batch_interval),
                            next_counters = now;
    double plan_backoff = 1;
    std::string last_plan_error;
    while (true) {
      now = SteadyClock::now();
      if (now >= next_plan) {
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
          next_plan = now + secs(cfg.plan_refresh);
        } else {
          if (err != last_plan_error) log("no plan yet: " + err);
          last_plan_error = err;
          // Until a first plan arrives, retry sooner, backing off.
          next_plan = now + secs(plan ? cfg.plan_refresh : plan_backoff);
          plan_backoff = std::min(plan_backoff * 2, cfg.plan_refresh);
        }
      }
      if (now >= next_counters) {
        readCounters();
        next_counters = now + secs(cfg.counters_interval);
      }
      if (now >= next_batch) {
        flush();
        updateMetrics();
        next_batch += secs(cfg.batch_interval);
        if (next_batch < now) next_batch = now + secs(cfg.batch_interval);
      }
      if (waitUntil(std::min({next_plan, next_batch, next_counters}))) break;
    }
    // Shutdown: last records into the spool; unacknowledged ones stay there.
    if (prober) prober->stop();
    readCounters();
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
  if (std::string bad = checkUplinkOptions(uo); !bad.empty()) {
    *error = bad;
    return nullptr;
  }
  impl->registry = std::make_shared<prometheus::Registry>();
  impl->setupMetrics();
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
  impl->uplink = std::make_unique<Uplink>(uo, *impl->spool);
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
