#include "collector/snmp/snmp_poller.h"

#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/snmp/port_table.h"
#include "fake_agent.h"

namespace netdiag::collector::snmp {
namespace {

using testing::BulkRequest;
using testing::FakeAgent;

using Mib = std::map<Oid, Varbind>;

Varbind vb(Oid oid, Varbind::Type t, uint64_t n = 0, std::string s = "") {
  Varbind v;
  v.oid = std::move(oid);
  v.type = t;
  v.number = n;
  v.integer = static_cast<int64_t>(n);
  v.bytes = std::move(s);
  return v;
}

// GETBULK over a MIB, as RFC 3416 §4.2.3 has it.
bool answer(const Mib& mib, const BulkRequest& req, std::vector<Varbind>* out) {
  auto next = [&](const Oid& o) {
    auto it = mib.upper_bound(o);
    if (it == mib.end()) return vb(o, Varbind::Type::kEndOfMibView);
    return it->second;
  };
  std::vector<Oid> cursor = req.oids;
  for (int64_t i = 0; i < req.non_repeaters && i < static_cast<int64_t>(cursor.size()); ++i)
    out->push_back(next(cursor[i]));
  for (int64_t r = 0; r < req.max_repetitions; ++r) {
    for (size_t i = req.non_repeaters; i < cursor.size(); ++i) {
      Varbind v = next(cursor[i]);
      cursor[i] = v.oid;
      out->push_back(v);
    }
  }
  return true;
}

// One interface, swp1 at ifIndex 1, with every counter the poller reads.
Mib switchMib(bool hostile_types = false) {
  Mib m;
  auto put = [&](Varbind v) { m[v.oid] = v; };
  const std::vector<Oid> cols = counterColumns(true);
  put(vb({1, 3, 6, 1, 2, 1, 1, 3, 0}, Varbind::Type::kTimeTicks, 12345));
  put(vb(oidJoin(cols[kColName], 1), Varbind::Type::kOctets, 0, "swp1"));
  put(vb(oidJoin(cols[kColOperStatus], 1), Varbind::Type::kInteger, 1));
  put(vb(oidJoin(cols[kColLastChange], 1), Varbind::Type::kTimeTicks, 5));
  put(hostile_types ? vb(oidJoin(cols[kColInErrors], 1), Varbind::Type::kOctets, 0, "many")
                    : vb(oidJoin(cols[kColInErrors], 1), Varbind::Type::kCounter32, 3));
  put(vb(oidJoin(cols[kColHcInUcast], 1), Varbind::Type::kCounter64, 1ull << 40));
  return m;
}

double metric(prometheus::Registry& reg, const std::string& name,
              const std::map<std::string, std::string>& labels) {
  for (const auto& fam : reg.Collect()) {
    if (fam.name != name) continue;
    for (const auto& m : fam.metric) {
      std::map<std::string, std::string> have;
      for (const auto& l : m.label) have[l.name] = l.value;
      bool match = true;
      for (const auto& [k, v] : labels) match = match && have[k] == v;
      if (!match) continue;
      return fam.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return -1;
}

SnmpTarget v2(const std::string& node, uint16_t port) {
  SnmpTarget t;
  t.node = node;
  t.address = "127.0.0.1:" + std::to_string(port);
  t.community = "public";
  return t;
}

PollerConfig fastConfig() {
  PollerConfig c;
  c.identity = "snmp-test";
  c.timeout = 0.2;
  c.retries = 1;
  c.lldp_interval = 0;
  c.max_rows = 50;
  return c;
}

TEST(SnmpPoller, HostileOrSilentAgentsFailAloneWithAClearErrorAndAMetric) {
  const Mib good = switchMib(), mistyped = switchMib(true);
  FakeAgent ok([&](const BulkRequest& r, std::vector<Varbind>* out, std::string*) {
    return answer(good, r, out);
  });
  FakeAgent wrong_types([&](const BulkRequest& r, std::vector<Varbind>* out, std::string*) {
    return answer(mistyped, r, out);
  });
  // Hostile repeaters after honest non-repeaters: next(oid, repetition).
  auto hostile = [](std::function<Oid(const Oid&, int64_t)> next) {
    return [next](const BulkRequest& r, std::vector<Varbind>* out, std::string*) {
      for (int64_t i = 0; i < r.non_repeaters; ++i)
        out->push_back(vb(oidJoin(r.oids[i], 0), Varbind::Type::kTimeTicks, 1));
      for (int64_t k = 0; k < r.max_repetitions; ++k)
        for (size_t i = r.non_repeaters; i < r.oids.size(); ++i)
          out->push_back(vb(next(r.oids[i], k), Varbind::Type::kCounter32, 1));
      return true;
    };
  };
  // The same row again and again: a walk that would never end.
  FakeAgent stuck(hostile([](const Oid& o, int64_t) { return oidJoin(o, 1); }));
  // A table without end: always more rows.
  FakeAgent endless(hostile([](const Oid& o, int64_t k) {
    Oid n = o;
    n.push_back(static_cast<uint32_t>(k + 1));
    return n;
  }));
  FakeAgent garbage([](const BulkRequest&, std::vector<Varbind>*, std::string* raw) {
    *raw = std::string("\x30\x05\x02\x01\x01\xff\xff", 7);
    return true;
  });
  FakeAgent silent([](const BulkRequest&, std::vector<Varbind>*, std::string*) { return false; });

  PollerConfig cfg = fastConfig();
  cfg.targets = {v2("ok", ok.port()),           v2("types", wrong_types.port()),
                 v2("stuck", stuck.port()),     v2("endless", endless.port()),
                 v2("garbage", garbage.port()), v2("silent", silent.port())};
  prometheus::Registry reg;
  SourceStats stats(16);
  std::vector<std::string> problems;
  SnmpPoller poller(cfg, {}, reg, stats, &problems);
  ASSERT_TRUE(problems.empty()) << problems.front();
  ASSERT_TRUE(poller.runOnce(20));
  v1::Batch b;
  poller.take(b, &problems);

  std::map<std::string, int> ports;
  for (const auto& p : b.ports()) ports[p.port()]++;
  EXPECT_EQ(ports["ok:swp1"], 1);
  EXPECT_EQ(ports["types:swp1"], 1);  // the rest of that switch still reported
  for (const auto& p : b.ports()) {
    if (p.port() == "ok:swp1") {
      EXPECT_EQ(p.rx_packets(), 1ull << 40);
      EXPECT_EQ(p.rx_errors(), 3u);
    }
    if (p.port() == "types:swp1") {
      EXPECT_FALSE(p.has_rx_errors());
    }
  }
  auto problemAbout = [&](const std::string& node, const std::string& what) {
    for (const auto& p : problems)
      if (p.rfind(node + " (", 0) == 0 && p.find(what) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(problemAbout("types", "is OCTET STRING, expected Counter32"));
  EXPECT_TRUE(problemAbout("stuck", "out of order"));
  EXPECT_TRUE(problemAbout("endless", "larger than 50 rows"));
  EXPECT_TRUE(problemAbout("garbage", "no answer"));
  EXPECT_TRUE(problemAbout("silent", "no answer"));

  const auto snap = stats.snapshot();
  EXPECT_EQ(snap.at("ok").failures, 0u);
  EXPECT_GT(snap.at("ok").last_success, 0);
  for (const char* bad : {"stuck", "endless", "garbage", "silent"})
    EXPECT_EQ(snap.at(bad).failures, 1u) << bad;
  EXPECT_EQ(metric(reg, "netdiag_snmp_target_up", {{"target", "ok"}}), 1);
  EXPECT_EQ(metric(reg, "netdiag_snmp_target_up", {{"target", "silent"}}), 0);
  EXPECT_EQ(metric(reg, "netdiag_snmp_errors_total", {{"target", "silent"}, {"reason", "timeout"}}),
            1);
  EXPECT_EQ(
      metric(reg, "netdiag_snmp_errors_total", {{"target", "stuck"}, {"reason", "malformed"}}), 1);
  EXPECT_EQ(
      metric(reg, "netdiag_snmp_errors_total", {{"target", "types"}, {"reason", "malformed"}}), 1);
  EXPECT_EQ(metric(reg, "netdiag_snmp_errors_total", {{"target", "ok"}, {"reason", "timeout"}}), 0);
  EXPECT_EQ(silent.requests(), 2u);  // one try and one retry
}

TEST(SnmpPoller, ATargetThatNeverAnswersIsVisibleFromTheStart) {
  FakeAgent silent([](const BulkRequest&, std::vector<Varbind>*, std::string*) { return false; });
  PollerConfig cfg = fastConfig();
  cfg.targets = {v2("quiet", silent.port())};
  prometheus::Registry reg;
  SourceStats stats(4);
  SnmpPoller poller(cfg, {}, reg, stats, nullptr);
  // Before any poll: the series exist, saying "not up".
  EXPECT_EQ(metric(reg, "netdiag_snmp_target_up", {{"target", "quiet"}}), 0);
  EXPECT_EQ(metric(reg, "netdiag_snmp_errors_total", {{"target", "quiet"}, {"reason", "timeout"}}),
            0);
  ASSERT_TRUE(poller.runOnce(10));
  ASSERT_TRUE(poller.runOnce(10));
  EXPECT_EQ(metric(reg, "netdiag_snmp_errors_total", {{"target", "quiet"}, {"reason", "timeout"}}),
            2);
  EXPECT_EQ(poller.totals().failures, 2u);
}

TEST(SnmpPoller, WalksALargeTableInBoundedRequests) {
  Mib big;
  const std::vector<Oid> cols = counterColumns(true);
  for (uint32_t i = 1; i <= 300; ++i) {
    Varbind n = vb(oidJoin(cols[kColName], i), Varbind::Type::kOctets, 0, "p" + std::to_string(i));
    big[n.oid] = n;
    Varbind c = vb(oidJoin(cols[kColHcInUcast], i), Varbind::Type::kCounter64, i);
    big[c.oid] = c;
  }
  size_t largest = 0;
  FakeAgent agent([&](const BulkRequest& r, std::vector<Varbind>* out, std::string*) {
    answer(big, r, out);
    largest = std::max(largest, out->size());
    return true;
  });
  PollerConfig cfg = fastConfig();
  cfg.max_rows = 1000;
  cfg.max_varbinds = 100;
  cfg.targets = {v2("big", agent.port())};
  prometheus::Registry reg;
  SourceStats stats(4);
  SnmpPoller poller(cfg, {}, reg, stats, nullptr);
  ASSERT_TRUE(poller.runOnce(20));
  v1::Batch b;
  poller.take(b, nullptr);
  EXPECT_EQ(b.ports_size(), 300);
  EXPECT_LE(largest, 101u);  // max_varbinds, plus sysUpTime
  EXPECT_EQ(stats.snapshot().at("big").failures, 0u);
}

// A real snmpd on loopback, where Debian's snmpd is installed.
class RealSnmpd : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/sbin/snmpd", X_OK) != 0)
      GTEST_SKIP() << "snmpd not installed (apt-get install snmpd)";
    char tmpl[] = "/tmp/netdiag-snmpd-XXXXXX";
    dir_ = mkdtemp(tmpl);
    FakeAgent probe([](const BulkRequest&, std::vector<Varbind>*, std::string*) { return false; });
    port_ = probe.port();  // a free UDP port, released below
  }
  void start() {
    ::mkdir((dir_ + "/persist").c_str(), 0700);
    std::ofstream(dir_ + "/snmpd.conf")
        << "agentAddress udp:127.0.0.1:" << port_ << "\nrocommunity public 127.0.0.1\n"
        << "createUser netdiag SHA authpass123 AES privpass123\nrouser netdiag priv\n"
        << "createUser other SHA otherpass123 AES privpass123\nrouser other priv\n"
        << "master agentx\nagentXSocket " << dir_ << "/agentx.sock\n";
    std::ofstream(dir_ + "/auth.key") << "authpass123\n";
    std::ofstream(dir_ + "/wrong.key") << "wrongpass123\n";
    std::ofstream(dir_ + "/priv.key") << "privpass123\n";
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string conf = dir_ + "/snmpd.conf";
      // -C: this file only (no /etc/snmp); its own persistent directory.
      ::setenv("SNMP_PERSISTENT_DIR", (dir_ + "/persist").c_str(), 1);
      ::execl("/usr/sbin/snmpd", "snmpd", "-f", "-C", "-c", conf.c_str(), "-Lf",
              (dir_ + "/snmpd.log").c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // (net-snmp 5.9 keys USM users by engine ID and name for the whole
  // process, so the wrong passphrase goes with a user of its own.)
  SnmpTarget v3(const std::string& node, const std::string& user, const std::string& auth_file) {
    SnmpTarget t;
    t.node = node;
    t.address = "127.0.0.1:" + std::to_string(port_);
    t.version = 3;
    t.user = user;
    t.auth = "SHA";
    t.priv = "AES";
    std::ifstream a(dir_ + "/" + auth_file), p(dir_ + "/priv.key");
    std::getline(a, t.auth_key);
    std::getline(p, t.priv_key);
    return t;
  }
  std::string dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
};

TEST_F(RealSnmpd, ReadsCountersOverV2cAndV3AuthPrivAndRefusesAWrongPassphrase) {
  start();
  PollerConfig cfg = fastConfig();
  cfg.timeout = 0.5;
  cfg.targets = {v2("v2", port_), v3("v3", "netdiag", "auth.key"), v3("bad", "other", "wrong.key")};
  prometheus::Registry reg;
  SourceStats stats(8);
  SnmpPoller poller(cfg, {}, reg, stats, nullptr);
  // snmpd takes a moment to listen: poll until the v2c target answered.
  v1::Batch b;
  std::vector<std::string> problems;
  for (int i = 0; i < 40 && stats.snapshot()["v2"].last_success == 0; ++i) {
    poller.runOnce(10);
    poller.take(b, &problems);
  }
  ASSERT_GT(stats.snapshot().at("v2").last_success, 0) << "snmpd never answered";
  b.Clear();
  problems.clear();
  ASSERT_TRUE(poller.runOnce(10));
  poller.take(b, &problems);
  std::map<std::string, int> nodes;
  for (const auto& p : b.ports()) nodes[p.port().substr(0, p.port().find(':'))]++;
  EXPECT_GT(nodes["v2"], 0);  // at least lo
  EXPECT_EQ(nodes["v2"], nodes["v3"]);
  EXPECT_EQ(nodes["bad"], 0);
  EXPECT_EQ(metric(reg, "netdiag_snmp_target_up", {{"target", "v3"}}), 1);
  EXPECT_EQ(metric(reg, "netdiag_snmp_target_up", {{"target", "bad"}}), 0);
  EXPECT_GT(metric(reg, "netdiag_snmp_errors_total", {{"target", "bad"}, {"reason", "auth"}}), 0);
  bool said = false;
  for (const auto& p : problems)
    said = said || (p.rfind("bad (", 0) == 0 && p.find("wrong digest") != std::string::npos);
  EXPECT_TRUE(said) << (problems.empty() ? "" : problems.front());
}

}  // namespace
}  // namespace netdiag::collector::snmp
