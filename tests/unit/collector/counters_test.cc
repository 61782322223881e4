#include "collector/counters.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

namespace netdiag::collector {
namespace {

namespace fs = std::filesystem;

// A fake sysfs tree in a temporary directory.
class FakeSysfs {
 public:
  FakeSysfs() {
    std::string tmpl = (fs::temp_directory_path() / "netdiag-sysfs-XXXXXX").string();
    root_ = mkdtemp(tmpl.data());
  }
  ~FakeSysfs() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  const std::string& root() const { return root_; }

  void write(const std::string& rel, const std::string& content) {
    const fs::path p = fs::path(root_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::trunc) << content;
  }
  void remove(const std::string& rel) { fs::remove(fs::path(root_) / rel); }

  // A healthy interface with every standard file.
  void addInterface(const std::string& ifname, uint64_t base = 0, const std::string& oper = "up") {
    const std::string d = "class/net/" + ifname + "/";
    write(d + "operstate", oper + "\n");
    write(d + "carrier_changes", std::to_string(base + 2) + "\n");
    for (const char* f :
         {"rx_packets", "tx_packets", "rx_errors", "rx_crc_errors", "rx_dropped", "tx_dropped"})
      setStat(ifname, f, base);
  }
  void setStat(const std::string& ifname, const std::string& name, uint64_t v) {
    write("class/net/" + ifname + "/statistics/" + name, std::to_string(v) + "\n");
  }

