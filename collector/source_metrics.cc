#include "collector/source_metrics.h"

namespace netdiag::collector {
namespace {

// A counter fed from a running total that may restart (a target that left
// and came back): then the whole new total is new.
void advance(prometheus::Counter* c, uint64_t exported, uint64_t total) {
  c->Increment(static_cast<double>(total >= exported ? total - exported : total));
}

}  // namespace

SourceMetrics::SourceMetrics(prometheus::Registry& registry, const std::string& prefix)
    : polls_(prometheus::BuildCounter()
                 .Name(prefix + "_source_polls_total")
                 .Help("Polls of a source's target (continuous sources: one per batch)")
                 .Register(registry)),
      failures_(prometheus::BuildCounter()
                    .Name(prefix + "_source_poll_failures_total")
                    .Help("Polls of a source's target that failed")
                    .Register(registry)),
      duration_(prometheus::BuildGauge()
                    .Name(prefix + "_source_poll_duration_seconds")
                    .Help("How long the last poll of a source's target took")
                    .Register(registry)),
      last_success_(
          prometheus::BuildGauge()
              .Name(prefix + "_source_last_success_timestamp_seconds")
              .Help("Unix time of the last successful poll of a source's target (0: none)")
              .Register(registry)) {}

void SourceMetrics::update(const std::vector<const Source*>& sources) {
  std::map<std::pair<std::string, std::string>, Series> next;
  for (const Source* source : sources) {
    for (const auto& [target, stats] : source->stats().snapshot()) {
      const auto key = std::make_pair(source->name(), target);
      Series s;
      if (auto it = series_.find(key); it != series_.end()) {
        s = it->second;
        series_.erase(it);
      } else {
        const prometheus::Labels labels{{"source", source->name()}, {"target", target}};
        s.polls = &polls_.Add(labels);
        s.failures = &failures_.Add(labels);
        s.duration = &duration_.Add(labels);
        s.last_success = &last_success_.Add(labels);
      }
      advance(s.polls, s.exported.polls, stats.polls);
      advance(s.failures, s.exported.failures, stats.failures);
      s.duration->Set(stats.last_duration_s);
      s.last_success->Set(stats.last_success);
      s.exported = stats;
      next.emplace(key, s);
    }
  }
  for (auto& [key, s] : series_) {  // targets gone
    polls_.Remove(s.polls);
    failures_.Remove(s.failures);
    duration_.Remove(s.duration);
    last_success_.Remove(s.last_success);
  }
  series_ = std::move(next);
}

}  // namespace netdiag::collector
