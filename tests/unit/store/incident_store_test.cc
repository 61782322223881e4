#include "store/incident_store.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "store/migrations.h"
#include "store/sqlite.h"
#include "store/topology_store.h"
#include "tests/unit/store/store_fixture.h"
#include "topology/model.h"

namespace netdiag::store {
namespace {

Database openMigrated(const std::string& path) {
  auto db = openAndMigrate(path);
  EXPECT_TRUE(db) << db.message();
  return std::move(db).value();
}

// An open link incident with every optional number unset.
IncidentRow linkIncident(std::string id, double opened_at, std::string link,
                         std::string kind = "link_loss") {
  IncidentRow r;
  r.id = std::move(id);
  r.kind = std::move(kind);
  r.link = std::move(link);
  r.opened_at = opened_at;
  r.updated_at = opened_at;
  r.report_json = R"({"id":")" + r.id + R"(","kind":")" + r.kind + R"("})";
  return r;
}

// Every column set, including the ones only some kinds use.
IncidentRow fullIncident() {
  IncidentRow r;
  r.id = "inc-17";
  r.kind = "link_loss";
  r.link = "leaf1:swp49->spine2:swp1";
  r.node = "leaf1";
  r.ports = R"(["leaf1:swp49","spine2:swp1"])";
  r.opened_at = 41.0;
  r.localized_at = 58.25;
  r.resolved_at = 600.5;
  r.confidence = 0.97;
  r.loss_ratio = 0.012;
  r.both_directions = true;
  r.report_json =
      R"({"id":"inc-17","kind":"link_loss","link":"leaf1:swp49->spine2:swp1","opened_at":41.0,)"
      R"("localized_at":58.25,"resolved_at":600.5,"confidence":0.97,"loss_ratio":0.012,)"
      R"("both_directions":true,"evidence":{"paths":["h0->h1"],"note":"ünïcode ok"}})";
  r.updated_at = 600.5;
  r.created_wall = 1'700'000'000'123;
  return r;
}

std::vector<std::string> ids(const std::vector<IncidentRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.id);
  return out;
}

// Builds an IncidentQuery: GCC's -Wmissing-field-initializers rejects
// partial designated initializers.
struct Q {
  IncidentQuery q;
  Q& open() {
    q.only_open = true;
    return *this;
  }
  Q& kind(std::string k) {
    q.kind = std::move(k);
    return *this;
  }
  Q& since(double t) {
    q.since = t;
    return *this;
  }
  Q& link(std::string l, bool exact = false) {
    q.link = std::move(l);
    q.link_exact = exact;
    return *this;
  }
  Q& newest() {
    q.newest_first = true;
    return *this;
  }
  Q& limit(int64_t n) {
    q.limit = n;
    return *this;
  }
  operator const IncidentQuery&() const { return q; }  // NOLINT: implicit by design
};

std::vector<std::string> queryIds(Database& db, const IncidentQuery& q) {
  auto rows = loadIncidents(db, q);
  EXPECT_TRUE(rows) << rows.message();
  return rows ? ids(*rows) : std::vector<std::string>{};
}

int64_t countRows(Database& db, std::string_view table) {
  auto stmt = db.prepare("SELECT count(*) FROM " + std::string(table));
  EXPECT_TRUE(stmt) << stmt.message();
  EXPECT_TRUE(stmt->step().value());
  return stmt->columnInt64(0);
}

topology::Topology twoNodeFabric() {
  topology::Topology t;
  t.name = "tiny";
  topology::Node a;
  a.name = "leaf1";
  a.role = topology::roleFromName("leaf");
  a.role_name = "leaf";
  topology::Node b = a;
  b.name = "spine2";
  b.role = topology::roleFromName("spine");
  b.role_name = "spine";
  auto na = t.addNode(a);
  auto nb = t.addNode(b);
  t.addLink(t.addPort(na, "swp49"), t.addPort(nb, "swp1"), 400);
  t.finalize();
  return t;
}

// ---- migration ----

TEST(IncidentStore, MigratesVersion1DatabaseAndKeepsTopologySnapshots) {
  TempDir dir;
  const std::string path = dir.file("fabric.db");
  int64_t snapshot = 0;
  {
    auto db = Database::open(path);
    ASSERT_TRUE(db) << db.message();
    ASSERT_TRUE(migrate(*db, migrations().first(1)));
    ASSERT_EQ(schemaVersion(*db).value(), 1);
    EXPECT_FALSE(db->exec("SELECT * FROM incident"));  // not there yet
    auto id = saveTopology(*db, twoNodeFabric(), "before upgrade");
    ASSERT_TRUE(id) << id.message();
    snapshot = *id;
  }
  auto db = openMigrated(path);
  EXPECT_EQ(schemaVersion(db).value(), 3);
  EXPECT_EQ(latestSchemaVersion(), 3);

  auto snapshots = listTopologySnapshots(db);
  ASSERT_TRUE(snapshots) << snapshots.message();
  ASSERT_EQ(snapshots->size(), 1u);
  EXPECT_EQ((*snapshots)[0].label, "before upgrade");
  auto topo = loadTopology(db, snapshot);
  ASSERT_TRUE(topo) << topo.message();
  EXPECT_NE(topo->findDirLink("leaf1:swp49->spine2:swp1"), topology::kNone);

  // The new tables work.
  ASSERT_TRUE(upsertIncidents(db, {linkIncident("inc-1", 1, "leaf1:swp49->spine2:swp1")}));
  ASSERT_TRUE(setState(db, kStateNextIncidentNumber, "2"));
  EXPECT_EQ(countRows(db, "incident"), 1);
  EXPECT_EQ(countRows(db, "analyzer_state"), 1);
}

TEST(IncidentStore, SchemaHasTheIndexes) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  auto stmt = db.prepare(
      "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'incident' "
      "AND sql IS NOT NULL ORDER BY name");
  ASSERT_TRUE(stmt) << stmt.message();
  std::vector<std::string> names;
  while (stmt->step().value()) names.emplace_back(stmt->columnText(0));
  EXPECT_EQ(names, (std::vector<std::string>{"incident_link", "incident_open", "incident_opened"}));

