#include "collector/snmp/walk.h"

#include <gtest/gtest.h>

namespace netdiag::collector::snmp {
namespace {

Varbind counter(Oid oid, uint64_t v) {
  Varbind b;
  b.oid = std::move(oid);
  b.type = Varbind::Type::kCounter32;
  b.number = v;
  return b;
}

const Oid kA = {1, 3, 6, 1, 9, 1}, kB = {1, 3, 6, 1, 9, 2};

Oid row(const Oid& col, uint32_t i) { return oidJoin(col, i); }

TEST(BulkWalk, ReadsColumnsRowMajorUntilEachLeavesItsSubtree) {
  BulkWalk w({kA, kB}, 100);
  EXPECT_EQ(w.nextRequest(), (std::vector<Oid>{kA, kB}));
  // Two rows of each, then the next request goes on from the last OIDs.
  ASSERT_EQ(w.feed({counter(row(kA, 1), 10), counter(row(kB, 1), 20), counter(row(kA, 2), 11),
                    counter(row(kB, 2), 21)}),
            "");
  EXPECT_EQ(w.nextRequest(), (std::vector<Oid>{row(kA, 2), row(kB, 2)}));
  // A's next is B's first row (out of A's subtree: A ends); B ends at endOfMibView.
  Varbind end;
  end.oid = row(kB, 2);
  end.type = Varbind::Type::kEndOfMibView;
  ASSERT_EQ(w.feed({counter(row(kB, 1), 20), end}), "");
  EXPECT_TRUE(w.done());
  EXPECT_FALSE(w.failed());
  EXPECT_EQ(w.rows(0).size(), 2u);
  EXPECT_EQ(w.rows(1).at(Oid{2}).number, 21u);
}

TEST(BulkWalk, AResponseCutShortMidRowIsFine) {
  BulkWalk w({kA, kB}, 100);
  ASSERT_EQ(w.feed({counter(row(kA, 1), 1), counter(row(kB, 1), 2), counter(row(kA, 2), 3)}), "");
  EXPECT_EQ(w.nextRequest(), (std::vector<Oid>{row(kA, 2), row(kB, 1)}));
}

TEST(BulkWalk, OidsGoingBackFailTheWalkInsteadOfLoopingForever) {
  BulkWalk w({kA}, 100);
  ASSERT_EQ(w.feed({counter(row(kA, 5), 1)}), "");
  const std::string err = w.feed({counter(row(kA, 5), 1)});
  EXPECT_NE(err.find("out of order"), std::string::npos) << err;
  EXPECT_TRUE(w.failed());
  EXPECT_TRUE(w.nextRequest().empty());
  BulkWalk back({kA}, 100);
  EXPECT_NE(back.feed({counter(row(kA, 5), 1), counter(row(kA, 3), 1)}), "");
}

TEST(BulkWalk, ATableLargerThanItsBoundFails) {
  BulkWalk w({kA}, 3);
  std::vector<Varbind> many;
  for (uint32_t i = 1; i <= 10; ++i) many.push_back(counter(row(kA, i), i));
  const std::string err = w.feed(many);
  EXPECT_NE(err.find("larger than 3 rows"), std::string::npos) << err;
  EXPECT_EQ(w.rows(0).size(), 3u);
}

TEST(BulkWalk, AnEmptyResponseFails) {
  BulkWalk w({kA}, 3);
  EXPECT_EQ(w.feed({}), "empty GETBULK response");
  EXPECT_TRUE(w.done());
}

}  // namespace
}  // namespace netdiag::collector::snmp
