// The agent's sources through the registry, as the agent creates them:
// counters over a fake sysfs tree, LLDP on an interface that is not there,
// the prober over real loopback sockets.

#include "collector/agent_sources.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <sys/resource.h>
#include <unistd.h>

#include "collector/responder.h"
#include "tests/unit/collector/free_port.h"

namespace netdiag::collector {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "netdiag-sources-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  void write(const std::string& rel, const std::string& content) const {
    const fs::path p = fs::path(path_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }

 private:
  std::string path_;
};

// An interface of a fake sysfs tree with every standard file.
void addInterface(const TempDir& sys, const std::string& ifname) {
  const std::string d = "class/net/" + ifname + "/";
  sys.write(d + "operstate", "up\n");
  sys.write(d + "carrier_changes", "2\n");
  for (const char* f :
       {"rx_packets", "tx_packets", "rx_errors", "rx_crc_errors", "rx_dropped", "tx_dropped"})
    sys.write(d + "statistics/" + f, "7\n");
}

std::unique_ptr<Source> create(const std::string& name, const AgentSourceContext& ctx) {
  AgentSourceRegistry registry;
  registerAgentSources(registry);
  const auto* factory = registry.find(name);
  EXPECT_NE(factory, nullptr) << name;
  if (!factory) return nullptr;
  std::string error;
  auto source = (*factory)(ctx, &error);
  EXPECT_NE(source, nullptr) << error;
  if (source) {
    EXPECT_EQ(source->name(), name);
  }
  return source;
}

TEST(AgentSources, RegistersCountersLldpAndProberInTheOrderTheyRun) {
  AgentSourceRegistry registry;
  registerAgentSources(registry);
  EXPECT_EQ(registry.names(), (std::vector<std::string>{"counters", "lldp", "prober"}));
  EXPECT_FALSE(registry.add("lldp", makeLldpSource)) << "a name is registered once";
  EXPECT_EQ(registry.find("snmp"), nullptr);
}

TEST(AgentSources, CountersArePolledPerInterfaceAndAMissingOneFails) {
  TempDir sys;
  addInterface(sys, "nd-a0");
  AgentConfig cfg;
  cfg.node = "h1";
  cfg.sysfs_root = sys.path();
  cfg.counters_interval = 3;
  prometheus::Registry metrics;
  auto source = create("counters", {cfg, metrics});
  ASSERT_NE(source, nullptr);
  EXPECT_DOUBLE_EQ(source->interval(), 3);

  v1::Batch batch;
  std::vector<std::string> problems;
  source->collect(1000, batch, &problems);  // before a plan: nothing to read
  EXPECT_EQ(batch.ports_size(), 0);
  EXPECT_TRUE(source->stats().snapshot().empty());

  source->applyScope({{"nd-a0", "nd-b0"}, nullptr}, &problems);
  source->collect(1005, batch, &problems);
  ASSERT_EQ(batch.ports_size(), 1);
  EXPECT_EQ(batch.ports(0).port(), "h1:nd-a0");
  EXPECT_DOUBLE_EQ(batch.ports(0).t(), 1005);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("nd-b0"), std::string::npos) << problems[0];
  const auto stats = source->stats().snapshot();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats.at("nd-a0").polls, 1u);
  EXPECT_EQ(stats.at("nd-a0").failures, 0u);
  EXPECT_DOUBLE_EQ(stats.at("nd-a0").last_success, 1005);
  EXPECT_EQ(stats.at("nd-b0").failures, 1u);
  EXPECT_DOUBLE_EQ(stats.at("nd-b0").last_success, 0);

  // The interface leaves the plan: its stats go with it.
  source->applyScope({{"nd-a0"}, nullptr}, &problems);
  EXPECT_EQ(source->stats().snapshot().count("nd-b0"), 0u);
}

TEST(AgentSources, LldpCountsAnInterfaceItCannotCaptureAsFailing) {
  AgentConfig cfg;
  cfg.node = "h1";
  prometheus::Registry metrics;
  auto source = create("lldp", {cfg, metrics});
  ASSERT_NE(source, nullptr);
  EXPECT_DOUBLE_EQ(source->interval(), 0);  // drained at every batch
  std::vector<std::string> problems;
  source->applyScope({{"nd-absent0"}, nullptr}, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("LLDP capture (needs CAP_NET_RAW): ", 0), 0u) << problems[0];
  v1::Batch batch;
  source->collect(2000, batch, &problems);
  source->collect(2001, batch, &problems);
  const auto stats = source->stats().snapshot();
  ASSERT_EQ(stats.count("nd-absent0"), 1u);
  EXPECT_EQ(stats.at("nd-absent0").polls, 2u);
  EXPECT_EQ(stats.at("nd-absent0").failures, 2u);
  EXPECT_EQ(batch.lldp_size(), 0);
}

