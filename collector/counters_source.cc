// The "counters" source: CounterReader (collector/counters.h) polled every
// counters_interval, one target per monitored interface.

#include <memory>

#include <prometheus/counter.h>

#include "collector/agent_sources.h"
#include "collector/counters.h"
#include "collector/total_counter.h"

namespace netdiag::collector {
namespace {

class CountersSource final : public Source {
 public:
  explicit CountersSource(const AgentSourceContext& ctx)
      : Source("counters"),
        sysfs_root_(ctx.config.sysfs_root),
        node_(ctx.config.node),
        interval_(ctx.config.counters_interval),
        errors_{&prometheus::BuildCounter()
                     .Name("netdiag_agent_counter_read_errors_total")
                     .Help("Problems reading port counters")
                     .Register(ctx.metrics)
                     .Add({})} {}

  double interval() const override { return interval_; }

  void applyScope(const SourceScope& scope, std::vector<std::string>*) override {
    if (!reader_) {
      reader_ = std::make_unique<CounterReader>(sysfs_root_, node_, scope.interfaces);
    } else {
      reader_->setInterfaces(scope.interfaces);
    }
    mutableStats().retain(scope.interfaces);
  }

  void collect(double wall_now, v1::Batch& out, std::vector<std::string>* problems) override {
    if (!reader_) return;  // no plan yet
    std::vector<TargetPoll> polls;
    for (v1::PortCounters& c : reader_->read(wall_now, problems, &polls))
      *out.add_ports() = std::move(c);
    for (const TargetPoll& p : polls) mutableStats().record(p.target, p.ok, p.duration_s, wall_now);
    errors_.set(static_cast<double>(reader_->errors()));
  }

 private:
  std::string sysfs_root_, node_;
  double interval_;
  std::unique_ptr<CounterReader> reader_;
  TotalCounter errors_;
};

}  // namespace

std::unique_ptr<Source> makeCountersSource(const AgentSourceContext& context, std::string*) {
  return std::make_unique<CountersSource>(context);
}

}  // namespace netdiag::collector
