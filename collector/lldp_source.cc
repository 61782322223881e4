// The "lldp" source: LldpCapture (collector/lldp.h) drained before every
// batch, one target per monitored interface. With `lldp: false` it is there
// (its metrics too) but captures nothing.

#include <memory>

#include <prometheus/counter.h>

#include "collector/agent_sources.h"
#include "collector/lldp.h"
#include "collector/total_counter.h"

namespace netdiag::collector {
namespace {

class LldpSource final : public Source {
 public:
  explicit LldpSource(const AgentSourceContext& ctx)
      : Source("lldp"),
        node_(ctx.config.node),
        enabled_(ctx.config.lldp),
        frames_{&prometheus::BuildCounter()
                     .Name("netdiag_agent_lldp_frames_total")
                     .Help("LLDP frames decoded")
                     .Register(ctx.metrics)
                     .Add({})} {}

  double interval() const override { return 0; }

  void applyScope(const SourceScope& scope, std::vector<std::string>* problems) override {
    if (!enabled_) return;
    if (!capture_) {
      std::string err;
      capture_ = std::make_unique<LldpCapture>(node_, scope.interfaces, &err);
      if (!err.empty() && problems) problems->push_back("LLDP capture (needs CAP_NET_RAW): " + err);
    } else {
      capture_->setInterfaces(scope.interfaces);
    }
    mutableStats().retain(scope.interfaces);
  }

  void collect(double wall_now, v1::Batch& out, std::vector<std::string>* problems) override {
    if (!capture_) return;
    std::vector<TargetPoll> polls;
    for (v1::LldpNeighbor& n : capture_->poll(wall_now, problems, &polls))
      *out.add_lldp() = std::move(n);
    for (const TargetPoll& p : polls) mutableStats().record(p.target, p.ok, p.duration_s, wall_now);
    frames_.set(static_cast<double>(capture_->frames()));
  }

 private:
  std::string node_;
  bool enabled_;
  std::unique_ptr<LldpCapture> capture_;
  TotalCounter frames_;
};

}  // namespace

std::unique_ptr<Source> makeLldpSource(const AgentSourceContext& context, std::string*) {
  return std::make_unique<LldpSource>(context);
}

}  // namespace netdiag::collector