  // The open-incidents query is answered from the partial index.
  auto plan = db.prepare(
      "EXPLAIN QUERY PLAN SELECT id FROM incident WHERE resolved_at IS NULL "
      "ORDER BY opened_at, id");
  ASSERT_TRUE(plan) << plan.message();
  std::string detail;
  while (plan->step().value()) detail += std::string(plan->columnText(3)) + "\n";
  EXPECT_NE(detail.find("incident_open"), std::string::npos) << detail;
}

// ---- round trip and updates ----

TEST(IncidentStore, RoundTripKeepsEveryField) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  const IncidentRow full = fullIncident();

  IncidentRow sparse;  // every nullable column NULL
  sparse.id = "inc-18";
  sparse.kind = "host_unreachable";
  sparse.opened_at = 0;
  sparse.updated_at = 0;
  sparse.report_json = "{}";

  ASSERT_TRUE(upsertIncidents(db, {full, sparse}));
  auto rows = loadIncidents(db);
  ASSERT_TRUE(rows) << rows.message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0], sparse);  // opened at 0, first
  EXPECT_EQ((*rows)[1], full);

  auto one = loadIncident(db, "inc-17");
  ASSERT_TRUE(one) << one.message();
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ(**one, full);
  auto none = loadIncident(db, "inc-404");
  ASSERT_TRUE(none) << none.message();
  EXPECT_FALSE(none->has_value());

  // The stored NULLs are real NULLs, for other readers of the file.
  auto stmt = db.prepare(
      "SELECT count(*) FROM incident WHERE id = 'inc-18' AND link IS NULL AND node IS NULL "
      "AND ports IS NULL AND localized_at IS NULL AND resolved_at IS NULL "
      "AND confidence IS NULL AND loss_ratio IS NULL AND created_wall IS NULL "
      "AND both_directions = 0");
  ASSERT_TRUE(stmt) << stmt.message();
  ASSERT_TRUE(stmt->step().value());
  EXPECT_EQ(stmt->columnInt64(0), 1);
}

