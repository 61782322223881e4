// The analyzer's metrics from a real engine: a small leaf-spine fabric with
// one lossy directed link is fed to an Engine, update() runs after every
// window, and the registry is serialized with the Prometheus text format to
// check names, labels and values; the fault's series disappear once the
// incident resolves; `promtool check metrics` accepts the text when promtool
// is installed.

#include "exporter/analyzer_metrics.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include "tests/unit/analyzer/analyzer_test_util.h"

namespace netdiag::exporter {
namespace {

using analyzer::testing::Fabric;
using analyzer::testing::Mesh;
using analyzer::testing::Record;
using analyzer::testing::windows;

// One sample of the text format: name, labels, value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<Sample> parse(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      size_t end = line.find('}', i);
      std::string body = line.substr(i + 1, end - i - 1);
      size_t pos = 0;
      while (pos < body.size()) {
        size_t eq = body.find('=', pos);
        size_t q2 = body.find('"', eq + 2);
        s.labels[body.substr(pos, eq - pos)] = body.substr(eq + 2, q2 - eq - 2);
        pos = q2 + 1;
        if (pos < body.size() && body[pos] == ',') ++pos;
      }
      i = end + 1;
    }
    s.value = std::stod(line.substr(i + 1));
    out.push_back(s);
  }
  return out;
}

std::vector<Sample> find(const std::vector<Sample>& all, const std::string& name,
                         const std::map<std::string, std::string>& labels = {}) {
  std::vector<Sample> out;
  for (const Sample& s : all) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      match = match && it != s.labels.end() && it->second == v;
    }
    if (match) out.push_back(s);
  }
  return out;
}

std::optional<double> value(const std::vector<Sample>& all, const std::string& name,
                            const std::map<std::string, std::string>& labels = {}) {
  auto found = find(all, name, labels);
  if (found.size() != 1) return std::nullopt;
  return found[0].value;
}

// Updates `metrics` from the engine's state, as the live analyzer does from
// the snapshot a pass publishes.
void updateFrom(AnalyzerMetrics& metrics, const topology::Topology& topo,
                const analyzer::Engine& engine, const IngestCounters& ingest,
                const std::vector<AgentStatus>& agents, double now) {
  const analyzer::Report report = engine.report();
  std::vector<analyzer::LinkEvidence> evidence;
  for (topology::DirLinkId d = 0; d < topo.dirLinkCount(); ++d) {
    evidence.push_back(engine.linkEvidence(d));
  }
  const analyzer::IngestStats stats = engine.stats();
  metrics.update({report, evidence, stats, engine.backgroundLoss()}, ingest, agents, now);
}

const std::map<std::string, std::string> kBadLink = {{"device", "leaf1"},
                                                     {"interface", "swp3"},
                                                     {"neighbor_device", "spine1"},
                                                     {"neighbor_interface", "swp1"}};

class AnalyzerMetricsTest : public ::testing::Test {
 protected:
  Fabric fabric;
  Mesh mesh{fabric};
  analyzer::Engine engine{fabric.t};
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  AnalyzerMetrics metrics{registry, fabric.t,
                          MetricsOptions{.top_degraded = 3, .coverage_min_probes = 100}};
  IngestCounters ingest;
  std::vector<AgentStatus> agents = {{"host0", 0, true, 0, 0}, {"host1", 0, true, 0, 0}};
  double wall_offset = 1.7e9;  // telemetry times are shifted onto a Unix clock

  // Feeds windows (from, to] and updates the metrics after each one, as the
  // daemon does after each pass.
  void run(double from, double to) {
    for (double t : windows(from, to)) {
      std::vector<Record> records;
      mesh.window(t + wall_offset, records);
      analyzer::testing::feed(engine, records);
      ingest.batches += 2;
      ingest.probes += records.size();
      for (auto& a : agents) {
        a.last_seen = t + wall_offset;
        a.batches += 1;
        a.records += records.size() / agents.size();
      }
      updateFrom(metrics, fabric.t, engine, ingest, agents, t + wall_offset + 2);
    }
  }

  std::string text() const { return prometheus::TextSerializer().Serialize(registry->Collect()); }
};

