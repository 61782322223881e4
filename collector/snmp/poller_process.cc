#include "collector/snmp/poller_process.h"

#include <chrono>
#include <sstream>
#include <thread>

#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "collector/clock.h"
#include "collector/snmp/snmp_source.h"
#include "collector/source_metrics.h"
#include "collector/spool.h"
#include "collector/total_counter.h"
#include "collector/uplink.h"

namespace netdiag::collector::snmp {

struct PollerProcess::Impl {
  PollerConfig cfg;
  PollerLog log;
  std::unique_ptr<Spool> spool;
  std::unique_ptr<Uplink> uplink;
  std::shared_ptr<prometheus::Registry> registry;
  std::unique_ptr<prometheus::Exposer> exposer;
  int metrics_port = 0;
  std::unique_ptr<SnmpSource> source;
  std::unique_ptr<SourceMetrics> source_metrics;
  prometheus::Gauge *g_connected = nullptr, *g_spool_batches = nullptr;
  TotalCounter m_sent, m_acked, m_dropped;
  // Per target (a problem line starts "node (address): "): at most one line
  // a minute, then how many were held back.
  struct Quiet {
    double last = -1e18;
    uint64_t held = 0;
  };
  std::map<std::string, Quiet> quiet;
  bool was_connected = false;

  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;

  void logLimited(const std::string& msg) {
    const std::string target = msg.substr(0, msg.find(" ("));
    const double now = systemClock().monoSeconds();
    if (quiet.size() > 100000) quiet.clear();
    Quiet& q = quiet[target];
    if (now - q.last < 60) {
      ++q.held;
      return;
    }
    log(msg + (q.held ? " [" + std::to_string(q.held) + " more since the last message]" : ""));
    q.last = now;
    q.held = 0;
  }

  void flush() {
    v1::Batch b;
    std::vector<std::string> problems;
    source->collect(systemClock().wallSeconds(), b, &problems);
    for (const std::string& p : problems) logLimited(p);
    if (b.ports_size() + b.lldp_size() > 0) {
      b.set_sent_at(systemClock().wallSeconds());
      uplink->send(std::move(b));
    }
    const UplinkStats u = uplink->stats();
    if (u.connected != was_connected) {
      log(std::string("uplink to ") + cfg.analyzer + (u.connected ? " connected" : " lost") +
          (u.connected ? "" : "; spooling"));
      was_connected = u.connected;
    }
    g_connected->Set(u.connected ? 1 : 0);
    g_spool_batches->Set(static_cast<double>(spool->batches()));
    m_sent.set(static_cast<double>(u.sent));
    m_acked.set(static_cast<double>(u.acked));
    m_dropped.set(static_cast<double>(spool->dropped()));
    source_metrics->update({source.get()});
  }

  void run() {
    using std::chrono::duration;
    const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        duration<double>(cfg.batch_interval));
    auto next = std::chrono::steady_clock::now() + period;
    while (true) {
      {
        std::unique_lock lock(mu);
        if (cv.wait_until(lock, next, [&] { return stop; })) break;
      }
      flush();
      next += period;
      if (next < std::chrono::steady_clock::now()) next = std::chrono::steady_clock::now() + period;
    }
    source->stop();
    flush();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < deadline && uplink->stats().connected &&
           spool->batches() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    uplink->stop();
    log("stopped; " + std::to_string(spool->batches()) + " batches left in the spool");
  }
};

std::unique_ptr<PollerProcess> PollerProcess::create(
    const PollerConfig& config, std::map<std::string, std::set<std::string>> known_ports,
    PollerLog log, std::string* error) {
  auto m = std::make_unique<Impl>();
  m->cfg = config;
  m->log = log ? std::move(log) : [](const std::string&) {};
  if (config.analyzer.empty()) {
    *error = "analyzer: the analyzer's gRPC address HOST:PORT is required";
    return nullptr;
  }
  if (config.spool_dir.empty()) {
    m->spool = makeMemorySpool(config.spool_max_bytes);
  } else {
    std::vector<std::string> warnings;
    m->spool = openDiskSpool(config.spool_dir, config.spool_max_bytes, error, &warnings);
    if (!m->spool) return nullptr;
    for (const std::string& w : warnings) m->log("spool: " + w);
  }
  UplinkOptions uo;
  uo.analyzer = config.analyzer;
  uo.agent = config.identity;
  uo.tls_ca = config.tls_ca;
  uo.tls_cert = config.tls_cert;
  uo.tls_key = config.tls_key;
  if (std::string bad = checkUplinkOptions(uo); !bad.empty()) {
    *error = bad;
    return nullptr;
  }
  m->registry = std::make_shared<prometheus::Registry>();
  auto gauge = [&](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(*m->registry).Add({});
  };
  auto counter = [&](const char* name, const char* help) {
    return TotalCounter{
        &prometheus::BuildCounter().Name(name).Help(help).Register(*m->registry).Add({})};
  };
  m->g_connected =
      gauge("netdiag_poller_uplink_connected", "1 while the stream to the analyzer is up");
  m->g_spool_batches = gauge("netdiag_poller_spool_batches", "Batches in the spool");
  m->m_sent = counter("netdiag_poller_uplink_batches_sent_total", "Batches sent to the analyzer");
  m->m_acked =
      counter("netdiag_poller_uplink_batches_acked_total", "Batches the analyzer acknowledged");
  m->m_dropped = counter("netdiag_poller_spool_dropped_total",
                         "Batches dropped from the spool to stay within its bound");
  m->source_metrics = std::make_unique<SourceMetrics>(*m->registry, "netdiag_poller");
  if (!config.metrics_address.empty()) {
    try {
      m->exposer = std::make_unique<prometheus::Exposer>(config.metrics_address, 1);
      m->exposer->RegisterCollectable(m->registry);
      const auto ports = m->exposer->GetListeningPorts();
      m->metrics_port = ports.empty() ? 0 : ports.front();
    } catch (const std::exception& e) {
      *error = "metrics_address " + config.metrics_address + ": cannot listen: " + e.what();
      return nullptr;
    }
  }
  std::vector<std::string> problems;
  m->source = std::make_unique<SnmpSource>(config, std::move(known_ports), *m->registry, &problems);
  for (const std::string& p : problems) m->log(p);
  m->uplink = std::make_unique<Uplink>(uo, *m->spool);
  std::ostringstream every;
  every << config.interval;
  m->log("polling " + std::to_string(config.targets.size()) + " switches every " + every.str() +
         " s as \"" + config.identity + "\"");
  return std::unique_ptr<PollerProcess>(new PollerProcess(std::move(m)));
}

PollerProcess::PollerProcess(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PollerProcess::~PollerProcess() = default;
void PollerProcess::run() { impl_->run(); }
void PollerProcess::requestStop() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
}
int PollerProcess::metricsPort() const { return impl_->metrics_port; }

}  // namespace netdiag::collector::snmp