TEST(IncidentStore, ExtremeNumbersRoundTrip) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  IncidentRow r = linkIncident("inc-1", 1e-300, "a:1->b:2");
  r.loss_ratio = 0.1 + 0.2;  // not exactly representable in decimal
  r.confidence = -0.0;
  r.localized_at = std::numeric_limits<double>::infinity();
  r.updated_at = 1.7976931348623157e308;
  r.created_wall = -1;
  ASSERT_TRUE(upsertIncidents(db, {r}));
  auto got = loadIncident(db, "inc-1");
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ(**got, r);
}

TEST(IncidentStore, UpdateInPlaceMovesThroughStatesWithoutDuplicating) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  IncidentRow r = linkIncident("inc-3", 41, "leaf1:swp49->spine2:swp1");
  r.created_wall = 1000;
  r.confidence = 0.4;
  ASSERT_TRUE(upsertIncidents(db, {r}));
  EXPECT_EQ(queryIds(db, Q().open()), std::vector<std::string>{"inc-3"});

  // Localized: the analyzer sends the whole row again, without created_wall.
  r.localized_at = 58;
  r.confidence = 0.97;
  r.loss_ratio = 0.012;
  r.updated_at = 58;
  r.report_json = R"({"id":"inc-3","localized_at":58})";
  r.created_wall.reset();
  ASSERT_TRUE(upsertIncidents(db, {r}));
  auto got = loadIncident(db, "inc-3");
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ((*got)->localized_at, 58);
  EXPECT_EQ((*got)->confidence, 0.97);
  EXPECT_EQ((*got)->report_json, r.report_json);
  EXPECT_EQ((*got)->created_wall, 1000);  // kept from the first write
  EXPECT_TRUE((*got)->isOpen());

  // Resolved; a different created_wall does not replace the first one.
  r.resolved_at = 600;
  r.updated_at = 600;
  r.created_wall = 5000;
  r.link.reset();  // every other column is replaced, NULLs included
  ASSERT_TRUE(upsertIncidents(db, {r}));
  got = loadIncident(db, "inc-3");
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ((*got)->resolved_at, 600);
  EXPECT_EQ((*got)->updated_at, 600);
  EXPECT_EQ((*got)->created_wall, 1000);
  EXPECT_FALSE((*got)->link.has_value());
  EXPECT_FALSE((*got)->isOpen());

  EXPECT_EQ(countRows(db, "incident"), 1);
  EXPECT_TRUE(queryIds(db, Q().open()).empty());

  // A NULL created_wall is filled in by a later write that has one.
  IncidentRow late = linkIncident("inc-4", 70, "x:1->y:2");
  ASSERT_TRUE(upsertIncidents(db, {late}));
  late.created_wall = 7000;
  ASSERT_TRUE(upsertIncidents(db, {late}));
  EXPECT_EQ(loadIncident(db, "inc-4").value()->created_wall, 7000);
}

TEST(IncidentStore, SameIdTwiceInOneCallLastWins) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  IncidentRow a = linkIncident("inc-1", 1, "a:1->b:2");
  IncidentRow b = a;
  b.localized_at = 2;
  ASSERT_TRUE(upsertIncidents(db, {a, b}));
  EXPECT_EQ(countRows(db, "incident"), 1);
  EXPECT_EQ(loadIncident(db, "inc-1").value()->localized_at, 2);
  EXPECT_TRUE(upsertIncidents(db, {}));  // nothing to do
}

// ---- validation ----

TEST(IncidentStore, JsonIsStoredVerbatimButMustNotBeEmpty) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  // The store does not parse JSON: readers get back exactly what was written.
  IncidentRow bad = linkIncident("inc-1", 1, "a:1->b:2");
  bad.report_json = "{not json at all";
  bad.ports = "[unterminated";
  ASSERT_TRUE(upsertIncidents(db, {bad}));
  auto got = loadIncident(db, "inc-1");
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ((*got)->report_json, "{not json at all");
  EXPECT_EQ((*got)->ports, "[unterminated");

  // An empty report, id or kind is a bug: the whole call is refused, the
  // valid rows before it included.
  IncidentRow good = linkIncident("inc-2", 2, "a:1->b:2");
  IncidentRow empty = linkIncident("inc-3", 3, "a:1->b:2");
  empty.report_json.clear();
  auto s = upsertIncidents(db, {good, empty});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("inc-3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("report_json"), std::string::npos) << s.message();
  EXPECT_EQ(countRows(db, "incident"), 1);

  IncidentRow no_id = good;
  no_id.id.clear();
  EXPECT_FALSE(upsertIncidents(db, {no_id}));
  IncidentRow no_kind = good;
  no_kind.kind.clear();
  EXPECT_FALSE(upsertIncidents(db, {no_kind}));
  EXPECT_EQ(countRows(db, "incident"), 1);
}