// Drain plans are kept between updates, and made again once the links down
// change: leaf1's other uplink reported down leaves the lossy one unsafe to
// drain.
TEST_F(AnalyzerMetricsTest, DrainAdviceFollowsTheLinksDown) {
  mesh.loss[fabric.dl("leaf1:swp3->spine1:swp1")] = 0.05;
  run(0, 300);
  const std::map<std::string, std::string> bad = {{"device", "leaf1"},
                                                  {"interface", "swp3"},
                                                  {"neighbor_device", "spine1"},
                                                  {"neighbor_interface", "swp1"}};
  auto s = parse(text());
  ASSERT_EQ(value(s, "netdiag_link_drain_safe", bad), 1.0) << text();
  run(300, 310);  // the same plan again, from the kept one
  s = parse(text());
  EXPECT_EQ(value(s, "netdiag_link_drain_safe", bad), 1.0);
  EXPECT_EQ(value(s, "netdiag_link_drain_ecmp_width_remaining", bad), 1.0);

  const auto other = fabric.t.findPort("leaf1:swp4");
  ASSERT_TRUE(other);
  analyzer::testing::Counters down;
  down.up = false;
  engine.onPort(analyzer::testing::portRecord(311 + wall_offset, *other, down));
  run(310, 330);
  s = parse(text());
  ASSERT_EQ(value(s, "netdiag_open_incidents", {{"kind", "link_down"}, {"state", "localized"}}),
            1.0)
      << text();
  EXPECT_EQ(value(s, "netdiag_link_drain_safe", bad), 0.0) << text();
  EXPECT_EQ(value(s, "netdiag_link_drain_ecmp_width_remaining", bad), 0.0);
}

// A fault netdiag's drain mitigated stops paging: its netdiag_link_fault
// series goes and netdiag_link_fault_mitigated takes its labels, while the
// incident stays open (its link is out, no probe says it is repaired).
TEST_F(AnalyzerMetricsTest, AMitigatedFaultMovesToTheMitigatedSeries) {
  const topology::DirLinkId bad = fabric.dl("leaf1:swp3->spine1:swp1");
  mesh.loss[bad] = 0.05;
  run(0, 300);
  auto s = parse(text());
  auto faults = find(s, "netdiag_link_fault", kBadLink);
  ASSERT_EQ(faults.size(), 1u) << text();
  const std::string incident = faults[0].labels["incident"];
  EXPECT_TRUE(find(s, "netdiag_link_fault_mitigated").empty());

  analyzer::DrainState drains;
  drains.out = {topology::Topology::linkOf(bad)};
  drains.mitigated = {{incident, 300 + wall_offset}};
  engine.setDrained(drains);
  mesh.loss.clear();
  run(300, 320);
  s = parse(text());
  EXPECT_TRUE(find(s, "netdiag_link_fault").empty()) << text();
  auto mitigated = find(s, "netdiag_link_fault_mitigated", kBadLink);
  ASSERT_EQ(mitigated.size(), 1u) << text();
  EXPECT_EQ(mitigated[0].labels["incident"], incident);
  EXPECT_EQ(mitigated[0].labels["kind"], "link_loss");
  EXPECT_EQ(mitigated[0].value, 1);
}

