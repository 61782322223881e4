#include "collector/snmp/snmp_poller.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <random>
#include <sstream>

#include <poll.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <sys/resource.h>

#include "collector/clock.h"
#include "collector/scheduler.h"
#include "collector/snmp/lldp_table.h"
#include "collector/snmp/port_table.h"
#include "collector/snmp/session.h"
#include "collector/snmp/walk.h"

namespace netdiag::collector::snmp {
namespace {

constexpr double kJitter = 0.1;  // each poll moves by up to ±5 % of its interval
const char* const kReasons[] = {"timeout", "auth", "response", "malformed", "overrun", "send"};
enum Reason { kTimeout, kAuth, kResponse, kMalformed, kOverrun, kSend, kReasonCount };
constexpr long kTooBig = 1;  // RFC 3416 error-status tooBig

// 2, 0.5, 1.25: for messages.
std::string seconds(double s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

Oid sysUpTimeInstance() {
  Oid o = oids::kSysUpTime;
  o.push_back(0);
  return o;
}

}  // namespace

struct SnmpPoller::Impl {
  enum class Walk { kNone, kDiscovery, kCounters, kLldp };

  struct Target {
    SnmpTarget cfg;
    std::unique_ptr<SnmpSession> session;
    std::string open_error;
    PortTable ports;
    Walk walk = Walk::kNone;
    Walk after_discovery = Walk::kNone;
    std::optional<BulkWalk> bulk;
    bool first_request = false;
    std::optional<uint32_t> uptime;
    double started_mono = 0, started_wall = 0, first_response_wall = 0;
    int repetitions = 0;
    bool counters_queued = false, lldp_due = false, queued = false;
    bool counters_done = false, lldp_done = false;  // for runOnce
    prometheus::Gauge* up = nullptr;
    prometheus::Counter* errors[kReasonCount] = {};

    Target(SnmpTarget c, std::set<std::string> known)
        : cfg(std::move(c)), ports(cfg.node, cfg.port_map, std::move(known)) {}
  };

  PollerConfig cfg;
  SourceStats& stats;
  std::vector<std::unique_ptr<Target>> targets;
  std::deque<Target*> queue;  // due, waiting for a slot
  size_t in_flight = 0;
  Scheduler scheduler{std::random_device{}()};
  bool scheduled = false;

  prometheus::Counter* requests = nullptr;
  prometheus::Counter* varbinds = nullptr;

  mutable std::mutex mu;  // guards pending, problems and totals
  v1::Batch pending;
  std::vector<std::string> problems;
  Totals totals;

  Impl(const PollerConfig& c, SourceStats& s) : cfg(c), stats(s) {}

  void problem(const Target& t, const std::string& what) {
    std::lock_guard lock(mu);
    if (problems.size() < 1000)
      problems.push_back(t.cfg.node + " (" + t.cfg.address + "): " + what);
  }

  // Ends the target's poll; `reason` is kReasonCount when it worked.
  void finish(Target& t, Reason reason, const std::string& error) {
    const double mono = systemClock().monoSeconds();
    const double wall = systemClock().wallSeconds();
    const bool ok = reason == kReasonCount;
    if (t.walk != Walk::kNone) {
      stats.record(t.cfg.node, ok, mono - t.started_mono, wall);
      std::lock_guard lock(mu);
      ++totals.polls;
      if (!ok) ++totals.failures;
    }
    if (!ok) {
      t.errors[reason]->Increment();
      problem(t, error);
    }
    t.up->Set(ok ? 1 : 0);
    const Walk was = t.walk;
    t.walk = Walk::kNone;
    t.bulk.reset();
    if (was == Walk::kCounters || was == Walk::kDiscovery) t.counters_done = true;
    if (was == Walk::kLldp) t.lldp_done = true;
    // An LLDP walk that is due follows a working counters walk on the same slot.
    if (ok && was == Walk::kCounters && t.lldp_due) {
      t.lldp_due = false;
      startWalk(t, Walk::kLldp);
      return;
    }
    if (was == Walk::kCounters && !ok) {  // no LLDP walk this round
      t.lldp_done = true;
      t.lldp_due = false;
    }
    --in_flight;
    // Came due while this poll ran: once more now (never a burst of missed slots).
    if (t.counters_queued || t.lldp_due) {
      t.queued = true;
      queue.push_back(&t);
    }
  }