 private:
  std::string root_;
};

EthtoolReader noEthtool() { return {}; }

TEST(CounterReader, ReadsEveryStandardField) {
  FakeSysfs sys;
  sys.addInterface("swp1", 100);
  sys.setStat("swp1", "rx_packets", 981234);
  sys.setStat("swp1", "tx_dropped", 12);
  CounterReader reader(sys.root(), "leaf1", {"swp1"}, noEthtool());
  std::vector<std::string> errors;
  const auto out = reader.read(1700000000.5, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(out.size(), 1u);
  const auto& pc = out[0];
  EXPECT_EQ(pc.port(), "leaf1:swp1");
  EXPECT_DOUBLE_EQ(pc.t(), 1700000000.5);
  EXPECT_TRUE(pc.oper_up());
  EXPECT_EQ(pc.rx_packets(), 981234u);
  EXPECT_EQ(pc.tx_packets(), 100u);
  EXPECT_EQ(pc.rx_errors(), 100u);
  EXPECT_EQ(pc.rx_crc_errors(), 100u);
  EXPECT_EQ(pc.rx_drops(), 100u);
  EXPECT_EQ(pc.tx_drops(), 12u);
  EXPECT_EQ(pc.carrier_changes(), 102u);
  EXPECT_FALSE(pc.has_fec_uncorrectable());
}

TEST(CounterReader, OperstateMapping) {
  FakeSysfs sys;
  const std::vector<std::pair<std::string, std::optional<bool>>> cases = {
      {"up", true},       {"down", false},       {"lowerlayerdown", false},
      {"dormant", false}, {"notpresent", false}, {"unknown", std::nullopt}};
  std::vector<std::string> names;
  for (size_t i = 0; i < cases.size(); ++i) {
    names.push_back("if" + std::to_string(i));
    sys.addInterface(names.back(), 0, cases[i].first);
  }
  sys.addInterface("tun0", 0, "unknown");
  sys.write("class/net/tun0/carrier", "1\n");
  names.push_back("tun0");
  CounterReader reader(sys.root(), "n", names, noEthtool());
  const auto out = reader.read(1);
  ASSERT_EQ(out.size(), cases.size() + 1);
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(out[i].has_oper_up(), cases[i].second.has_value()) << cases[i].first;
    if (cases[i].second) {
      EXPECT_EQ(out[i].oper_up(), *cases[i].second) << cases[i].first;
    }
  }
  EXPECT_TRUE(out.back().oper_up());  // "unknown" falls back to the carrier file
}

TEST(CounterReader, MalformedOrMissingFieldsAreAbsentWithAClearError) {
  FakeSysfs sys;
  sys.addInterface("eth0", 5);
  sys.write("class/net/eth0/statistics/rx_errors", "abc\n");
  sys.write("class/net/eth0/statistics/rx_dropped", "-3\n");
  sys.write("class/net/eth0/statistics/tx_dropped", "");
  sys.write("class/net/eth0/statistics/tx_packets", "12 34\n");
  sys.remove("class/net/eth0/statistics/rx_crc_errors");
  sys.write("class/net/eth0/operstate", "sideways\n");
  sys.write("class/net/eth0/carrier_changes", "99999999999999999999999\n");  // > 2^64
  CounterReader reader(sys.root(), "h0", {"eth0"}, noEthtool());
  std::vector<std::string> errors;
  const auto out = reader.read(1, &errors);
  ASSERT_EQ(out.size(), 1u);
  const auto& pc = out[0];
  EXPECT_EQ(pc.rx_packets(), 5u);  // the good field is still there
  EXPECT_FALSE(pc.has_rx_errors());
  EXPECT_FALSE(pc.has_rx_drops());
  EXPECT_FALSE(pc.has_tx_drops());
  EXPECT_FALSE(pc.has_tx_packets());
  EXPECT_FALSE(pc.has_rx_crc_errors());
  EXPECT_FALSE(pc.has_oper_up());
  EXPECT_FALSE(pc.has_carrier_changes());
  ASSERT_EQ(errors.size(), 7u);
  auto mentions = [&](const std::string& a, const std::string& b) {
    for (const auto& e : errors)
      if (e.find(a) != std::string::npos && e.find(b) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(mentions("statistics/rx_errors", "not a counter: \"abc\""));
  EXPECT_TRUE(mentions("statistics/rx_dropped", "not a counter: \"-3\""));
  EXPECT_TRUE(mentions("statistics/tx_dropped", "not a counter: \"\""));
  EXPECT_TRUE(mentions("statistics/tx_packets", "not a counter: \"12 34\""));
  EXPECT_TRUE(mentions("statistics/rx_crc_errors", "missing"));
  EXPECT_TRUE(mentions("operstate", "unexpected operstate \"sideways\""));
  EXPECT_TRUE(mentions("carrier_changes", "not a counter"));
  EXPECT_EQ(reader.errors(), 7u);
}

TEST(CounterReader, MissingInterfaceIsAnErrorAndNoRecord) {
  FakeSysfs sys;
  sys.addInterface("eth0");
  CounterReader reader(sys.root(), "h0", {"eth9", "eth0", "../x", ""}, noEthtool());
  std::vector<std::string> errors;
  const auto out = reader.read(1, &errors);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port(), "h0:eth0");
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_NE(errors[0].find("\"eth9\": not found"), std::string::npos) << errors[0];
}

TEST(CounterReader, ResetsKeepValuesMonotonicAndAreCounted) {
  FakeSysfs sys;
  sys.addInterface("eth0");
  CounterReader reader(sys.root(), "h0", {"eth0"}, noEthtool());
  std::vector<uint64_t> raw = {100, 150, 20, 30, 30, 5, 1000};
  std::vector<uint64_t> want = {100, 150, 170, 180, 180, 185, 1180};
  for (size_t i = 0; i < raw.size(); ++i) {
    sys.setStat("eth0", "rx_packets", raw[i]);
    const auto out = reader.read(static_cast<double>(i));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].rx_packets(), want[i]) << "step " << i;
  }
  EXPECT_EQ(reader.resets(), 2u);
  // A field that was unreadable for a while is compared with its last value.
  sys.write("class/net/eth0/statistics/rx_packets", "garbage");
  EXPECT_FALSE(reader.read(10)[0].has_rx_packets());
  sys.setStat("eth0", "rx_packets", 1001);
  EXPECT_EQ(reader.read(11)[0].rx_packets(), 1181u);
  EXPECT_EQ(reader.resets(), 2u);
}

TEST(CounterReader, EthtoolCrcAndFecCountersAreMapped) {
  FakeSysfs sys;
  sys.addInterface("eth0", 3);
  sys.addInterface("eth1", 3);
  EthtoolStats stats = {{"rx_packets_phy", 10},           {"rx_crc_errors_phy", 7},
                        {"tx_crc_errors", 1000},          {"rx_fec_uncorrectable_blocks", 5},
                        {"rx_fec_corrected_blocks", 999}, {"lane0_rx_fec_uncorrectable", 2}};
  int calls = 0;
  CounterReader reader(
      sys.root(), "h0", {"eth0", "eth1"},
      [&](const std::string& ifname, std::string* error) -> std::optional<EthtoolStats> {
        ++calls;
        if (ifname == "eth1") {
          *error = "eth1: SIOCETHTOOL GSTATS: Operation not permitted";
          return std::nullopt;
        }
        return stats;
      });
  std::vector<std::string> errors;
  auto out = reader.read(1, &errors);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(out[0].rx_crc_errors(), 7u);  // ethtool's PHY count replaces sysfs's 3
  EXPECT_EQ(out[0].fec_uncorrectable(), 5u);
  EXPECT_EQ(out[1].rx_crc_errors(), 3u);  // no ethtool: sysfs
  EXPECT_FALSE(out[1].has_fec_uncorrectable());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("Operation not permitted"), std::string::npos);
  // Driver reload: ethtool counters restart too.
  stats["rx_crc_errors_phy"] = 1;
  out = reader.read(2);
  EXPECT_EQ(out[0].rx_crc_errors(), 8u);
  EXPECT_EQ(reader.resets(), 1u);
}

