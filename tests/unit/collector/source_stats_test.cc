// Per-target source stats, their bound, and how they reach /metrics.

#include "collector/source_stats.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include "collector/source.h"
#include "collector/source_metrics.h"

namespace netdiag::collector {
namespace {

TEST(SourceStats, CountsPollsFailuresAndTheLastSuccess) {
  SourceStats s;
  s.record("eth0", true, 0.002, 1000);
  s.record("eth0", false, 0.5, 1005);
  s.record("eth1", false, 0.1, 1005);
  const auto snap = s.snapshot();
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_EQ(snap.at("eth0").polls, 2u);
  EXPECT_EQ(snap.at("eth0").failures, 1u);
  EXPECT_DOUBLE_EQ(snap.at("eth0").last_duration_s, 0.5);
  EXPECT_DOUBLE_EQ(snap.at("eth0").last_success, 1000);  // the failure did not move it
  EXPECT_EQ(snap.at("eth1").failures, 1u);
  EXPECT_DOUBLE_EQ(snap.at("eth1").last_success, 0);  // never
}

TEST(SourceStats, TargetsPastTheBoundShareOneEntry) {
  SourceStats s(3);
  for (int i = 0; i < 10; ++i) s.record("sw" + std::to_string(i), i % 2 == 0, 0.01, 100);
  s.record("sw1", true, 0.01, 100);  // a named target stays named
  const auto snap = s.snapshot();
  ASSERT_EQ(snap.size(), 4u);
  EXPECT_EQ(snap.count("sw0") + snap.count("sw1") + snap.count("sw2"), 3u);
  EXPECT_EQ(snap.at("sw1").polls, 2u);
  EXPECT_EQ(snap.at(SourceStats::kOtherTarget).polls, 7u);
  EXPECT_EQ(snap.at(SourceStats::kOtherTarget).failures, 4u);  // sw3, sw5, sw7, sw9
}

TEST(SourceStats, RetainForgetsTargetsNoLongerServed) {
  SourceStats s;
  s.record("eth0", true, 0, 1);
  s.record("eth1", true, 0, 1);
  s.retain({"eth1", "eth2"});
  const auto snap = s.snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap.count("eth1"), 1u);
}

TEST(TargetPollTimer, RecordsWhenTheIterationEndsHoweverItEnds) {
  std::vector<TargetPoll> polls;
  uint64_t failures = 0;
  for (const char* t : {"a", "b", "c"}) {
    const TargetPollTimer timer(&polls, t, [&, before = failures] { return failures == before; });
    if (std::string(t) == "b") {
      ++failures;
      continue;
    }
  }
  ASSERT_EQ(polls.size(), 3u);
  EXPECT_TRUE(polls[0].ok);
  EXPECT_FALSE(polls[1].ok);
  EXPECT_EQ(polls[1].target, "b");
  EXPECT_TRUE(polls[2].ok);
  for (const TargetPoll& p : polls) EXPECT_GE(p.duration_s, 0);
  {
    const TargetPollTimer ignored(nullptr, "x", [] { return true; });
  }  // no sink: no-op
}

// A source whose stats the test writes directly.
class StubSource final : public Source {
 public:
  explicit StubSource(std::string name) : Source(std::move(name)) {}
  double interval() const override { return 1; }
  void applyScope(const SourceScope&, std::vector<std::string>*) override {}
  void collect(double, v1::Batch&, std::vector<std::string>*) override {}
  SourceStats& writable() { return mutableStats(); }
};

// The value of `name`{source, target}, or nullopt when there is no such series.
std::optional<double> valueOf(prometheus::Registry& registry, const std::string& name,
                              const std::string& source, const std::string& target) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& l : m.label) labels[l.name] = l.value;
      if (labels["source"] != source || labels["target"] != target) continue;
      return family.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return std::nullopt;
}

TEST(SourceMetrics, ExportsEveryTargetOfEverySourceAndDropsTargetsThatLeft) {
  prometheus::Registry registry;
  SourceMetrics metrics(registry, "netdiag_agent");
  StubSource counters("counters"), prober("prober");
  counters.writable().record("eth0", true, 0.25, 1700000000);
  counters.writable().record("eth1", false, 0.5, 1700000000);
  prober.writable().record("eth0", true, 0.001, 1700000001);
  metrics.update({&counters, &prober});
  const std::string p = "netdiag_agent_source_";
  EXPECT_EQ(valueOf(registry, p + "polls_total", "counters", "eth0"), 1);
  EXPECT_EQ(valueOf(registry, p + "poll_failures_total", "counters", "eth0"), 0);
  EXPECT_EQ(valueOf(registry, p + "poll_failures_total", "counters", "eth1"), 1);
  EXPECT_EQ(valueOf(registry, p + "poll_duration_seconds", "counters", "eth1"), 0.5);
  EXPECT_EQ(valueOf(registry, p + "last_success_timestamp_seconds", "counters", "eth0"),
            1700000000);
  EXPECT_EQ(valueOf(registry, p + "last_success_timestamp_seconds", "counters", "eth1"), 0);
  EXPECT_EQ(valueOf(registry, p + "polls_total", "prober", "eth0"), 1);

  // Counters advance by what the stats grew; a target gone loses its series.
  counters.writable().record("eth0", false, 0.1, 1700000005);
  counters.writable().record("eth0", true, 0.1, 1700000010);
  counters.writable().retain({"eth0"});
  metrics.update({&counters, &prober});
  EXPECT_EQ(valueOf(registry, p + "polls_total", "counters", "eth0"), 3);
  EXPECT_EQ(valueOf(registry, p + "poll_failures_total", "counters", "eth0"), 1);
  EXPECT_EQ(valueOf(registry, p + "last_success_timestamp_seconds", "counters", "eth0"),
            1700000010);
  EXPECT_FALSE(valueOf(registry, p + "polls_total", "counters", "eth1"));
  EXPECT_FALSE(valueOf(registry, p + "poll_duration_seconds", "counters", "eth1"));
}

}  // namespace
}  // namespace netdiag::collector