  int repetitionsFor(const Target& t) const {
    const size_t open = t.bulk ? std::max<size_t>(1, t.bulk->nextRequest().size()) : 1;
    return std::max(1, std::min<int>(t.repetitions, cfg.max_varbinds / static_cast<int>(open)));
  }

  void sendNext(Target& t) {
    std::vector<Oid> req = t.bulk->nextRequest();
    int non_repeaters = 0;
    if (t.first_request && t.walk == Walk::kCounters) {
      req.insert(req.begin(), oids::kSysUpTime);  // GETNEXT of it: sysUpTime.0
      non_repeaters = 1;
    }
    std::string err;
    if (!t.session->sendBulk(req, non_repeaters, repetitionsFor(t), &err)) {
      finish(t, kSend, err);
      return;
    }
    requests->Increment();
    std::lock_guard lock(mu);
    ++totals.requests;
  }

  void startWalk(Target& t, Walk w) {
    t.walk = w;
    t.first_request = true;
    t.uptime.reset();
    t.repetitions = cfg.max_repetitions;
    t.started_mono = systemClock().monoSeconds();
    t.started_wall = systemClock().wallSeconds();
    t.first_response_wall = 0;
    if (!t.session) {
      std::string err;
      t.session = SnmpSession::open(t.cfg, cfg.timeout, cfg.retries, &err);
      if (!t.session) {
        finish(t, kSend, err);
        return;
      }
    }
    if (t.session->needsDiscovery()) {
      t.walk = Walk::kDiscovery;
      t.after_discovery = w;
      std::string err;
      if (!t.session->sendDiscovery(&err)) finish(t, kSend, err);
      return;
    }
    t.bulk.emplace(w == Walk::kLldp ? lldpColumns() : counterColumns(t.ports.usesHcCounters()),
                   cfg.max_rows);
    sendNext(t);
  }

  void onResult(Target& t, SnmpResult r) {
    const double wall = systemClock().wallSeconds();
    if (r.kind == SnmpResult::Kind::kTimeout) {
      finish(t, kTimeout,
             "no answer within " + seconds(cfg.timeout) + " s (" + std::to_string(cfg.retries + 1) +
                 " tries)");
      return;
    }
    if (t.session && t.session->broken()) {
      t.session.reset();  // a new one next poll
      finish(t, kTimeout, r.error);
      return;
    }
    if (r.kind == SnmpResult::Kind::kError) {
      finish(t, t.cfg.version == 3 ? kAuth : kResponse, r.error);
      return;
    }
    if (t.walk == Walk::kDiscovery) {
      startWalk(t, t.after_discovery);
      return;
    }
    if (r.error_status == kTooBig && t.repetitions > 1) {
      t.repetitions = std::max(1, repetitionsFor(t) / 2);
      sendNext(t);
      return;
    }
    if (r.error_status != 0) {
      finish(t, kResponse, "error-status " + std::to_string(r.error_status) + " (" + r.error + ")");
      return;
    }
    if (t.first_response_wall == 0) t.first_response_wall = wall;
    {
      std::lock_guard lock(mu);
      totals.varbinds += r.varbinds.size();
    }
    varbinds->Increment(static_cast<double>(r.varbinds.size()));
    if (t.first_request && t.walk == Walk::kCounters && !r.varbinds.empty()) {
      const Varbind& up = r.varbinds.front();
      if (up.oid == sysUpTimeInstance() && up.type == Varbind::Type::kTimeTicks)
        t.uptime = static_cast<uint32_t>(up.number);
      r.varbinds.erase(r.varbinds.begin());
    }
    t.first_request = false;
    if (std::string err = t.bulk->feed(r.varbinds); !err.empty()) {
      finish(t, kMalformed, err);
      return;
    }
    if (systemClock().monoSeconds() - t.started_mono > cfg.interval) {
      finish(t, kOverrun,
             "poll took longer than its interval (" + seconds(cfg.interval) +
                 " s): abandoned; raise max_repetitions or the interval");
      return;
    }
    if (!t.bulk->done()) {
      sendNext(t);
      return;
    }
    std::vector<std::string> found;
    if (t.walk == Walk::kCounters) {
      auto records = t.ports.update(t.first_response_wall, t.uptime, *t.bulk, &found);
      std::lock_guard lock(mu);
      for (auto& rec : records) *pending.add_ports() = std::move(rec);
    } else {
      auto records = lldpRecords(t.first_response_wall, t.cfg.node, t.ports, *t.bulk, &found);
      std::lock_guard lock(mu);
      for (auto& rec : records) *pending.add_lldp() = std::move(rec);
    }
    for (const std::string& f : found) problem(t, f);
    if (!found.empty()) t.errors[kMalformed]->Increment();
    finish(t, kReasonCount, "");
  }