TEST(AgentSources, LldpOffCapturesNothing) {
  AgentConfig cfg;
  cfg.node = "h1";
  cfg.lldp = false;
  prometheus::Registry metrics;
  auto source = create("lldp", {cfg, metrics});
  ASSERT_NE(source, nullptr);
  std::vector<std::string> problems;
  source->applyScope({{"nd-absent0"}, nullptr}, &problems);
  v1::Batch batch;
  source->collect(2000, batch, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_TRUE(source->stats().snapshot().empty());
}

v1::ProbeFlow flow(const std::string& src, const std::string& src_addr, uint16_t sport) {
  v1::ProbeFlow f;
  f.set_src(src);
  f.set_src_addr(src_addr);
  f.set_dst("h2:eth0");
  f.set_dst_addr("127.0.0.1");
  f.set_source_port(sport);
  return f;
}

TEST(AgentSources, ProberRunsThePlanAndFailsThePortWhoseFlowCannotBeSetUp) {
  ResponderOptions ro;
  ro.address = "127.0.0.1";
  ro.port = 0;
  std::string err;
  auto responder = Responder::start(ro, &err);
  ASSERT_NE(responder, nullptr) << err;

  AgentConfig cfg;
  cfg.node = "h1";
  cfg.probe_timeout = 2;
  prometheus::Registry metrics;
  auto source = create("prober", {cfg, metrics});
  ASSERT_NE(source, nullptr);
  v1::AgentPlan plan;
  plan.set_version(1);
  plan.set_window_s(0.2);
  plan.set_probes_per_second_per_flow(50);
  plan.set_responder_port(responder->port());
  *plan.add_flows() = flow("h1:eth0", "127.0.0.1", testing::freePort());
  *plan.add_flows() = flow("h1:eth1", "192.0.2.1", testing::freePort());  // not ours: bind fails
  std::vector<std::string> problems;
  source->applyScope({{}, &plan}, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("flow skipped: ", 0), 0u) << problems[0];
  EXPECT_NE(problems[0].find("192.0.2.1"), std::string::npos) << problems[0];

  // Batches until the first window of eth0's flow comes out, answered.
  v1::Batch batch;
  const auto t0 = std::chrono::steady_clock::now();
  double wall = 3000;
  while (batch.probes_size() == 0 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    source->collect(++wall, batch, &problems);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GT(batch.probes_size(), 0);
  EXPECT_EQ(batch.probes(0).src(), "h1:eth0");
  EXPECT_GT(batch.probes(0).sent(), 0u);
  const auto stats = source->stats().snapshot();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_GT(stats.at("eth0").polls, 0u);
  EXPECT_EQ(stats.at("eth0").failures, 0u);
  EXPECT_EQ(stats.at("eth1").failures, stats.at("eth1").polls);
  EXPECT_DOUBLE_EQ(stats.at("eth1").last_success, 0);

  // Its own metrics: flows probing, and the flow not set up as an error.
  bool saw_flows = false, saw_setup = false;
  for (const auto& family : metrics.Collect()) {
    if (family.name == "netdiag_agent_flows") {
      saw_flows = true;
      EXPECT_EQ(family.metric.at(0).gauge.value, 1);
    }
    if (family.name != "netdiag_agent_probe_errors_total") continue;
    for (const auto& m : family.metric) {
      if (m.label.at(0).value != "setup") continue;
      saw_setup = true;
      EXPECT_EQ(m.counter.value, 1);
    }
  }
  EXPECT_TRUE(saw_flows);
  EXPECT_TRUE(saw_setup);
  source->stop();
}

TEST(AgentSources, AProberThatCannotStartFailsEveryPortOfThePlan) {
  AgentConfig cfg;
  cfg.node = "h1";
  prometheus::Registry metrics;
  auto source = create("prober", {cfg, metrics});
  ASSERT_NE(source, nullptr);
  v1::AgentPlan plan;
  plan.set_version(1);
  plan.set_responder_port(testing::freePort());
  *plan.add_flows() = flow("h1:eth0", "127.0.0.1", testing::freePort());
  *plan.add_flows() = flow("h1:eth1", "127.0.0.1", testing::freePort());
  std::vector<std::string> problems;
  {
    // No file descriptor left: the prober's epoll_create1 fails (EMFILE).
    rlimit saved{};
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
    const int lowest_free = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(lowest_free, 0);
    ::close(lowest_free);
    rlimit none = saved;
    none.rlim_cur = static_cast<rlim_t>(lowest_free);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &none), 0);
    source->applyScope({{}, &plan}, &problems);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  }
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("epoll"), std::string::npos) << problems[0];
  v1::Batch batch;
  source->collect(4000, batch, &problems);
  const auto stats = source->stats().snapshot();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats.at("eth0").failures, 1u);
  EXPECT_EQ(stats.at("eth1").failures, 1u);
  EXPECT_EQ(batch.probes_size(), 0);
}

}  // namespace
}  // namespace netdiag::collector
