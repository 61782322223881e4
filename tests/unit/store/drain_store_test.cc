// The drain audit table: appended in order, read back whole or newest first,
// empty fields as NULL and back, and what is certainly a bug refused.

#include "store/drain_store.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "store/migrations.h"
#include "tests/unit/store/store_fixture.h"

namespace netdiag::store {
namespace {

TEST(DrainStore, AppendsInOrderAndReadsBackNewestFirst) {
  TempDir dir;
  auto db = openAndMigrate(dir.file("fabric.db"));
  ASSERT_TRUE(db) << db.message();
  DrainEvent issued{0,
                    100.5,
                    "leaf1:swp3->spine1:swp1",
                    "issued",
                    "leaf1:swp3",
                    "inc-7",
                    "policy auto",
                    "123",
                    R"({"decision":{"verdict":"act"}})"};
  DrainEvent frozen{0, 101, "-", "frozen", "", "", "operator ann", "", ""};
  ASSERT_TRUE(appendDrainEvent(*db, issued));
  ASSERT_TRUE(appendDrainEvent(*db, frozen));
  auto all = loadDrainEvents(*db);
  ASSERT_TRUE(all) << all.message();
  ASSERT_EQ(all->size(), 2u);
  issued.seq = 1;
  frozen.seq = 2;
  EXPECT_EQ((*all)[0], issued);
  EXPECT_EQ((*all)[1], frozen) << "empty fields come back empty";
  auto latest = loadDrainEvents(*db, 0, 1, true);
  ASSERT_TRUE(latest);
  ASSERT_EQ(latest->size(), 1u);
  EXPECT_EQ((*latest)[0].event, "frozen");
  auto after = loadDrainEvents(*db, 1);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->size(), 1u);

  auto event = [](double at, const char* link, const char* what) {
    DrainEvent e;
    e.at = at;
    e.link = link;
    e.event = what;
    return e;
  };
  EXPECT_FALSE(appendDrainEvent(*db, event(1, "", "issued")));
  EXPECT_FALSE(appendDrainEvent(*db, event(1, "l", "")));
  EXPECT_FALSE(appendDrainEvent(*db, event(std::numeric_limits<double>::quiet_NaN(), "l", "x")));
  EXPECT_EQ(loadDrainEvents(*db)->size(), 2u);
}

}  // namespace
}  // namespace netdiag::store
