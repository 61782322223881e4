#include "cli/output.h"

#include <gtest/gtest.h>

namespace netdiag::cli {
namespace {

TEST(UtcTimestamp, FormatsUtc) {
  EXPECT_EQ(utcTimestamp(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(utcTimestamp(1714564800), "2024-05-01T12:00:00Z");
}

// gmtime() returns one static buffer shared by every thread. Formatting a
// log line must leave what another thread got from gmtime() alone, else two
// threads logging at once can print each other's time.
TEST(UtcTimestamp, LeavesTheSharedGmtimeBufferAlone) {
  const std::time_t other = 365 * 86400;  // 1971
  const std::tm* shared = std::gmtime(&other);
  ASSERT_NE(shared, nullptr);
  ASSERT_EQ(shared->tm_year, 71);
  EXPECT_EQ(utcTimestamp(1714564800), "2024-05-01T12:00:00Z");
  EXPECT_EQ(shared->tm_year, 71);
}

TEST(WithCommas, GroupsThousands) {
  EXPECT_EQ(withCommas(0), "0");
  EXPECT_EQ(withCommas(102400), "102,400");
  EXPECT_EQ(withCommas(1000000), "1,000,000");
}

}  // namespace
}  // namespace netdiag::cli