  void due(Target& t, bool lldp) {
    if (lldp) {
      t.lldp_due = true;
    } else {
      t.counters_queued = true;
    }
    if (t.walk != Walk::kNone || t.queued) {
      if (!lldp && t.walk != Walk::kNone) {
        t.errors[kOverrun]->Increment();
        std::lock_guard lock(mu);
        ++totals.overruns;
      }
      return;
    }
    t.queued = true;
    queue.push_back(&t);
  }

  void startQueued() {
    while (!queue.empty() && in_flight < cfg.max_in_flight) {
      Target& t = *queue.front();
      queue.pop_front();
      t.queued = false;
      ++in_flight;
      if (t.counters_queued || !t.lldp_due) {
        t.counters_queued = false;
        startWalk(t, Walk::kCounters);
      } else {
        t.lldp_due = false;
        startWalk(t, Walk::kLldp);
      }
    }
  }

  void schedule() {
    const double now = systemClock().monoSeconds();
    for (auto& t : targets) {
      Target* tp = t.get();
      scheduler.every(t->cfg.node, now, Cadence{cfg.interval, kJitter, 0, true},
                      [this, tp](double) { due(*tp, false); });
      if (cfg.lldp_interval > 0) {
        scheduler.every(t->cfg.node + "/lldp", now, Cadence{cfg.lldp_interval, kJitter, 0, true},
                        [this, tp](double) { due(*tp, true); });
      }
    }
    scheduled = true;
  }

