// The reorder buffer: records leave in time order, arrival order among
// equal times, up to the watermark, whatever order each batch had, and a
// batch is reported done once its last record left.

#include "server/reorder_buffer.h"

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

namespace netdiag::server {
namespace {

struct Batch : ReorderBuffer::Run {
  std::string name;
};

std::unique_ptr<Batch> batch(std::string name, const std::vector<double>& times) {
  auto b = std::make_unique<Batch>();
  b->name = std::move(name);
  for (double t : times) b->sequence.push_back({t, static_cast<uint32_t>(b->sequence.size())});
  return b;
}

// Releases up to `w`; returns "name:pos" per record taken, and the batches done.
std::vector<std::string> release(ReorderBuffer& buffer, double w,
                                 std::vector<std::string>* done = nullptr) {
  std::vector<std::string> taken;
  buffer.release(
      w,
      [&](ReorderBuffer::Run& run, uint32_t pos) {
        taken.push_back(static_cast<Batch&>(run).name + ":" + std::to_string(pos));
      },
      [&](ReorderBuffer::Run& run) {
        if (done) done->push_back(static_cast<Batch&>(run).name);
      });
  return taken;
}

TEST(ReorderBuffer, MergesBatchesByTimeThenArrival) {
  auto a = batch("a", {1, 3, 3, 5});
  auto b = batch("b", {2, 3, 4});
  auto c = batch("c", {4, 1, 3});  // out of order within the batch
  ReorderBuffer buffer;
  buffer.add(*a);
  buffer.add(*b);
  buffer.add(*c);
  EXPECT_EQ(buffer.records(), 10u);
  EXPECT_EQ(buffer.runs(), 3u);
  EXPECT_DOUBLE_EQ(buffer.oldest(), 1);

  std::vector<std::string> done;
  EXPECT_EQ(release(buffer, 3, &done),
            (std::vector<std::string>{"a:0", "c:1", "b:0", "a:1", "a:2", "b:1", "c:2"}));
  EXPECT_TRUE(done.empty());
  EXPECT_EQ(buffer.records(), 3u);
  EXPECT_DOUBLE_EQ(buffer.oldest(), 4);

  EXPECT_EQ(release(buffer, 4.5, &done), (std::vector<std::string>{"b:2", "c:0"}));
  EXPECT_EQ(done, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(buffer.runs(), 1u);

  EXPECT_TRUE(release(buffer, 4.9).empty());  // nothing at or below the watermark
  EXPECT_EQ(release(buffer, 5, &done), (std::vector<std::string>{"a:3"}));
  EXPECT_EQ(done, (std::vector<std::string>{"b", "c", "a"}));
  EXPECT_TRUE(buffer.empty());
  EXPECT_EQ(buffer.records(), 0u);
}

TEST(ReorderBuffer, AnEmptyBatchIsNotHeld) {
  auto e = batch("e", {});
  ReorderBuffer buffer;
  buffer.add(*e);
  EXPECT_TRUE(buffer.empty());
  EXPECT_TRUE(release(buffer, 1e300).empty());
}

// Against one sort of every record by (time, arrival), over random batches
// (few distinct times, so many ties) and watermarks, with batches added
// between releases.
TEST(ReorderBuffer, SameOrderAsSortingEveryRecord) {
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> time(0, 20), size(0, 30);
  ReorderBuffer buffer;
  std::vector<std::unique_ptr<Batch>> batches;
  std::vector<std::tuple<double, uint64_t, std::string>> waiting;  // t, arrival, "name:pos"
  uint64_t arrival = 0;
  double floor = 0;  // records are never older than what was released
  for (int round = 0; round < 200; ++round) {
    for (int k = std::uniform_int_distribution<int>(0, 3)(rng); k > 0; --k) {
      std::vector<double> times(static_cast<size_t>(size(rng)));
      for (double& t : times) t = floor + time(rng) * 0.5;
      batches.push_back(batch("b" + std::to_string(batches.size()), times));
      for (size_t i = 0; i < times.size(); ++i) {
        waiting.emplace_back(times[i], arrival++, batches.back()->name + ":" + std::to_string(i));
      }
      buffer.add(*batches.back());
    }
    const double w = floor + time(rng) * 0.25;
    std::sort(waiting.begin(), waiting.end());
    std::vector<std::string> expected;
    while (!waiting.empty() && std::get<0>(waiting.front()) <= w) {
      expected.push_back(std::get<2>(waiting.front()));
      waiting.erase(waiting.begin());
    }
    ASSERT_EQ(release(buffer, w), expected) << "round " << round;
    ASSERT_EQ(buffer.records(), waiting.size());
    floor = std::max(floor, w);
  }
}

}  // namespace
}  // namespace netdiag::server