TEST_F(AnalyzerMetricsTest, LocalizedLinkFaultHasItsLinkLabelsAndGoesAwayWhenResolved) {
  mesh.loss[fabric.dl("leaf1:swp3->spine1:swp1")] = 0.05;
  run(0, 300);
  const std::string during = text();
  auto s = parse(during);

  // The fault, named by its directed link.
  auto faults = find(s, "netdiag_link_fault");
  ASSERT_EQ(faults.size(), 1u) << during;
  for (const auto& [k, v] : kBadLink) EXPECT_EQ(faults[0].labels[k], v) << k;
  EXPECT_EQ(faults[0].labels["kind"], "link_loss");
  EXPECT_EQ(faults[0].labels["incident"].rfind("inc-", 0), 0u);
  EXPECT_EQ(faults[0].value, 1);
  const std::string incident = faults[0].labels["incident"];

  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(kBadLink.begin(), kBadLink.end());
    return extra;
  };
  auto loss = value(s, "netdiag_suspect_link_loss_ratio",
                    with({{"incident", incident}, {"state", "localized"}}));
  ASSERT_TRUE(loss) << during;
  EXPECT_NEAR(*loss, 0.05, 0.03);
  auto conf = value(s, "netdiag_suspect_link_confidence", with({{"incident", incident}}));
  ASSERT_TRUE(conf);
  EXPECT_GE(*conf, 0.99);
  EXPECT_LE(*conf, 1.0);

  // Open incidents by kind and state: one localized link_loss, zeros elsewhere.
  EXPECT_EQ(value(s, "netdiag_open_incidents", {{"kind", "link_loss"}, {"state", "localized"}}),
            1.0);
  EXPECT_EQ(value(s, "netdiag_open_incidents", {{"kind", "link_down"}, {"state", "localized"}}),
            0.0);
  EXPECT_EQ(value(s, "netdiag_open_incidents", {{"kind", "host_unreachable"}, {"state", "open"}}),
            0.0);

  // Health by tier and pod: 8 host-leaf and 8 leaf-spine links, one affected.
  EXPECT_EQ(value(s, "netdiag_fabric_links", {{"tier", "leaf-spine"}, {"pod", "none"}}), 8.0);
  EXPECT_EQ(value(s, "netdiag_fabric_links", {{"tier", "host-leaf"}, {"pod", "none"}}), 8.0);
  EXPECT_EQ(value(s, "netdiag_fabric_links_affected",
                  {{"tier", "leaf-spine"}, {"pod", "none"}, {"state", "localized"}}),
            1.0);
  EXPECT_EQ(value(s, "netdiag_fabric_links_affected",
                  {{"tier", "host-leaf"}, {"pod", "none"}, {"state", "localized"}}),
            0.0);

  // Drain advice: leaf1 keeps 1 of its 2 uplinks and strands no host.
  EXPECT_EQ(value(s, "netdiag_link_drain_safe", kBadLink), 1.0);
  EXPECT_EQ(value(s, "netdiag_link_drain_ecmp_width", kBadLink), 2.0);
  EXPECT_EQ(value(s, "netdiag_link_drain_ecmp_width_remaining", kBadLink), 1.0);
  auto info = find(s, "netdiag_link_drain_info", kBadLink);
  ASSERT_EQ(info.size(), 1u);
  EXPECT_EQ(info[0].labels["advice"],
            "safe: leaf1 keeps 1 of 2 uplinks to the spine tier; no host loses all its paths");

  // Degraded links: bounded by top_degraded, and the bad link ranks first.
  auto degraded = find(s, "netdiag_degraded_link_loss_ratio");
  EXPECT_GE(degraded.size(), 1u);
  EXPECT_LE(degraded.size(), 3u);
  auto bad_ratio = value(s, "netdiag_degraded_link_loss_ratio", kBadLink);
  ASSERT_TRUE(bad_ratio) << during;
  for (const Sample& d : degraded) EXPECT_LE(d.value, *bad_ratio);
  auto excess = value(s, "netdiag_degraded_link_excess_loss_ratio", kBadLink);
  ASSERT_TRUE(excess);
  EXPECT_NEAR(*excess, *bad_ratio - *value(s, "netdiag_background_loss_ratio"), 1e-9);
  EXPECT_GT(*value(s, "netdiag_degraded_link_probes", kBadLink), 100);

  // Coverage: every directed link of this full mesh carries known paths.
  EXPECT_EQ(value(s, "netdiag_directed_links"), static_cast<double>(fabric.t.dirLinkCount()));
  EXPECT_EQ(value(s, "netdiag_probe_coverage_ratio"), 1.0);
  EXPECT_EQ(value(s, "netdiag_probe_coverage_min_probes"), 100.0);

  // Ingest counters follow the cumulative counts.
  EXPECT_EQ(value(s, "netdiag_ingest_records_total", {{"kind", "probe"}}),
            static_cast<double>(ingest.probes));
  EXPECT_EQ(value(s, "netdiag_ingest_batches_total"), static_cast<double>(ingest.batches));
  EXPECT_EQ(value(s, "netdiag_ingest_records_total", {{"kind", "lldp"}}), 0.0);
  EXPECT_EQ(value(s, "netdiag_engine_passes_total"), static_cast<double>(engine.stats().passes));
  // What the passes cost in wall time: the sum, and the newest one's start
  // and length (readers tell from these whether they overlapped a pass).
  ASSERT_GT(engine.stats().passes, 0u);
  EXPECT_NEAR(value(s, "netdiag_engine_pass_seconds_total").value_or(-1),
              engine.stats().pass_seconds, 1e-9);
  EXPECT_GT(value(s, "netdiag_engine_pass_seconds_total"), 0.0);
  EXPECT_NEAR(value(s, "netdiag_engine_last_pass_duration_seconds").value_or(-1),
              engine.stats().last_pass_seconds, 1e-9);
  EXPECT_LE(value(s, "netdiag_engine_last_pass_duration_seconds"),
            value(s, "netdiag_engine_pass_seconds_total"));
  // Unix time (the test's fabric runs on its own clock, the pass on the wall's).
  EXPECT_GT(value(s, "netdiag_engine_last_pass_start_timestamp_seconds"), 1.6e9);
  // Every pass is in the histogram once, in the bucket of its length.
  const double passes = static_cast<double>(engine.stats().passes);
  EXPECT_EQ(value(s, "netdiag_engine_pass_duration_seconds_count"), passes);
  EXPECT_EQ(value(s, "netdiag_engine_pass_duration_seconds_bucket", {{"le", "+Inf"}}), passes);
  EXPECT_NEAR(value(s, "netdiag_engine_pass_duration_seconds_sum").value_or(-1),
              engine.stats().pass_seconds, 1e-9);
  double below = 0;
  for (const Sample& b : find(s, "netdiag_engine_pass_duration_seconds_bucket")) {
    if (b.labels.at("le") == "+Inf") continue;
    if (std::stod(b.labels.at("le")) >= engine.stats().last_pass_seconds) {
      EXPECT_GE(b.value, 1.0) << "le=" << b.labels.at("le");
    }
    below = std::max(below, b.value);
  }
  EXPECT_LE(below, passes);

  // Agents.
  EXPECT_EQ(value(s, "netdiag_agent_connected", {{"agent", "host0"}}), 1.0);
  EXPECT_EQ(value(s, "netdiag_agent_last_seen_timestamp_seconds", {{"agent", "host1"}}),
            300 + wall_offset);
  EXPECT_EQ(value(s, "netdiag_agents", {{"state", "connected"}}), 2.0);

  // Delays: one detection and one localization observed, in telemetry seconds.
  EXPECT_GE(value(s, "netdiag_incident_localize_delay_seconds_count"), 1.0);
  EXPECT_GE(value(s, "netdiag_incident_detect_delay_seconds_count"), 1.0);
  EXPECT_LE(*value(s, "netdiag_incident_localize_delay_seconds_sum"), 120.0);
  EXPECT_EQ(value(s, "netdiag_analyzer_up"), 1.0);

  // The fault ends and an agent leaves: their series go away.
  mesh.loss.clear();
  agents.pop_back();
  agents[0].connected = false;
  run(300, 700);  // the horizon (180 s) empties, then resolve_after (60 s)
  const std::string after = text();
  auto a = parse(after);
  EXPECT_TRUE(find(a, "netdiag_link_fault").empty()) << after;
  EXPECT_TRUE(find(a, "netdiag_suspect_link_loss_ratio", {{"incident", incident}}).empty());
  EXPECT_TRUE(find(a, "netdiag_link_drain_safe").empty());
  EXPECT_TRUE(find(a, "netdiag_link_drain_info").empty());
  EXPECT_EQ(value(a, "netdiag_open_incidents", {{"kind", "link_loss"}, {"state", "localized"}}),
            0.0);
  EXPECT_EQ(value(a, "netdiag_fabric_links_affected",
                  {{"tier", "leaf-spine"}, {"pod", "none"}, {"state", "localized"}}),
            0.0);
  for (const char* name : {"netdiag_agent_connected", "netdiag_agent_last_seen_timestamp_seconds",
                           "netdiag_agent_batches", "netdiag_agent_records"}) {
    EXPECT_TRUE(find(a, name, {{"agent", "host1"}}).empty()) << name;
  }
  EXPECT_TRUE(find(a, "netdiag_agent_rejected_records", {{"agent", "host1"}, {"reason", "future"}})
                  .empty());
  EXPECT_EQ(value(a, "netdiag_agent_rejected_records", {{"agent", "host0"}, {"reason", "future"}}),
            0.0);
  EXPECT_EQ(value(a, "netdiag_agent_connected", {{"agent", "host0"}}), 0.0);
  EXPECT_EQ(value(a, "netdiag_agents", {{"state", "disconnected"}}), 1.0);
  // The histograms keep what they observed.
  EXPECT_GE(value(a, "netdiag_incident_localize_delay_seconds_count"), 1.0);
}

