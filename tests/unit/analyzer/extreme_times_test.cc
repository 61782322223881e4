// Telemetry times are any finite double (a bad clock, a hostile log, a gRPC
// batch only checked for finiteness): every time lands in a defined bucket,
// and the engine counts records at the far ends of the doubles like any
// other, without undefined arithmetic on the way.

#include <cfloat>
#include <vector>

#include <gtest/gtest.h>

#include "analyzer/evidence.h"
#include "tests/unit/analyzer/analyzer_test_util.h"

namespace netdiag::analyzer::testing {
namespace {

TEST(BucketOf, IsTheFloorOfTheQuotientSaturatedToTheBound) {
  EXPECT_EQ(bucketOf(12.0, 5), 2);
  EXPECT_EQ(bucketOf(10.0, 5), 2);
  EXPECT_EQ(bucketOf(-0.5, 5), -1);
  EXPECT_EQ(bucketOf(1.7e9, 5), 340'000'000);
  for (double t : {1e300, DBL_MAX, 5.0 * 9.3e18}) EXPECT_EQ(bucketOf(t, 5), kMaxBucket) << t;
  for (double t : {-1e300, -DBL_MAX, -5.0 * 9.3e18}) EXPECT_EQ(bucketOf(t, 5), -kMaxBucket) << t;
  EXPECT_EQ(bucketOf(1e300, 1e-300), kMaxBucket);  // a quotient of infinity
}

// A plain cast of floor(1e300 / 5) to int64 is undefined; on x86 it gave
// INT64_MIN, the ring's "empty" mark, so the record was dropped as too old.
TEST(BucketedTallies, ARecordAtAnyFiniteTimeIsCountedInTheNewestBucket) {
  for (double t : {1e300, -1e300, DBL_MAX, -DBL_MAX, 4.7e19, -4.7e19}) {
    BucketedTallies ring(2, 4, 5);
    EXPECT_TRUE(ring.add(1, t, 5, 1)) << t;
    EXPECT_EQ(ring.total(1).n, 5) << t;
    EXPECT_EQ(ring.total(1).k, 1) << t;
    EXPECT_EQ(ring.recent(1, 1).n, 5) << t;
    EXPECT_EQ(ring.total(0).n, 0) << t;
  }
}

TEST(BucketedTallies, TheRingMovesAcrossTheWholeRangeOfTimes) {
  BucketedTallies ring(1, 4, 5);
  ASSERT_TRUE(ring.add(0, -1e300, 7, 0));
  ASSERT_TRUE(ring.add(0, 0, 3, 1));  // far newer: the old bucket fell out
  EXPECT_EQ(ring.total(0).n, 3);
  ASSERT_TRUE(ring.add(0, 1e300, 2, 2));
  EXPECT_EQ(ring.total(0).n, 2);
  EXPECT_EQ(ring.newestBucket(), kMaxBucket);
  EXPECT_FALSE(ring.add(0, 0, 1, 0)) << "older than the ring";
  ring.advanceTo(DBL_MAX);  // the same saturated bucket: nothing moves
  EXPECT_EQ(ring.total(0).n, 2);
  BucketedTallies empty(1, 4, 5);
  EXPECT_EQ(empty.recent(0, 4).n, 0) << "nothing added yet";
}

// A log with records at the far ends of the doubles among ordinary ones:
// every one is counted, the far-past one as too late, and the report holds.
TEST(EngineExtremeTimes, RecordsAtTheFarEndsOfTheDoublesAreCountedNotFatal) {
  Fabric f;
  Mesh mesh(f);
  std::vector<Record> recs;
  for (double t : windows(0, 60)) mesh.window(t, recs);
  ProbeRecord probe = std::get<ProbeRecord>(recs.front());
  PortRecord port;
  port.port = f.hosts[0];
  port.rx_packets = 10;
  std::vector<Record> extreme;
  for (double t : {-1e300, 1e300, -DBL_MAX, DBL_MAX / 2}) {
    probe.t = port.t = t;
    extreme.emplace_back(probe);
    extreme.emplace_back(port);
  }
  std::vector<Record> all = extreme;  // the first record is the far past
  all.insert(all.end(), recs.begin(), recs.end());
  Engine engine(f.t);
  feed(engine, all);
  engine.finish();
  const IngestStats& st = engine.stats();
  EXPECT_EQ(st.probes + st.ports + st.lldp, all.size());
  // After 1e300 everything older is too late: -DBL_MAX, and the 60 s log.
  EXPECT_EQ(st.too_late, 2 + recs.size());
  Report r = engine.report();
  EXPECT_EQ(r.generated_at, DBL_MAX / 2);
  expectContract(f.t, r);
}

}  // namespace
}  // namespace netdiag::analyzer::testing