TEST(CounterReader, RdmaPortCountersAddToTheirNetdev) {
  FakeSysfs sys;
  sys.addInterface("eth0", 10);  // RoCE: found through gid_attrs/ndevs/0
  sys.write("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "eth0\n");
  sys.write("class/infiniband/mlx5_0/ports/1/counters/port_rcv_errors", "4\n");
  sys.write("class/infiniband/mlx5_0/ports/1/counters/symbol_error", "6\n");
  sys.write("class/infiniband/mlx5_0/ports/1/counters/port_xmit_discards", "1\n");
  sys.write("class/infiniband/mlx5_0/ports/1/counters/link_downed", "3\n");
  // InfiniBand with two ports: netdevs matched by dev_port.
  sys.addInterface("ib0", 0);
  sys.addInterface("ib1", 0);
  sys.remove("class/net/ib1/carrier_changes");
  sys.write("class/infiniband/mlx4_0/device/net/ib0/dev_port", "0\n");
  sys.write("class/infiniband/mlx4_0/device/net/ib1/dev_port", "1\n");
  sys.write("class/infiniband/mlx4_0/ports/1/counters/port_rcv_errors", "20\n");
  sys.write("class/infiniband/mlx4_0/ports/2/counters/port_rcv_errors", "30\n");
  sys.write("class/infiniband/mlx4_0/ports/2/counters/link_downed", "4\n");
  sys.write("class/infiniband/mlx4_0/ports/2/counters/symbol_error", "bogus\n");
  CounterReader reader(sys.root(), "h0", {"eth0", "ib0", "ib1"}, noEthtool());
  std::vector<std::string> errors;
  const auto out = reader.read(1, &errors);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].rx_errors(), 14u);
  EXPECT_EQ(out[0].rx_crc_errors(), 14u);
  EXPECT_EQ(out[0].fec_uncorrectable(), 6u);
  EXPECT_EQ(out[0].tx_drops(), 11u);
  EXPECT_EQ(out[0].carrier_changes(), 12u);  // the netdev's own count wins
  EXPECT_EQ(out[1].rx_errors(), 20u);
  EXPECT_EQ(out[2].rx_errors(), 30u);
  EXPECT_EQ(out[2].carrier_changes(), 8u);  // 2 per link_downed when the netdev has none
  EXPECT_FALSE(out[2].has_fec_uncorrectable());
  ASSERT_EQ(errors.size(), 2u);  // ib1's missing carrier_changes, bogus symbol_error
  EXPECT_NE(errors[1].find("symbol_error: not a counter: \"bogus\""), std::string::npos)
      << errors[1];
}