TEST(IncidentStore, NanIsRefusedRatherThanStoredAsNull) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  IncidentRow r = linkIncident("inc-1", 1, "a:1->b:2");
  r.confidence = std::nan("");
  auto s = upsertIncidents(db, {r});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("confidence is NaN"), std::string::npos) << s.message();
  r.confidence.reset();
  r.opened_at = std::nan("");
  s = upsertIncidents(db, {r});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("opened_at is NaN"), std::string::npos) << s.message();
  EXPECT_EQ(countRows(db, "incident"), 0);
}

TEST(IncidentStore, UnmigratedDatabaseIsAnError) {
  TempDir dir;
  auto db = Database::open(dir.file("fabric.db"));
  ASSERT_TRUE(db) << db.message();
  auto rows = loadIncidents(*db);
  ASSERT_FALSE(rows);
  EXPECT_NE(rows.message().find("incident"), std::string::npos) << rows.message();
  EXPECT_FALSE(upsertIncidents(*db, {linkIncident("inc-1", 1, "a:1->b:2")}));
  EXPECT_FALSE(getState(*db, "k"));
}

// ---- queries ----

class IncidentQueries : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = openMigrated(dir_.file("fabric.db"));
    IncidentRow a = linkIncident("inc-1", 10, "leaf1:swp49->spine2:swp1");
    a.resolved_at = 50;
    IncidentRow b = linkIncident("inc-2", 20, "leaf2:swp49->spine2:swp2", "link_down");
    IncidentRow c = linkIncident("inc-3", 30, "spine2:swp1->leaf1:swp49");
    c.resolved_at = 35;
    IncidentRow d;
    d.id = "inc-4";
    d.kind = "host_unreachable";
    d.node = "h7";
    d.opened_at = 40;
    d.updated_at = 40;
    d.report_json = "{}";
    IncidentRow e = linkIncident("inc-5", 40, "leaf1:swp50->spine3:swp1");  // ties d on time
    // Written out of order: the query orders.
    ASSERT_TRUE(upsertIncidents(db_, {e, c, a, d, b}));
  }

  TempDir dir_;
  Database db_ = Database::open(":memory:").value();
};

using Ids = std::vector<std::string>;

TEST_F(IncidentQueries, AllOrderedByOpenedAtThenId) {
  EXPECT_EQ(queryIds(db_, {}), (Ids{"inc-1", "inc-2", "inc-3", "inc-4", "inc-5"}));
  EXPECT_EQ(queryIds(db_, Q().newest()), (Ids{"inc-5", "inc-4", "inc-3", "inc-2", "inc-1"}));
}

TEST_F(IncidentQueries, OnlyOpen) {
  EXPECT_EQ(queryIds(db_, Q().open()), (Ids{"inc-2", "inc-4", "inc-5"}));
}

TEST_F(IncidentQueries, Kind) {
  EXPECT_EQ(queryIds(db_, Q().kind("link_loss")), (Ids{"inc-1", "inc-3", "inc-5"}));
  EXPECT_EQ(queryIds(db_, Q().kind("host_unreachable")), (Ids{"inc-4"}));
  EXPECT_TRUE(queryIds(db_, Q().kind("link_")).empty());  // exact, not a prefix
  EXPECT_EQ(queryIds(db_, Q().open().kind("link_loss")), (Ids{"inc-5"}));
}

