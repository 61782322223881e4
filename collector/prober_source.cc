// The "prober" source: the Prober (collector/prober.h) runs its epoll loop
// on its own thread; every batch takes the windows it closed. A new plan
// replaces the prober, keeping the paths it found. One target per local
// probe port: a poll (one per batch) fails while a flow of that port could
// not be set up or its sockets had errors since the last batch.

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "collector/agent_sources.h"
#include "collector/clock.h"
#include "collector/prober.h"
#include "collector/total_counter.h"

namespace netdiag::collector {
namespace {

// Running totals of the probers a source has had (one per plan).
struct ProbeTotals {
  uint64_t sent = 0, lost = 0, send_errors = 0, receive_errors = 0, malformed = 0, setup_errors = 0,
           traces = 0;
  void add(const ProberStats& s) {
    sent += s.sent;
    lost += s.lost;
    send_errors += s.send_errors;
    receive_errors += s.receive_errors;
    malformed += s.malformed;
    setup_errors += s.setup_errors;
    traces += s.traces;
  }
};

class ProberSource final : public Source {
 public:
  explicit ProberSource(const AgentSourceContext& ctx)
      : Source("prober"),
        node_(ctx.config.node),
        probe_timeout_(ctx.config.probe_timeout),
        path_refresh_(ctx.config.path_refresh),
        hold_s_(2 * ctx.config.plan_refresh) {
    using prometheus::BuildCounter;
    auto counter = [&](const char* name, const char* help) {
      return TotalCounter{&BuildCounter().Name(name).Help(help).Register(ctx.metrics).Add({})};
    };
    auto& errors = BuildCounter()
                       .Name("netdiag_agent_probe_errors_total")
                       .Help("Probe socket errors, by reason")
                       .Register(ctx.metrics);
    m_sent_ = counter("netdiag_agent_probes_sent_total", "Probes sent");
    m_lost_ = counter("netdiag_agent_probes_lost_total",
                      "Probes without a reply by their window's end plus the timeout");
    m_err_send_ = TotalCounter{&errors.Add({{"reason", "send"}})};
    m_err_recv_ = TotalCounter{&errors.Add({{"reason", "receive"}})};
    m_err_malformed_ = TotalCounter{&errors.Add({{"reason", "malformed_reply"}})};
    m_err_setup_ = TotalCounter{&errors.Add({{"reason", "setup"}})};
    m_traces_ = counter("netdiag_agent_path_discoveries_total", "Path discoveries finished");
    g_flows_ = &prometheus::BuildGauge()
                    .Name("netdiag_agent_flows")
                    .Help("Probe flows being probed")
                    .Register(ctx.metrics)
                    .Add({});
  }

  ~ProberSource() override { stop(); }

  double interval() const override { return 0; }

  void applyScope(const SourceScope& scope, std::vector<std::string>* problems) override {
    if (!scope.plan) return;
    const v1::AgentPlan& plan = *scope.plan;
    std::map<std::string, FlowPath> paths;
    if (prober_) {
      paths = prober_->paths();
      prober_->stop();
      for (v1::Probe& r : prober_->drain()) held_.push_back(std::move(r));
      past_.add(prober_->stats());
      prober_.reset();
    }
    ProberOptions po;
    po.window_s = plan.window_s() > 0 ? plan.window_s() : 5;
    po.probes_per_second =
        plan.probes_per_second_per_flow() > 0 ? plan.probes_per_second_per_flow() : 1;
    po.responder_port = static_cast<uint16_t>(plan.responder_port());
    po.dscp = static_cast<uint8_t>(std::min<uint32_t>(plan.dscp(), 63));
    po.timeout_s = probe_timeout_;
    po.path_refresh_s = path_refresh_;
    // A re-plan's flows towards a peer address this source address did not
    // probe under the plan it replaces wait for the peer to fetch the plan
    // that admits them (its responder answers only its plan's sources):
    // probed at once, they would be refused and read as loss.
    std::set<std::pair<std::string, std::string>> pairs;
    for (const v1::ProbeFlow& f : plan.flows()) {
      if (had_plan_ && !probed_.count({f.src_addr(), f.dst_addr()})) po.held.insert(flowKey(f));
      pairs.emplace(f.src_addr(), f.dst_addr());
    }
    po.hold_s = hold_s_;
    probed_ = std::move(pairs);
    had_plan_ = true;
    if (!po.held.empty() && problems) {
      problems->push_back(std::to_string(po.held.size()) + " flow(s) of the new plan towards " +
                          "peers not probed before start in " +
                          std::to_string(static_cast<int>(hold_s_)) +
                          " s, once those peers have the plan");
    }
    std::vector<std::string> errors;
    prober_ =
        Prober::start(po, {plan.flows().begin(), plan.flows().end()}, std::move(paths), &errors);
    if (problems) {
      for (size_t i = 0; i < errors.size() && i < 5; ++i)
        problems->push_back("flow skipped: " + errors[i]);
      if (errors.size() > 5)
        problems->push_back("... and " + std::to_string(errors.size() - 5) + " more flows skipped");
    }
    seen_errors_.clear();
    targets_.clear();
    for (const v1::ProbeFlow& f : plan.flows()) targets_.push_back(target(f.src()));
    mutableStats().retain(targets_);
  }

