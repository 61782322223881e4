// FlowPaths and BucketedTallies edge cases: the flat flow-path table's
// spill, erase and growth paths, and the compact tallies' switch to doubles.

#include "analyzer/flow_paths.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "analyzer/evidence.h"
#include "tests/unit/analyzer/analyzer_test_util.h"

namespace netdiag::analyzer {
namespace {

using telemetry::ProbeRecord;
using topology::DirLinkId;

ProbeRecord rec(topology::PortId src, topology::PortId dst, uint64_t flow,
                std::vector<DirLinkId> path = {}, bool partial = false) {
  ProbeRecord r;
  r.src = src;
  r.dst = dst;
  r.flow = flow;
  r.path = std::move(path);
  r.path_partial = partial;
  return r;
}

TEST(BucketedTallies, CompactMatchesDoublesAndWidens) {
  BucketedTallies a(3, 4, 5.0);
  EXPECT_TRUE(a.add(1, 0.0, 10, 1));
  EXPECT_TRUE(a.add(1, 6.0, 5, 0));
  EXPECT_TRUE(a.add(1, 2.0, 1, 1));  // late, older bucket
  EXPECT_TRUE(a.compact());
  EXPECT_EQ(a.total(1).n, 16);
  EXPECT_EQ(a.total(1).k, 2);
  EXPECT_EQ(a.recent(1, 1).n, 5);
  EXPECT_EQ(a.recent(1, 2).n, 16);
  a.advanceTo(16.0);  // bucket 3: bucket 0 still in the ring of 4
  EXPECT_EQ(a.total(1).n, 16);
  EXPECT_EQ(a.recent(1, 1).n, 0);
  a.advanceTo(20.0);  // bucket 4: bucket 0 drops
  EXPECT_EQ(a.total(1).n, 5);
  EXPECT_EQ(a.total(1).k, 0);
  EXPECT_FALSE(a.add(1, 1.0, 1, 0));  // older than the ring
  // A fractional amount switches to doubles, keeping what was there.
  EXPECT_TRUE(a.add(2, 21.0, 0.5, 0.25));
  EXPECT_FALSE(a.compact());
  EXPECT_EQ(a.total(1).n, 5);
  EXPECT_EQ(a.total(2).n, 0.5);
  EXPECT_EQ(a.total(2).k, 0.25);
  a.advanceTo(40.0);
  EXPECT_EQ(a.total(1).n, 0);
  EXPECT_EQ(a.total(2).n, 0);
  // Overflowing a 32-bit bucket switches too.
  BucketedTallies b(1, 2, 1.0);
  EXPECT_TRUE(b.add(0, 0.0, 4294967295.0, 0));
  EXPECT_TRUE(b.compact());
  EXPECT_TRUE(b.add(0, 0.0, 1, 0));
  EXPECT_FALSE(b.compact());
  EXPECT_EQ(b.total(0).n, 4294967296.0);
}

TEST(BucketedTallies, RandomAgainstReference) {
  std::mt19937_64 rng(7);
  const size_t keys = 5, buckets = 6;
  BucketedTallies a(keys, buckets, 2.0);
  std::vector<std::pair<double, std::vector<double>>> log;  // t, {key, n, k}
  double now = 0;
  for (int i = 0; i < 3000; ++i) {
    now += std::uniform_real_distribution<double>(0, 0.8)(rng);
    double t = now - std::uniform_real_distribution<double>(0, 10)(rng) * (rng() % 4 == 0);
    size_t key = rng() % keys;
    double n = static_cast<double>(rng() % 20), k = static_cast<double>(rng() % 3);
    bool ok = a.add(key, t, n, k);
    if (ok) log.push_back({t, {static_cast<double>(key), n, k}});
    if (rng() % 50 == 0) a.advanceTo(now);
    const int64_t nb = a.newestBucket();
    for (size_t q = 0; q < keys; ++q) {
      double tn = 0, tk = 0, rn = 0, rk = 0;
      for (const auto& [lt, v] : log) {
        auto lb = static_cast<int64_t>(std::floor(lt / 2.0));
        if (static_cast<size_t>(v[0]) != q || lb <= nb - static_cast<int64_t>(buckets)) continue;
        tn += v[1], tk += v[2];
        if (lb > nb - 2) rn += v[1], rk += v[2];
      }
      ASSERT_EQ(a.total(q).n, tn) << i;
      ASSERT_EQ(a.total(q).k, tk) << i;
      ASSERT_EQ(a.recent(q, 2).n, rn) << i;
      ASSERT_EQ(a.recent(q, 2).k, rk) << i;
    }
  }
}

TEST(FlowPaths, CachesFullPathsAndGrows) {
  testing::Fabric fab;
  FlowPaths fp(fab.t);
  std::vector<DirLinkId> out;
  const auto src = fab.hosts.front(), dst = fab.hosts.back();
  const std::vector<DirLinkId> path = fab.route(src, dst, 0);
  ASSERT_EQ(path.size(), 4u);
  // Many flows: the table regrows several times and keeps them all.
  for (uint64_t f = 0; f < 5000; ++f) fp.forwardLinks(rec(src, dst, f, path), out);
  EXPECT_EQ(fp.cachedFlows(), 5000u);
  for (uint64_t f = 0; f < 5000; ++f) {
    Middle m = fp.forwardLinks(rec(src, dst, f), out);
    ASSERT_EQ(out, path) << f;
    EXPECT_TRUE(m.cached);
  }
  // An unknown flow: only the access links.
  fp.forwardLinks(rec(src, dst, 99999), out);
  EXPECT_LE(out.size(), 2u);
  // A disagreeing partial discovery drops the flow; the others stay.
  std::vector<DirLinkId> other = {path[0], topology::Topology::reverse(path[0])};
  for (uint64_t f = 0; f < 5000; f += 2) fp.forwardLinks(rec(src, dst, f, other, true), out);
  EXPECT_EQ(fp.cachedFlows(), 2500u);
  for (uint64_t f = 0; f < 5000; ++f) {
    Middle m = fp.forwardLinks(rec(src, dst, f), out);
    EXPECT_EQ(m.cached, f % 2 == 1) << f;
    if (f % 2 == 1) {
      EXPECT_EQ(out, path) << f;
    }
  }
  // An agreeing prefix returns the cached path.
  fp.forwardLinks(rec(src, dst, 1, {path[0]}, true), out);
  EXPECT_EQ(out, path);
  fp.reserve(100000);
  EXPECT_EQ(fp.cachedFlows(), 2500u);
  fp.forwardLinks(rec(src, dst, 3), out);
  EXPECT_EQ(out, path);
}

// A window whose replies all died discovers no reply path; the flow's
// replies still took the one discovered before (they hash alike), and only
// that keeps a link on it charged with those losses.
TEST(FlowPaths, RemembersTheRepliesPathApartFromTheProbes) {
  testing::Fabric fab;
  FlowPaths fp(fab.t);
  std::vector<DirLinkId> out;
  const auto a = fab.hosts.front(), b = fab.hosts.back();
  const std::vector<DirLinkId> there = fab.route(a, b, 0), back = fab.route(b, a, 1);
  ProbeRecord r = rec(a, b, 7, there);
  r.reply_path = back;
  fp.reverseLinks(r, out);
  EXPECT_EQ(out, back);
  ProbeRecord lost = rec(a, b, 7);
  Middle m = fp.reverseLinks(lost, out);
  EXPECT_EQ(out, back);
  EXPECT_TRUE(m.cached);
  // Not the path of b's own flow 7 to a, nor of another flow.
  fp.forwardLinks(rec(b, a, 7), out);
  EXPECT_LE(out.size(), 2u);
  m = fp.reverseLinks(rec(a, b, 8), out);
  EXPECT_LE(out.size(), 2u);
  EXPECT_FALSE(m.cached);
}

TEST(FlowPaths, LongPathsAndOutOfRangeIdsSpill) {
  testing::Fabric fab;
  const auto& topo = &fab.t;
  FlowPaths fp(fab.t);
  std::vector<DirLinkId> out;
  const auto src = fab.hosts.front(), dst = fab.hosts.back();
  std::vector<DirLinkId> longp;
  for (DirLinkId d = 0; d < 40; ++d) longp.push_back(d % topo->dirLinkCount());
  std::vector<DirLinkId> odd = {0, 0xfffffff0u, 1};
  for (uint64_t f = 0; f < 300; ++f) fp.forwardLinks(rec(src, dst, f, f % 2 ? longp : odd), out);
  for (uint64_t f = 0; f < 300; ++f) {
    fp.forwardLinks(rec(src, dst, f), out);
    ASSERT_EQ(out, f % 2 ? longp : odd) << f;
  }
  // Replace spilled paths by short ones and back; erase some.
  const std::vector<DirLinkId> shortp = {1, 2, 3};
  for (uint64_t f = 0; f < 300; f += 3) fp.forwardLinks(rec(src, dst, f, shortp), out);
  for (uint64_t f = 0; f < 300; f += 5) fp.forwardLinks(rec(src, dst, f, {7, 7}, true), out);
  for (uint64_t f = 0; f < 300; ++f) {
    Middle m = fp.forwardLinks(rec(src, dst, f), out);
    if (f % 5 == 0) {
      EXPECT_FALSE(m.cached) << f;
    } else {
      ASSERT_EQ(out, f % 3 == 0 ? shortp : (f % 2 ? longp : odd)) << f;
    }
  }
}

}  // namespace
}  // namespace netdiag::analyzer