  void io(double max_wait_s) {
    std::vector<pollfd> fds;
    std::vector<Target*> owners;
    double earliest = INFINITY;
    for (auto& t : targets) {
      if (!t->session || !t->session->busy()) continue;
      fds.push_back(pollfd{t->session->fd(), POLLIN, 0});
      owners.push_back(t.get());
      earliest = std::min(earliest, t->session->deadline());
    }
    const double now = systemClock().monoSeconds();
    double wait = std::min(max_wait_s, earliest - now);
    wait = std::max(0.0, wait);
    const int ms = static_cast<int>(std::ceil(wait * 1000));
    const int n = ::poll(fds.data(), fds.size(), ms);
    const double after = systemClock().monoSeconds();
    for (size_t i = 0; i < fds.size(); ++i) {
      Target& t = *owners[i];
      if (n > 0 && (fds[i].revents & (POLLIN | POLLERR))) {
        t.session->read((fds[i].revents & POLLERR) != 0);
      } else if (after >= t.session->deadline()) {
        t.session->timeout(after);
      }
      if (auto r = t.session->take()) onResult(t, std::move(*r));
    }
  }
};

SnmpPoller::SnmpPoller(const PollerConfig& config,
                       std::map<std::string, std::set<std::string>> known_ports,
                       prometheus::Registry& metrics, SourceStats& stats,
                       std::vector<std::string>* problems)
    : impl_(std::make_unique<Impl>(config, stats)) {
  initNetSnmp();
  // One socket per target: raise the soft descriptor limit (1,024 by
  // default) toward the hard one.
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    const rlim_t want = static_cast<rlim_t>(config.targets.size()) + 256;
    if (lim.rlim_cur < want && lim.rlim_cur != RLIM_INFINITY) {
      lim.rlim_cur = std::min(want, lim.rlim_max);
      ::setrlimit(RLIMIT_NOFILE, &lim);
    }
    if (lim.rlim_cur < want && problems) {
      problems->push_back("only " + std::to_string(lim.rlim_cur) + " file descriptors for " +
                          std::to_string(config.targets.size()) +
                          " targets (raise the hard limit, e.g. LimitNOFILE= in systemd)");
    }
  }
  auto& up = prometheus::BuildGauge()
                 .Name("netdiag_snmp_target_up")
                 .Help("1 while the target's last SNMP poll worked")
                 .Register(metrics);
  auto& errors = prometheus::BuildCounter()
                     .Name("netdiag_snmp_errors_total")
                     .Help("Failed SNMP polls and malformed responses, by target and reason")
                     .Register(metrics);
  impl_->requests = &prometheus::BuildCounter()
                         .Name("netdiag_snmp_requests_total")
                         .Help("GETBULK requests sent")
                         .Register(metrics)
                         .Add({});
  impl_->varbinds = &prometheus::BuildCounter()
                         .Name("netdiag_snmp_varbinds_total")
                         .Help("Values received in responses")
                         .Register(metrics)
                         .Add({});
  for (const SnmpTarget& t : config.targets) {
    auto target = std::make_unique<Impl::Target>(t, known_ports[t.node]);
    target->up = &up.Add({{"target", t.node}});
    for (int r = 0; r < kReasonCount; ++r)
      target->errors[r] = &errors.Add({{"target", t.node}, {"reason", kReasons[r]}});
    std::string err;
    target->session = SnmpSession::open(t, config.timeout, config.retries, &err);
    if (!target->session && problems) problems->push_back(t.where + ": " + t.node + ": " + err);
    impl_->targets.push_back(std::move(target));
  }
}

SnmpPoller::~SnmpPoller() = default;

void SnmpPoller::step(double max_wait_s) {
  Impl& m = *impl_;
  if (!m.scheduled) m.schedule();
  m.scheduler.runDue(systemClock().monoSeconds());
  m.startQueued();
  const double next = m.scheduler.nextDue() - systemClock().monoSeconds();
  m.io(std::min(max_wait_s, std::max(0.0, next)));
  m.startQueued();
}

bool SnmpPoller::runOnce(double timeout_s) {
  Impl& m = *impl_;
  for (auto& t : m.targets) {
    t->counters_done = false;
    t->lldp_done = m.cfg.lldp_interval <= 0;
    t->lldp_due = m.cfg.lldp_interval > 0;
    t->counters_queued = true;
    t->queued = true;
    m.queue.push_back(t.get());
  }
  const double deadline = systemClock().monoSeconds() + timeout_s;
  while (systemClock().monoSeconds() < deadline) {
    m.startQueued();
    const bool all = std::all_of(m.targets.begin(), m.targets.end(),
                                 [](const auto& t) { return t->counters_done && t->lldp_done; });
    if (all && m.in_flight == 0) return true;
    m.io(0.1);
  }
  return false;
}

void SnmpPoller::take(v1::Batch& out, std::vector<std::string>* problems) {
  std::lock_guard lock(impl_->mu);
  for (auto& p : *impl_->pending.mutable_ports()) *out.add_ports() = std::move(p);
  for (auto& l : *impl_->pending.mutable_lldp()) *out.add_lldp() = std::move(l);
  impl_->pending.Clear();
  if (problems) {
    for (auto& p : impl_->problems) problems->push_back(std::move(p));
  }
  impl_->problems.clear();
}

SnmpPoller::Totals SnmpPoller::totals() const {
  std::lock_guard lock(impl_->mu);
  return impl_->totals;
}

}  // namespace netdiag::collector::snmp
