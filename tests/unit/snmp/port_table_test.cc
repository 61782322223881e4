#include "collector/snmp/port_table.h"

#include <gtest/gtest.h>

namespace netdiag::collector::snmp {
namespace {

// Builds the response rows of one counters walk, column by column.
class Walker {
 public:
  explicit Walker(bool hc = true) : hc_(hc), cols_(counterColumns(hc)) {}
  Walker& str(size_t col, uint32_t index, std::string v) {
    Varbind b = base(col, index, Varbind::Type::kOctets);
    b.bytes = std::move(v);
    rows_[col].push_back(b);
    return *this;
  }
  Walker& num(size_t col, uint32_t index, uint64_t v, Varbind::Type t) {
    Varbind b = base(col, index, t);
    b.number = v;
    rows_[col].push_back(b);
    return *this;
  }
  Walker& integer(size_t col, uint32_t index, int64_t v) {
    Varbind b = base(col, index, Varbind::Type::kInteger);
    b.integer = v;
    rows_[col].push_back(b);
    return *this;
  }
  // An interface with every column: name, status, last change, counters.
  Walker& port(uint32_t index, const std::string& name, int status, uint32_t last_change,
               uint32_t in_errors, uint64_t in_ucast) {
    str(kColName, index, name);
    integer(kColOperStatus, index, status);
    num(kColLastChange, index, last_change, Varbind::Type::kTimeTicks);
    num(kColInErrors, index, in_errors, Varbind::Type::kCounter32);
    num(kColHcInUcast, index, in_ucast,
        hc_ ? Varbind::Type::kCounter64 : Varbind::Type::kCounter32);
    return *this;
  }
  // The whole walk as one row-major response, each column ended by an OID
  // outside every subtree.
  BulkWalk walk() const {
    BulkWalk w(cols_, 1000);
    size_t depth = 0;
    for (const auto& [col, rows] : rows_) depth = std::max(depth, rows.size());
    Varbind end;
    end.oid = {9, 9, 9};
    std::vector<Varbind> all;
    for (size_t r = 0; r <= depth; ++r) {
      for (size_t k = 0; k < cols_.size(); ++k) {
        auto it = rows_.find(k);
        all.push_back(it != rows_.end() && r < it->second.size() ? it->second[r] : end);
      }
    }
    EXPECT_EQ(w.feed(all), "");
    EXPECT_TRUE(w.done());
    return w;
  }