TEST_F(AnalyzerMetricsTest, CountersSurviveASourceRestartAndNeverGoDown) {
  mesh.loss.clear();
  run(0, 20);
  auto before = value(parse(text()), "netdiag_ingest_records_total", {{"kind", "probe"}});
  ASSERT_TRUE(before);
  ingest = IngestCounters{};  // the daemon's counts restarted
  ingest.probes = 7;
  ingest.malformed = 3;
  updateFrom(metrics, fabric.t, engine, ingest, agents, wall_offset + 30);
  auto s = parse(text());
  EXPECT_EQ(value(s, "netdiag_ingest_records_total", {{"kind", "probe"}}), *before + 7);
  EXPECT_EQ(value(s, "netdiag_ingest_malformed_records_total"), 3.0);
}

TEST_F(AnalyzerMetricsTest, NoDegradedSeriesWhenDisabledAndNoLinkSeriesOnACleanFabric) {
  run(0, 100);
  auto s = parse(text());
  EXPECT_TRUE(find(s, "netdiag_link_fault").empty());
  EXPECT_TRUE(find(s, "netdiag_suspect_link_loss_ratio").empty());
  // A clean fabric has no link losing more than background.
  EXPECT_TRUE(find(s, "netdiag_degraded_link_loss_ratio").empty());
  // Cardinality: a fixed number of series, whatever the fabric's size.
  EXPECT_LT(s.size(), 120u) << text();

  auto reg = std::make_shared<prometheus::Registry>();
  AnalyzerMetrics off(reg, fabric.t, MetricsOptions{.top_degraded = 0});
  mesh.loss[fabric.dl("leaf1:swp3->spine1:swp1")] = 0.05;
  run(100, 200);
  updateFrom(off, fabric.t, engine, ingest, agents, wall_offset + 200);
  auto o = parse(prometheus::TextSerializer().Serialize(reg->Collect()));
  EXPECT_TRUE(find(o, "netdiag_degraded_link_loss_ratio").empty());
}