TEST_F(IncidentQueries, SinceMatchesOpenedOrResolvedAfter) {
  // inc-1 opened at 10 but resolved at 50; inc-2 opened at 20 and is still
  // open, so it does not match (documented).
  EXPECT_EQ(queryIds(db_, Q().since(40)), (Ids{"inc-1", "inc-4", "inc-5"}));
  EXPECT_EQ(queryIds(db_, Q().since(30)), (Ids{"inc-1", "inc-3", "inc-4", "inc-5"}));
  EXPECT_EQ(queryIds(db_, Q().since(0)).size(), 5u);
  EXPECT_TRUE(queryIds(db_, Q().since(51)).empty());
}

TEST_F(IncidentQueries, LinkSubstringOrExact) {
  EXPECT_EQ(queryIds(db_, Q().link("spine2")), (Ids{"inc-1", "inc-2", "inc-3"}));
  EXPECT_EQ(queryIds(db_, Q().link("leaf1:swp49")), (Ids{"inc-1", "inc-3"}));
  EXPECT_EQ(queryIds(db_, Q().link("leaf1:swp49->spine2:swp1", true)), (Ids{"inc-1"}));
  EXPECT_TRUE(queryIds(db_, Q().link("leaf1", true)).empty());
  // No LIKE wildcards: '%' and '_' are literal.
  EXPECT_TRUE(queryIds(db_, Q().link("%")).empty());
  EXPECT_TRUE(queryIds(db_, Q().link("leaf_")).empty());
  // Case-sensitive, like the names in the topology.
  EXPECT_TRUE(queryIds(db_, Q().link("SPINE2")).empty());
}

TEST_F(IncidentQueries, Limit) {
  EXPECT_EQ(queryIds(db_, Q().limit(2)), (Ids{"inc-1", "inc-2"}));
  EXPECT_EQ(queryIds(db_, Q().newest().limit(2)), (Ids{"inc-5", "inc-4"}));
  EXPECT_TRUE(queryIds(db_, Q().limit(0)).empty());
  EXPECT_EQ(queryIds(db_, Q().limit(100)).size(), 5u);
  EXPECT_EQ(queryIds(db_, Q().open().kind("link_loss").since(0).link("spine3").limit(1)),
            (Ids{"inc-5"}));
  auto negative = loadIncidents(db_, Q().limit(-1));
  ASSERT_FALSE(negative);
  EXPECT_NE(negative.message().find("negative limit"), std::string::npos);
}

TEST_F(IncidentQueries, ValuesAreBoundNotSpliced) {
  // A value that would break (or rewrite) concatenated SQL is just text.
  EXPECT_TRUE(queryIds(db_, Q().kind("x' OR '1'='1")).empty());
  EXPECT_TRUE(queryIds(db_, Q().link("'); DROP TABLE incident; --")).empty());
  EXPECT_TRUE(loadIncident(db_, "' OR 1=1 --").value() == std::nullopt);
  EXPECT_EQ(queryIds(db_, {}).size(), 5u);
}

// ---- restart, state and concurrency ----

TEST(IncidentStore, ReopeningTheFileKeepsIncidentsAndState) {
  TempDir dir;
  const std::string path = dir.file("fabric.db");
  const IncidentRow full = fullIncident();
  const IncidentRow open = linkIncident("inc-18", 590, "a:1->b:2");
  {
    auto db = openMigrated(path);
    ASSERT_TRUE(upsertIncidents(db, {full, open}));
    ASSERT_TRUE(setState(db, kStateNextIncidentNumber, "19"));
    ASSERT_TRUE(setState(db, kStateLastTelemetryTime, "600.5"));
  }  // the analyzer stops
  OpenOptions reader;
  reader.create_if_missing = false;
  auto db = openAndMigrate(path, reader);
  ASSERT_TRUE(db) << db.message();
  auto rows = loadIncidents(*db);
  ASSERT_TRUE(rows) << rows.message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0], full);
  EXPECT_EQ((*rows)[1], open);
  EXPECT_EQ(getState(*db, kStateNextIncidentNumber).value(), "19");
  EXPECT_EQ(getState(*db, kStateLastTelemetryTime).value(), "600.5");
  EXPECT_EQ(queryIds(*db, Q().open()), std::vector<std::string>{"inc-18"});
}

