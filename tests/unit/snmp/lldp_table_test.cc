#include "collector/snmp/lldp_table.h"

#include <gtest/gtest.h>

namespace netdiag::collector::snmp {
namespace {

class LldpWalker {
 public:
  LldpWalker() : cols_(lldpColumns()) {}
  LldpWalker& localPort(uint32_t num, int subtype, const std::string& id) {
    add(kColLocPortIdSubtype, {num}, integer(subtype));
    add(kColLocPortId, {num}, octets(id));
    return *this;
  }
  LldpWalker& remote(uint32_t time_mark, uint32_t local, uint32_t index, const std::string& sys,
                     int port_subtype, const std::string& port_id) {
    const Oid i = {time_mark, local, index};
    add(kColRemChassisIdSubtype, i, integer(4));
    add(kColRemChassisId, i, octets(std::string("\xee\x8f\x05\x96\x49\xab", 6)));
    add(kColRemPortIdSubtype, i, integer(port_subtype));
    add(kColRemPortId, i, octets(port_id));
    if (!sys.empty()) add(kColRemSysName, i, octets(sys));
    return *this;
  }
  void add(size_t col, const Oid& index, Varbind v) {
    v.oid = cols_[col];
    v.oid.insert(v.oid.end(), index.begin(), index.end());
    rows_[col].push_back(v);
  }
  BulkWalk walk() const {
    BulkWalk w(cols_, 1000);
    size_t depth = 0;
    for (const auto& [c, r] : rows_) depth = std::max(depth, r.size());
    Varbind end;
    end.oid = {9};
    std::vector<Varbind> all;
    for (size_t r = 0; r <= depth; ++r)
      for (size_t k = 0; k < cols_.size(); ++k) {
        auto it = rows_.find(k);
        all.push_back(it != rows_.end() && r < it->second.size() ? it->second[r] : end);
      }
    EXPECT_EQ(w.feed(all), "");
    return w;
  }
  static Varbind integer(int64_t v) {
    Varbind b;
    b.type = Varbind::Type::kInteger;
    b.integer = v;
    return b;
  }
  static Varbind octets(std::string s) {
    Varbind b;
    b.type = Varbind::Type::kOctets;
    b.bytes = std::move(s);
    return b;
  }

 private:
  std::vector<Oid> cols_;
  std::map<size_t, std::vector<Varbind>> rows_;
};

TEST(LldpTable, NamesNeighboursAsTheAgentsCaptureDoes) {
  PortTable ports("leaf0", {}, {"swp3", "swp4"});
  LldpWalker w;
  w.localPort(5, 5, "swp3").localPort(6, 5, "swp4");
  w.remote(100, 5, 2, "spine0", 5, "swp1");
  w.remote(100, 6, 3, "", 3, std::string("\x02\x00\x00\x00\x00\x01", 6));  // no name, MAC port id
  std::vector<std::string> problems;
  const auto rs = lldpRecords(7, "leaf0", ports, w.walk(), &problems);
  EXPECT_TRUE(problems.empty());
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].port(), "leaf0:swp3");
  EXPECT_EQ(rs[0].neighbor(), "spine0:swp1");
  EXPECT_EQ(rs[1].port(), "leaf0:swp4");
  EXPECT_EQ(rs[1].neighbor(), "ee:8f:05:96:49:ab:02:00:00:00:00:01");
  EXPECT_DOUBLE_EQ(rs[0].t(), 7);
}

TEST(LldpTable, TheNewestEntryOfAPortWins) {
  PortTable ports("leaf0", {}, {});
  LldpWalker w;
  w.localPort(5, 5, "swp3");
  w.remote(100, 5, 2, "spine0", 5, "swp1").remote(4600, 5, 9, "spine1", 5, "swp2");
  const auto rs = lldpRecords(1, "leaf0", ports, w.walk(), nullptr);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].neighbor(), "spine1:swp2");
}

TEST(LldpTable, OversizedOrMistypedValuesAreSkippedAndReported) {
  PortTable ports("leaf0", {}, {});
  LldpWalker w;
  w.localPort(5, 5, "swp3").localPort(6, 5, "swp4");
  w.remote(100, 5, 2, std::string(300, 'x'), 5, "swp1");      // longer than 802.1AB allows
  w.add(kColRemPortId, {100, 6, 3}, LldpWalker::integer(5));  // a port id that is a number
  std::vector<std::string> problems;
  const auto rs = lldpRecords(1, "leaf0", ports, w.walk(), &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("300 bytes long"), std::string::npos) << problems[0];
  // The name is dropped, the chassis stands in; the mistyped entry is skipped.
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].neighbor(), "ee:8f:05:96:49:ab:swp1");
}

}  // namespace
}  // namespace netdiag::collector::snmp