TEST_F(AnalyzerMetricsTest, PromtoolAcceptsTheExposition) {
  if (!std::filesystem::exists("/usr/bin/promtool")) GTEST_SKIP() << "promtool not installed";
  mesh.loss[fabric.dl("leaf1:swp3->spine1:swp1")] = 0.05;
  run(0, 300);
  auto dir =
      std::filesystem::temp_directory_path() / ("netdiag-metrics-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "metrics.txt";
  std::ofstream(file) << text();
  const std::string cmd = "/usr/bin/promtool check metrics < " + file.string() + " > " +
                          (dir / "out.txt").string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream out(dir / "out.txt");
  std::string msg((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(rc, 0) << msg;
  EXPECT_EQ(msg, "") << "promtool lint findings";
}

}  // namespace
}  // namespace netdiag::exporter

namespace netdiag::exporter {
namespace {

// An access link of a single-NIC host, lossy, seen by round trips only (no
// one-way counts to tell its direction from the host's): an ambiguity group
// {link, host}. No netdiag_link_fault; the incident's state
// is "ambiguous" and each member has a netdiag_incident_candidate series.
TEST_F(AnalyzerMetricsTest, AnAmbiguityGroupExportsItsMembersAndNoFault) {
  const topology::DirLinkId bad = fabric.dl("leaf2:swp1->host3:eth0");
  mesh.loss[bad] = 0.04;
  mesh.one_way = false;
  mesh.path_known = [](topology::PortId, topology::PortId, size_t) { return false; };
  run(0, 200);
  auto all = parse(text());
  EXPECT_TRUE(find(all, "netdiag_link_fault").empty());
  EXPECT_FALSE(find(all, "netdiag_suspect_link_confidence", {{"state", "ambiguous"}}).empty());
  auto members = find(all, "netdiag_incident_candidate");
  std::set<std::string> names;
  for (const Sample& s : members) names.insert(s.labels.at("candidate"));
  EXPECT_TRUE(names.contains("leaf2:swp1->host3:eth0")) << text();
  EXPECT_TRUE(names.contains("host3")) << text();
}

}  // namespace
}  // namespace netdiag::exporter