 private:
  Varbind base(size_t col, uint32_t index, Varbind::Type t) const {
    Varbind b;
    b.oid = oidJoin(cols_[col], index);
    b.type = t;
    return b;
  }
  bool hc_;
  std::vector<Oid> cols_;
  std::map<size_t, std::vector<Varbind>> rows_;
};

const v1::PortCounters* find(const std::vector<v1::PortCounters>& rs, const std::string& port) {
  for (const auto& r : rs)
    if (r.port() == port) return &r;
  return nullptr;
}

TEST(PortTable, MapsIfMibOntoPortRecordsOfKnownPortsOnly) {
  PortTable t("leaf1", {{"Ethernet1/1", "swp1"}}, {"swp1", "swp2"});
  Walker w;
  w.port(1, "lo", 1, 0, 0, 9).port(3, "Ethernet1/1", 1, 0, 4, 1000).port(4, "swp2", 2, 0, 0, 5);
  w.num(kColFcsErrors, 3, 7, Varbind::Type::kCounter32);
  w.num(kColHcInMcast, 3, 10, Varbind::Type::kCounter64);
  std::vector<std::string> problems;
  const auto rs = t.update(100, 5000, w.walk(), &problems);
  EXPECT_TRUE(problems.empty());
  ASSERT_EQ(rs.size(), 2u);  // lo is not a topology port
  const auto* p1 = find(rs, "leaf1:swp1");
  ASSERT_NE(p1, nullptr);
  EXPECT_TRUE(p1->oper_up());
  EXPECT_EQ(p1->rx_packets(), 1010u);  // unicast + multicast
  EXPECT_EQ(p1->rx_errors(), 4u);
  EXPECT_EQ(p1->rx_crc_errors(), 7u);
  EXPECT_EQ(p1->carrier_changes(), 0u);
  EXPECT_DOUBLE_EQ(p1->t(), 100);
  const auto* p2 = find(rs, "leaf1:swp2");
  ASSERT_NE(p2, nullptr);
  EXPECT_FALSE(p2->oper_up());
  EXPECT_FALSE(p2->has_rx_crc_errors());  // absent stays absent
}

TEST(PortTable, Unwraps32BitCountersSoAWrapIsNotAReset) {
  PortTable t("leaf1", {}, {});
  std::vector<std::string> problems;
  auto r1 = t.update(1, 100, Walker().port(3, "swp1", 1, 0, 4294967290u, 1).walk(), &problems);
  auto r2 = t.update(2, 200, Walker().port(3, "swp1", 1, 0, 5, 2).walk(), &problems);
  ASSERT_EQ(r1.size(), 1u);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r1[0].rx_errors(), 4294967290u);
  EXPECT_EQ(r2[0].rx_errors(), 4294967290ull + 11);  // 6 to the wrap, 5 after it
}

TEST(PortTable, ARestartIsEmittedAsAResetAndAnUptimeWrapIsNot) {
  PortTable t("leaf1", {}, {});
  std::vector<std::string> problems;
  t.update(1, 1000, Walker().port(3, "swp1", 1, 0, 50, 1).walk(), &problems);
  auto again = t.update(2, 2000, Walker().port(3, "swp1", 1, 0, 60, 1).walk(), &problems);
  EXPECT_EQ(again[0].rx_errors(), 60u);
  auto restarted = t.update(3, 10, Walker().port(3, "swp1", 1, 0, 2, 1).walk(), &problems);
  EXPECT_EQ(restarted[0].rx_errors(), 2u);  // lower: §2 reads a reset
  EXPECT_EQ(t.restarts(), 1u);
  // sysUpTime's own wrap after 497 days is not a restart.
  PortTable w("leaf2", {}, {});
  w.update(1, 4294967000u, Walker().port(3, "swp1", 1, 0, 50, 1).walk(), &problems);
  auto wrapped = w.update(2, 300, Walker().port(3, "swp1", 1, 0, 55, 1).walk(), &problems);
  EXPECT_EQ(w.restarts(), 0u);
  EXPECT_EQ(wrapped[0].rx_errors(), 55u);
}

TEST(PortTable, CountsCarrierChangesAsLinuxDoes) {
  PortTable t("leaf1", {}, {});
  std::vector<std::string> problems;
  auto carrier = [&](int status, uint32_t last_change) {
    auto rs =
        t.update(1, 100, Walker().port(3, "swp1", status, last_change, 0, 1).walk(), &problems);
    return rs.at(0).carrier_changes();
  };
  EXPECT_EQ(carrier(1, 10), 0u);
  EXPECT_EQ(carrier(2, 20), 1u);  // went down
  EXPECT_EQ(carrier(1, 30), 2u);  // came back
  EXPECT_EQ(carrier(1, 30), 2u);  // nothing happened
  EXPECT_EQ(carrier(1, 45), 4u);  // down and up again between polls: 2 more
  EXPECT_EQ(carrier(7, 50), 5u);  // lowerLayerDown is down
}

TEST(PortTable, AnIfIndexWithANewNameIsANewInterface) {
  PortTable t("leaf1", {}, {});
  std::vector<std::string> problems;
  t.update(1, 100, Walker().port(3, "swp1", 1, 0, 4000000000u, 1).walk(), &problems);
  auto rs = t.update(2, 200, Walker().port(3, "swp9", 1, 0, 5, 1).walk(), &problems);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].port(), "leaf1:swp9");
  EXPECT_EQ(rs[0].rx_errors(), 5u);  // not unwrapped from swp1's value
}

TEST(PortTable, WrongTypesAndIndexesAreReportedAndIgnored) {
  PortTable t("leaf1", {}, {});
  Walker w;
  w.port(3, "swp1", 1, 0, 0, 1);
  w.str(kColInDiscards, 3, "lots");                       // a string where a counter belongs
  w.num(kColOutDiscards, 3, 9, Varbind::Type::kGauge32);  // a gauge is not a counter
  std::vector<std::string> problems;
  const auto rs = t.update(1, 100, w.walk(), &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("ifInDiscards.3 is OCTET STRING, expected Counter32"),
            std::string::npos)
      << problems[0];
  EXPECT_NE(problems[0].find("and 1 more"), std::string::npos) << problems[0];
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_FALSE(rs[0].has_rx_drops());
  EXPECT_FALSE(rs[0].has_tx_drops());
  EXPECT_EQ(rs[0].rx_packets(), 1u);
}

TEST(PortTable, AnAgentWithout64BitCountersIsReadThroughThe32BitOnes) {
  PortTable t("leaf1", {}, {});
  std::vector<std::string> problems;
  Walker hc;
  hc.str(kColName, 3, "swp1").integer(kColOperStatus, 3, 1);
  t.update(1, 100, hc.walk(), &problems);
  EXPECT_FALSE(t.usesHcCounters());
  Walker old(false);
  old.port(3, "swp1", 1, 0, 0, 4294967295u);
  t.update(2, 200, old.walk(), &problems);
  Walker later(false);
  later.port(3, "swp1", 1, 0, 0, 9);
  const auto rs = t.update(3, 300, later.walk(), &problems);
  EXPECT_EQ(rs.at(0).rx_packets(), 4294967295ull + 10);
}

}  // namespace
}  // namespace netdiag::collector::snmp
