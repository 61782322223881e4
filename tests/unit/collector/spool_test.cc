#include "collector/spool.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

namespace netdiag::collector {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "netdiag-spool-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string path() const { return path_; }
  std::string sub(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

std::vector<std::string> segments(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("seg-", 0) == 0) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> drain(Spool& s) {
  std::vector<std::string> out;
  for (size_t i = 0;; ++i) {
    auto b = s.peek(i);
    if (!b) break;
    out.push_back(*b);
  }
  return out;
}

std::string batch(int i, size_t size = 100) {
  std::string s = "batch-" + std::to_string(i) + ":";
  s.resize(size, static_cast<char>('a' + i % 26));
  return s;
}

std::unique_ptr<Spool> open(const std::string& dir, uint64_t max_bytes,
                            std::vector<std::string>* warnings = nullptr) {
  std::string error;
  auto s = openDiskSpool(dir, max_bytes, &error, warnings);
  EXPECT_NE(s, nullptr) << error;
  return s;
}

// ---- behaviour shared by both implementations ----

class SpoolKinds : public ::testing::TestWithParam<bool> {
 protected:
  std::unique_ptr<Spool> make(uint64_t max_bytes) {
    if (!GetParam()) return makeMemorySpool(max_bytes);
    return open(dir_.path(), max_bytes);
  }
  TempDir dir_;
};

TEST_P(SpoolKinds, FifoPeekPop) {
  auto s = make(1 << 20);
  for (int i = 0; i < 10; ++i) s->push(batch(i));
  EXPECT_EQ(s->batches(), 10u);
  EXPECT_EQ(*s->peek(0), batch(0));
  EXPECT_EQ(*s->peek(9), batch(9));
  EXPECT_FALSE(s->peek(10));
  s->pop(3);
  EXPECT_EQ(s->batches(), 7u);
  EXPECT_EQ(*s->peek(0), batch(3));
  s->pop(100);  // more than held: empties
  EXPECT_EQ(s->batches(), 0u);
  EXPECT_EQ(s->bytes(), 0u);
  EXPECT_FALSE(s->peek(0));
  s->push(batch(42));
  EXPECT_EQ(*s->peek(0), batch(42));
  EXPECT_EQ(s->dropped(), 0u);
}

TEST_P(SpoolKinds, BoundDropsOldestAndCounts) {
  const bool disk = GetParam();
  const uint64_t per = 100 + (disk ? 12 : 0);  // framed size on disk
  auto s = make(per * 5);
  for (int i = 0; i < 8; ++i) s->push(batch(i));
  EXPECT_EQ(s->batches(), 5u);
  EXPECT_EQ(s->dropped(), 3u);
  EXPECT_EQ(s->bytes(), per * 5);
  EXPECT_EQ(drain(*s),
            (std::vector<std::string>{batch(3), batch(4), batch(5), batch(6), batch(7)}));
  // A batch that can never fit is dropped itself; the older ones stay.
  s->push(std::string(per * 6, 'x'));
  EXPECT_EQ(s->dropped(), 4u);
  EXPECT_EQ(s->batches(), 5u);
  EXPECT_EQ(*s->peek(0), batch(3));
}

TEST_P(SpoolKinds, ConcurrentPushPop) {
  auto s = make(1 << 30);
  constexpr int kProducers = 4, kPerProducer = 150;
  std::atomic<int> done{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) s->push(std::to_string(p) + ":" + std::to_string(i));
      ++done;
    });
  // One consumer, like the uplink: peek the oldest, then pop it.
  std::vector<int> last(kProducers, -1);
  int consumed = 0;
  while (consumed < kProducers * kPerProducer) {
    auto b = s->peek(0);
    if (!b) {
      std::this_thread::yield();
      continue;
    }
    s->pop(1);
    const int p = std::stoi(b->substr(0, b->find(':')));
    const int i = std::stoi(b->substr(b->find(':') + 1));
    EXPECT_EQ(i, last[p] + 1) << "producer " << p << " out of order";
    last[p] = i;
    ++consumed;
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(s->batches(), 0u);
  EXPECT_EQ(s->dropped(), 0u);
}

INSTANTIATE_TEST_SUITE_P(MemoryAndDisk, SpoolKinds, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Disk" : "Memory";
                         });