  void collect(double wall_now, v1::Batch& out, std::vector<std::string>*) override {
    const int64_t start = systemClock().monoNs();
    for (v1::Probe& r : held_) *out.add_probes() = std::move(r);
    held_.clear();
    ProbeTotals t = past_;
    uint64_t flows = 0;
    if (prober_) {
      for (v1::Probe& r : prober_->drain()) *out.add_probes() = std::move(r);
      const ProberStats s = prober_->stats();
      t.add(s);
      flows = s.flows;
      const double took = static_cast<double>(systemClock().monoNs() - start) * 1e-9;
      for (const auto& [src, h] : prober_->health()) {
        uint64_t& seen = seen_errors_[src];
        const bool ok = h.failed_flows == 0 && h.errors == seen;
        seen = h.errors;
        mutableStats().record(target(src), ok, took, wall_now);
      }
    } else {
      // No prober (it could not start): every port of the plan is down.
      for (const std::string& port : targets_) mutableStats().record(port, false, 0, wall_now);
    }
    m_sent_.set(static_cast<double>(t.sent));
    m_lost_.set(static_cast<double>(t.lost));
    m_err_send_.set(static_cast<double>(t.send_errors));
    m_err_recv_.set(static_cast<double>(t.receive_errors));
    m_err_malformed_.set(static_cast<double>(t.malformed));
    m_err_setup_.set(static_cast<double>(t.setup_errors));
    m_traces_.set(static_cast<double>(t.traces));
    g_flows_->Set(static_cast<double>(flows));
  }

  void stop() override {
    if (prober_) prober_->stop();
  }

 private:
  // "node:eth0" -> "eth0", like the other sources' targets.
  std::string target(const std::string& src) const {
    const std::string prefix = node_ + ":";
    return src.compare(0, prefix.size(), prefix) == 0 ? src.substr(prefix.size()) : src;
  }

  std::string node_;
  double probe_timeout_, path_refresh_, hold_s_;
  bool had_plan_ = false;
  std::set<std::pair<std::string, std::string>> probed_;  // (src_addr, dst_addr) of the plan
  std::unique_ptr<Prober> prober_;
  std::vector<v1::Probe> held_;                  // of a replaced prober, for the next batch
  ProbeTotals past_;                             // of replaced probers
  std::map<std::string, uint64_t> seen_errors_;  // PortHealth::errors at the last collect
  std::vector<std::string> targets_;             // of the plan
  TotalCounter m_sent_, m_lost_, m_err_send_, m_err_recv_, m_err_malformed_, m_err_setup_,
      m_traces_;
  prometheus::Gauge* g_flows_ = nullptr;
};

}  // namespace

std::unique_ptr<Source> makeProberSource(const AgentSourceContext& context, std::string*) {
  return std::make_unique<ProberSource>(context);
}

}  // namespace netdiag::collector