TEST(CounterReader, SetInterfacesChangesTheMonitoredSet) {
  FakeSysfs sys;
  sys.addInterface("a");
  sys.addInterface("b");
  CounterReader reader(sys.root(), "n", {"a"}, noEthtool());
  EXPECT_EQ(reader.read(1).size(), 1u);
  reader.setInterfaces({"a", "b"});
  const auto out = reader.read(2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].port(), "n:b");
}

// Property: whatever bytes the files hold, the reader neither crashes nor
// reports a field it could not parse.
TEST(CounterReader, RandomFileContentsNeverCrash) {
  FakeSysfs sys;
  sys.addInterface("eth0");
  std::mt19937 rng(99);
  CounterReader reader(sys.root(), "n", {"eth0"}, noEthtool());
  const char* files[] = {"statistics/rx_packets", "statistics/rx_errors", "operstate",
                         "carrier_changes"};
  for (int trial = 0; trial < 300; ++trial) {
    for (const char* f : files) {
      std::string junk;
      const int len = static_cast<int>(rng() % 30);
      const bool digits = rng() % 2;
      for (int i = 0; i < len; ++i)
        junk += digits ? static_cast<char>('0' + rng() % 10) : static_cast<char>(rng());
      sys.write("class/net/eth0/" + std::string(f), junk);
    }
    std::vector<std::string> errors;
    const auto out = reader.read(trial, &errors);
    ASSERT_EQ(out.size(), 1u);
  }
}

TEST(CounterReader, ReadsTheRealLoopback) {
  std::error_code ec;
  if (!fs::is_directory("/sys/class/net/lo", ec)) GTEST_SKIP() << "no /sys/class/net/lo here";
  CounterReader reader("/sys", "me", {"lo"});  // with the real ethtool ioctl
  std::vector<std::string> errors;
  const auto out = reader.read(1, &errors);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].has_rx_packets());
  EXPECT_TRUE(out[0].has_tx_packets());
  EXPECT_TRUE(out[0].oper_up());  // "unknown" + carrier 1
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST(EthtoolStats, MissingDeviceOrNoStatsIsQuietlyAbsent) {
  std::string error;
  EXPECT_FALSE(readEthtoolStats("nd-no-such-if0", &error));
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_FALSE(readEthtoolStats("", &error));
  EXPECT_FALSE(readEthtoolStats(std::string(40, 'x'), &error));
  EXPECT_TRUE(error.empty()) << error;
}

// veth exposes ethtool statistics (peer_ifindex); create one in a private
// network namespace of this thread so the host is untouched.
TEST(EthtoolStats, ReadsAVethPairsStatistics) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a network namespace";
  std::optional<EthtoolStats> stats;
  std::string error, setup;
  std::thread t([&] {
    if (unshare(CLONE_NEWNET) != 0) {
      setup = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
      return;
    }
    // `ip` runs in the namespace of this thread's process image: use /proc/self/task.
    const std::string ns =
        "/proc/" + std::to_string(getpid()) + "/task/" + std::to_string(gettid()) + "/ns/net";
    const std::string cmd =
        "nsenter --net=" + ns + " ip link add ndt-a type veth peer name ndt-b 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      setup = "could not create a veth pair (" + cmd + ")";
      return;
    }
    stats = readEthtoolStats("ndt-a", &error);
  });
  t.join();
  if (!setup.empty()) GTEST_SKIP() << setup;
  ASSERT_TRUE(stats) << error;
  EXPECT_TRUE(stats->count("peer_ifindex")) << "veth's ethtool stats lack peer_ifindex";
}

}  // namespace
}  // namespace netdiag::collector