// ---- disk only ----

TEST(DiskSpool, ReopenKeepsUnackedBatchesAndDroppedCount) {
  TempDir dir;
  {
    auto s = open(dir.path(), 112 * 6);
    for (int i = 0; i < 8; ++i) s->push(batch(i));  // drops 0, 1
    s->pop(2);                                      // acks 2, 3
    EXPECT_EQ(s->dropped(), 2u);
  }
  std::vector<std::string> warnings;
  auto s = open(dir.path(), 112 * 6, &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(drain(*s), (std::vector<std::string>{batch(4), batch(5), batch(6), batch(7)}));
  EXPECT_EQ(s->dropped(), 2u);  // persisted across restarts
  EXPECT_EQ(s->bytes(), 112u * 4);
  s->push(batch(8));
  s->pop(1);
  s.reset();
  s = open(dir.path(), 112 * 6);
  EXPECT_EQ(drain(*s), (std::vector<std::string>{batch(5), batch(6), batch(7), batch(8)}));
}

// Issue #15: the uplink's epoch was the wall clock at start, so a clock
// stepped back gave a new start an epoch below the old ones. Now a disk
// spool persists it: each open takes the next one, whatever the clock does.
TEST(DiskSpool, EachOpenTakesTheNextEpochFromTheDirectory) {
  TempDir dir;
  uint64_t first = 0;
  {
    auto s = open(dir.path(), 1 << 20);
    first = s->epoch();
    EXPECT_NE(first, 0u);
    s->push(batch(1));
  }
  {
    std::vector<std::string> warnings;
    auto s = open(dir.path(), 1 << 20, &warnings);
    EXPECT_EQ(s->epoch(), first + 1);
    EXPECT_TRUE(warnings.empty()) << "the epoch file is not garbage: " << warnings.front();
    EXPECT_EQ(drain(*s), std::vector<std::string>{batch(1)});
  }
  EXPECT_EQ(open(dir.path(), 1 << 20)->epoch(), first + 2);
  // A directory made anew starts at a random epoch, not at 1 again (the
  // analyzer may still remember the numbers of the deleted one).
  TempDir other;
  const uint64_t fresh = open(other.path(), 1 << 20)->epoch();
  EXPECT_NE(fresh, 0u);
  EXPECT_NE(fresh, 1u);
  // An unreadable epoch file: a warning and a random epoch, never a reuse.
  std::ofstream(dir.sub("epoch"), std::ios::trunc) << "garbage";
  std::vector<std::string> warnings;
  auto s = open(dir.path(), 1 << 20, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("epoch"), std::string::npos) << warnings[0];
  EXPECT_NE(s->epoch(), 0u);
  EXPECT_NE(s->epoch(), first + 3);
}

TEST(DiskSpool, SecondOpenOfTheSameDirectoryFails) {
  TempDir dir;
  auto first = open(dir.path(), 1 << 20);
  std::string error;
  EXPECT_EQ(openDiskSpool(dir.path(), 1 << 20, &error), nullptr);
  EXPECT_NE(error.find("in use"), std::string::npos) << error;
}

TEST(DiskSpool, RejectsUnusableDirectory) {
  TempDir dir;
  std::ofstream(dir.sub("file")) << "x";
  std::string error;
  EXPECT_EQ(openDiskSpool(dir.sub("file") + "/spool", 1 << 20, &error), nullptr);
  EXPECT_NE(error.find("cannot create spool directory"), std::string::npos) << error;
  EXPECT_EQ(openDiskSpool(dir.sub("s"), 0, &error), nullptr);
}

TEST(DiskSpool, TornTailIsReportedAndSkipped) {
  TempDir dir;
  {
    auto s = open(dir.path(), 1 << 20);
    for (int i = 0; i < 5; ++i) s->push(batch(i));
  }
  // A crash mid-write: half a record at the end of the segment.
  const auto segs = segments(dir.path());
  ASSERT_EQ(segs.size(), 1u);
  const auto full = fs::file_size(segs[0]);
  fs::resize_file(segs[0], full - 50);
  std::vector<std::string> warnings;
  auto s = open(dir.path(), 1 << 20, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("torn or corrupt tail of 62 bytes"), std::string::npos) << warnings[0];
  EXPECT_EQ(drain(*s), (std::vector<std::string>{batch(0), batch(1), batch(2), batch(3)}));
  // New batches go after the good ones and survive another restart.
  s->push(batch(9));
  s.reset();
  warnings.clear();
  s = open(dir.path(), 1 << 20, &warnings);
  EXPECT_EQ(drain(*s),
            (std::vector<std::string>{batch(0), batch(1), batch(2), batch(3), batch(9)}));
}

TEST(DiskSpool, CorruptRecordInTheMiddleIsSkippedAndLaterOnesKept) {
  TempDir dir;
  {
    auto s = open(dir.path(), 1 << 20);
    for (int i = 0; i < 5; ++i) s->push(batch(i));
  }
  const auto seg = segments(dir.path()).at(0);
  {
    std::fstream f(seg, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(112 * 2 + 12 + 30);  // inside batch 2's payload
    f.put('#');
  }
  std::vector<std::string> warnings;
  auto s = open(dir.path(), 1 << 20, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("112 corrupt bytes at offset 224"), std::string::npos) << warnings[0];
  EXPECT_EQ(drain(*s), (std::vector<std::string>{batch(0), batch(1), batch(3), batch(4)}));
}

TEST(DiskSpool, GarbageFilesAreIgnoredWithAWarning) {
  TempDir dir;
  {
    auto s = open(dir.path(), 1 << 20);
    s->push(batch(1));
  }
  std::ofstream(dir.sub("notes.txt")) << "hello";
  std::ofstream(dir.sub("seg-x.log")) << "nope";
  {
    std::mt19937 rng(7);
    std::ofstream f(dir.sub("seg-00000000000000000099.log"), std::ios::binary);
    for (int i = 0; i < 5000; ++i) f.put(static_cast<char>(rng()));
  }
  std::ofstream(dir.sub("head.tmp")) << "half a head";
  std::vector<std::string> warnings;
  auto s = open(dir.path(), 1 << 20, &warnings);
  EXPECT_EQ(drain(*s), std::vector<std::string>{batch(1)});
  EXPECT_EQ(warnings.size(), 3u);  // notes.txt, seg-x.log, garbage segment 99
  EXPECT_FALSE(fs::exists(dir.sub("head.tmp")));
  // New batches still land after everything that was there.
  s->push(batch(2));
  s.reset();
  s = open(dir.path(), 1 << 20);
  EXPECT_EQ(drain(*s), (std::vector<std::string>{batch(1), batch(2)}));
}

TEST(DiskSpool, CorruptHeadReplaysEverythingStillOnDisk) {
  TempDir dir;
  {
    auto s = open(dir.path(), 1 << 20);
    for (int i = 0; i < 4; ++i) s->push(batch(i));
    s->pop(1);
  }
  std::ofstream(dir.sub("head"), std::ios::trunc)
      << "netdiag-spool v1 head 0 999 dropped 5 crc 1\n";
  std::vector<std::string> warnings;
  auto s = open(dir.path(), 1 << 20, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("unreadable head"), std::string::npos);
  // At least once: the acknowledged batch 0 comes back rather than losing any.
  EXPECT_EQ(drain(*s), (std::vector<std::string>{batch(0), batch(1), batch(2), batch(3)}));
}

TEST(DiskSpool, MissingHeadReplaysEverythingStillOnDisk) {
  TempDir dir;
  {
    auto s = open(dir.path(), 1 << 20);
    for (int i = 0; i < 3; ++i) s->push(batch(i));
    s->pop(1);
  }
  fs::remove(dir.sub("head"));
  std::vector<std::string> warnings;
  auto s = open(dir.path(), 1 << 20, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("missing"), std::string::npos) << warnings[0];
  EXPECT_EQ(s->batches(), 3u);
}

TEST(DiskSpool, SegmentsRotateAndAcknowledgedOnesAreDeleted) {
  TempDir dir;
  const uint64_t max = 4 << 20;  // segments of 256 KiB
  constexpr int kTotal = 400;
  auto s = open(dir.path(), max);
  for (int i = 0; i < 100; ++i) s->push(batch(i, 20000));
  EXPECT_GE(segments(dir.path()).size(), 7u);
  s->pop(90);
  EXPECT_LE(segments(dir.path()).size(), 2u);
  EXPECT_EQ(*s->peek(0), batch(90, 20000));
  // Disk use stays near the bound however much goes through.
  for (int i = 100; i < kTotal; ++i) s->push(batch(i, 20000));
  uint64_t on_disk = 0;
  for (const auto& f : segments(dir.path())) on_disk += fs::file_size(f);
  EXPECT_LE(on_disk, max + (256 << 10));
  EXPECT_EQ(s->batches(), max / 20012);
  EXPECT_EQ(s->dropped(), kTotal - 90 - max / 20012);
  s.reset();
  s = open(dir.path(), max);
  EXPECT_EQ(*s->peek(0), batch(kTotal - static_cast<int>(max / 20012), 20000));
  // A smaller bound on reopen drops the oldest at once.
  s.reset();
  s = open(dir.path(), 20012 * 3);
  EXPECT_EQ(drain(*s), (std::vector<std::string>{batch(kTotal - 3, 20000), batch(kTotal - 2, 20000),
                                                 batch(kTotal - 1, 20000)}));
}

// Property: a crash can cut the log at any byte; reopening never fails and
// keeps exactly the records wholly before the cut.
TEST(DiskSpool, TruncationAtEveryOffsetKeepsTheCompleteRecords) {
  TempDir dir;
  const std::string master = dir.sub("master");
  std::vector<size_t> sizes = {0, 1, 7, 30, 200, 3};
  {
    auto s = open(master, 1 << 20);
    for (size_t i = 0; i < sizes.size(); ++i) s->push(batch(static_cast<int>(i), sizes[i]));
  }
  const std::string seg = segments(master).at(0);
  const auto total = fs::file_size(seg);
  for (uint64_t cut = 0; cut <= total; ++cut) {
    const std::string work = dir.sub("cut" + std::to_string(cut));
    fs::copy(master, work);
    fs::remove(fs::path(work) / "lock");
    fs::resize_file(segments(work).at(0), cut);
    std::vector<std::string> warnings;
    auto s = open(work, 1 << 20, &warnings);
    ASSERT_NE(s, nullptr);
    size_t expect = 0;
    uint64_t end = 0;
    while (expect < sizes.size() && end + 12 + sizes[expect] <= cut) end += 12 + sizes[expect++];
    ASSERT_EQ(s->batches(), expect) << "cut at " << cut;
    for (size_t i = 0; i < expect; ++i)
      EXPECT_EQ(*s->peek(i), batch(static_cast<int>(i), sizes[i]));
    EXPECT_EQ(warnings.empty(), cut == end) << "cut at " << cut;
    s.reset();
    fs::remove_all(work);
  }
}

// Property: random byte flips never crash the reader, and every record it
// returns is one that was written.
TEST(DiskSpool, RandomCorruptionNeverInventsRecords) {
  TempDir dir;
  std::mt19937 rng(1234);
  std::set<std::string> written;
  const std::string master = dir.sub("master");
  {
    auto s = open(master, 1 << 20);
    for (int i = 0; i < 40; ++i) {
      s->push(batch(i, 1 + rng() % 300));
      written.insert(*s->peek(static_cast<size_t>(i)));
    }
  }
  const std::string seg_name = fs::path(segments(master).at(0)).filename().string();
  for (int trial = 0; trial < 200; ++trial) {
    const std::string work = dir.sub("t" + std::to_string(trial));
    fs::copy(master, work);
    fs::remove(fs::path(work) / "lock");
    const std::string seg = (fs::path(work) / seg_name).string();
    const auto size = fs::file_size(seg);
    {
      std::fstream f(seg, std::ios::in | std::ios::out | std::ios::binary);
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < flips; ++k) {
        f.seekp(static_cast<std::streamoff>(rng() % size));
        f.put(static_cast<char>(rng()));
      }
    }
    std::vector<std::string> warnings;
    auto s = open(work, 1 << 20, &warnings);
    ASSERT_NE(s, nullptr);
    for (const auto& b : drain(*s)) EXPECT_TRUE(written.count(b)) << "invented a record";
    s.reset();
    fs::remove_all(work);
  }
}

}  // namespace
}  // namespace netdiag::collector