TEST(IncidentStore, StateKeyValue) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  auto missing = getState(db, "nope");
  ASSERT_TRUE(missing) << missing.message();
  EXPECT_FALSE(missing->has_value());

  ASSERT_TRUE(setState(db, "k", "v1"));
  ASSERT_TRUE(setState(db, "k", "v2"));  // replaces
  ASSERT_TRUE(setState(db, "empty", ""));
  ASSERT_TRUE(setState(db, "quote'key", "it's"));
  EXPECT_EQ(getState(db, "k").value(), "v2");
  EXPECT_EQ(getState(db, "empty").value(), "");  // present, empty: not nullopt
  EXPECT_EQ(getState(db, "quote'key").value(), "it's");
  EXPECT_EQ(countRows(db, "analyzer_state"), 3);
}

TEST(IncidentStore, WritesJoinTheCallersTransaction) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  {
    auto txn = Transaction::begin(db);
    ASSERT_TRUE(txn) << txn.message();
    ASSERT_TRUE(upsertIncidents(db, {linkIncident("inc-1", 1, "a:1->b:2")}));
    ASSERT_TRUE(setState(db, kStateNextIncidentNumber, "2"));
    EXPECT_TRUE(db.inTransaction());  // not committed behind the caller's back
  }                                   // dropped: rolled back, both
  EXPECT_EQ(countRows(db, "incident"), 0);
  EXPECT_FALSE(getState(db, kStateNextIncidentNumber).value().has_value());
  {
    auto txn = Transaction::begin(db);
    ASSERT_TRUE(txn) << txn.message();
    ASSERT_TRUE(upsertIncidents(db, {linkIncident("inc-1", 1, "a:1->b:2")}));
    ASSERT_TRUE(setState(db, kStateNextIncidentNumber, "2"));
    ASSERT_TRUE(txn->commit());
  }
  EXPECT_EQ(countRows(db, "incident"), 1);
  EXPECT_EQ(getState(db, kStateNextIncidentNumber).value(), "2");
}

TEST(IncidentStore, ReaderConnectionSeesOnlyCommittedData) {
  TempDir dir;
  const std::string path = dir.file("fabric.db");
  auto writer = openMigrated(path);
  OpenOptions ro;
  ro.create_if_missing = false;
  ro.busy_timeout_ms = 0;  // a reader must never need to wait in WAL mode
  auto reader = Database::open(path, ro);
  ASSERT_TRUE(reader) << reader.message();

  ASSERT_TRUE(upsertIncidents(writer, {linkIncident("inc-1", 1, "a:1->b:2")}));
  EXPECT_EQ(queryIds(*reader, {}), std::vector<std::string>{"inc-1"});

  {
    // The writer holds the write lock with an uncommitted change ...
    auto txn = Transaction::begin(writer);
    ASSERT_TRUE(txn) << txn.message();
    IncidentRow resolved = linkIncident("inc-1", 1, "a:1->b:2");
    resolved.resolved_at = 9;
    ASSERT_TRUE(upsertIncidents(writer, {resolved, linkIncident("inc-2", 2, "c:1->d:2")}));
    ASSERT_TRUE(setState(writer, kStateLastTelemetryTime, "9"));
    // ... and the reader still reads, without waiting, the committed state.
    EXPECT_EQ(queryIds(*reader, {}), std::vector<std::string>{"inc-1"});
    EXPECT_EQ(queryIds(*reader, Q().open()), std::vector<std::string>{"inc-1"});
    EXPECT_FALSE(getState(*reader, kStateLastTelemetryTime).value().has_value());
    ASSERT_TRUE(txn->commit());
  }
  EXPECT_EQ(queryIds(*reader, {}), (std::vector<std::string>{"inc-1", "inc-2"}));
  EXPECT_EQ(queryIds(*reader, Q().open()), std::vector<std::string>{"inc-2"});
  EXPECT_EQ(getState(*reader, kStateLastTelemetryTime).value(), "9");

  // A second writer waits for the lock rather than failing, then succeeds.
  auto second = Database::open(path);
  ASSERT_TRUE(second) << second.message();
  ASSERT_TRUE(upsertIncidents(*second, {linkIncident("inc-3", 3, "e:1->f:2")}));
  EXPECT_EQ(loadIncidents(writer).value().size(), 3u);
}

}  // namespace
}  // namespace netdiag::store
