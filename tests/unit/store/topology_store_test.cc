#include "store/topology_store.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "store/migrations.h"
#include "store/sqlite.h"
#include "tests/unit/store/store_fixture.h"

namespace netdiag::store {
namespace {

namespace fs = std::filesystem;
using topology::Node;
using topology::Role;
using topology::Topology;

Node makeNode(std::string name, std::string role_name, std::optional<int64_t> pod,
              std::string addr = {}, uint32_t line = 0) {
  Node n;
  n.name = std::move(name);
  n.role = topology::roleFromName(role_name);
  n.role_name = std::move(role_name);
  n.pod = pod;
  n.addr = std::move(addr);
  n.line = line;
  return n;
}

// Two hosts, two leaves, a spine and a firewall (an unknown role word), with
// and without pods, addresses and speeds, and one unlinked port.
Topology smallFabric(std::string name = "lab") {
  Topology t;
  t.name = std::move(name);
  auto h0 = t.addNode(makeNode("h0", "host", 0, "10.0.0.1", 3));
  auto h1 = t.addNode(makeNode("h1", "host", 1, "10.0.1.1", 4));
  auto l0 = t.addNode(makeNode("leaf0", "leaf", 0));
  auto l1 = t.addNode(makeNode("leaf1", "leaf", 1, "", 6));
  auto s0 = t.addNode(makeNode("spine0", "spine", std::nullopt, "192.168.0.1"));
  auto fw = t.addNode(makeNode("fw0", "firewall", std::nullopt));

  auto h0p = t.addPort(h0, "eth0");
  auto h1p = t.addPort(h1, "eth0");
  auto l0d = t.addPort(l0, "Ethernet1/1");
  auto l0u = t.addPort(l0, "Ethernet1/49");
  auto l1d = t.addPort(l1, "Ethernet1/1");
  auto l1u = t.addPort(l1, "Ethernet1/49");
  auto s0a = t.addPort(s0, "swp1");
  auto s0b = t.addPort(s0, "swp2");
  auto s0c = t.addPort(s0, "swp3");
  auto fwp = t.addPort(fw, "ge-0/0/0");
  t.addPort(fw, "ge-0/0/1");  // unlinked
  t.mutablePort(h0p).addr = "10.0.0.1";
  t.mutablePort(l0d).addr = "10.0.0.254";

  t.addLink(h0p, l0d, 400, 10);
  t.addLink(h1p, l1d, 400.5, 11);
  t.addLink(l0u, s0a, 800, 12);
  t.addLink(s0b, l1u);  // unknown speed
  t.addLink(fwp, s0c, 100);
  t.finalize();
  return t;
}

void expectSameTopology(const Topology& want, const Topology& got) {
  EXPECT_EQ(want.name, got.name);
  ASSERT_EQ(want.nodeCount(), got.nodeCount());
  ASSERT_EQ(want.portCount(), got.portCount());
  ASSERT_EQ(want.linkCount(), got.linkCount());
  for (topology::NodeId i = 0; i < want.nodeCount(); ++i) {
    const auto& a = want.node(i);
    const auto& b = got.node(i);
    EXPECT_EQ(a.name, b.name) << i;
    EXPECT_EQ(a.role, b.role) << a.name;
    EXPECT_EQ(a.role_name, b.role_name) << a.name;
    EXPECT_EQ(a.pod, b.pod) << a.name;
    EXPECT_EQ(a.addr, b.addr) << a.name;
    EXPECT_EQ(a.line, b.line) << a.name;
    EXPECT_EQ(got.findNode(a.name), i);
  }
  for (topology::PortId i = 0; i < want.portCount(); ++i) {
    EXPECT_EQ(want.port(i).node, got.port(i).node) << i;
    EXPECT_EQ(want.port(i).name, got.port(i).name) << i;
    EXPECT_EQ(want.port(i).link, got.port(i).link) << i;
    EXPECT_EQ(want.port(i).addr, got.port(i).addr) << i;
    EXPECT_EQ(got.findPort(want.portRef(i)), i);
  }
  for (topology::LinkId i = 0; i < want.linkCount(); ++i) {
    EXPECT_EQ(want.link(i).a, got.link(i).a) << i;
    EXPECT_EQ(want.link(i).b, got.link(i).b) << i;
    EXPECT_EQ(want.link(i).speed_gbps, got.link(i).speed_gbps) << i;
    EXPECT_EQ(want.link(i).line, got.link(i).line) << i;
  }
  for (topology::DirLinkId d = 0; d < want.dirLinkCount(); ++d) {
    EXPECT_EQ(want.dirLinkName(d), got.dirLinkName(d)) << d;
    EXPECT_EQ(got.findDirLink(want.dirLinkName(d)), d);
  }
  for (topology::NodeId n = 0; n < want.nodeCount(); ++n) {
    auto wo = want.outLinks(n);
    auto go = got.outLinks(n);
    EXPECT_EQ(std::vector(wo.begin(), wo.end()), std::vector(go.begin(), go.end())) << n;
  }
}

Database openMigrated(const std::string& path) {
  auto db = openAndMigrate(path);
  EXPECT_TRUE(db) << db.message();
  return std::move(db).value();
}

TEST(TopologyStore, RoundTripKeepsIdsNamesRolesPodsAddressesAndSpeeds) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  Topology original = smallFabric();
  auto id = saveTopology(db, original, "initial");
  ASSERT_TRUE(id) << id.message();

  auto loaded = loadTopology(db, *id);
  ASSERT_TRUE(loaded) << loaded.message();
  expectSameTopology(original, *loaded);
  EXPECT_EQ(loaded->node(5).role, Role::kOther);
  EXPECT_EQ(loaded->node(5).role_name, "firewall");
  EXPECT_EQ(loaded->link(3).speed_gbps, 0);
}

TEST(TopologyStore, RoundTripSurvivesReopen) {
  TempDir dir;
  Topology original = smallFabric();
  int64_t id = 0;
  {
    auto db = openMigrated(dir.file("fabric.db"));
    auto saved = saveTopology(db, original, "x");
    ASSERT_TRUE(saved) << saved.message();
    id = *saved;
  }
  auto db = Database::open(dir.file("fabric.db"), {.create_if_missing = false});
  ASSERT_TRUE(db) << db.message();
  auto loaded = loadTopology(*db, id);
  ASSERT_TRUE(loaded) << loaded.message();
  expectSameTopology(original, *loaded);
}

TEST(TopologyStore, CanonicalRoleKeptWhenRoleNameIsEmpty) {
  // Generators may build nodes with an enum role and no role_name.
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  Topology t;
  Node n;
  n.name = "s1";
  n.role = Role::kSpine;
  t.addNode(n);
  t.finalize();
  auto id = saveTopology(db, t, "gen");
  ASSERT_TRUE(id) << id.message();
  auto loaded = loadTopology(db, *id);
  ASSERT_TRUE(loaded) << loaded.message();
  EXPECT_EQ(loaded->node(0).role, Role::kSpine);
  EXPECT_EQ(loaded->node(0).role_name, "");
}

TEST(TopologyStore, EmptyTopologyRoundTrips) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  Topology t;
  t.finalize();
  auto id = saveTopology(db, t, "empty");
  ASSERT_TRUE(id) << id.message();
  auto loaded = loadTopology(db, *id);
  ASSERT_TRUE(loaded) << loaded.message();
  EXPECT_EQ(loaded->nodeCount(), 0u);
}

TEST(TopologyStore, SnapshotsAreListedAndKeptApart) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));

  auto none = latestTopologySnapshot(db);
  ASSERT_TRUE(none) << none.message();
  EXPECT_FALSE(none->has_value());
  auto empty = listTopologySnapshots(db);
  ASSERT_TRUE(empty) << empty.message();
  EXPECT_TRUE(empty->empty());

  Topology first = smallFabric("first");
  Topology second;
  second.name = "second";
  auto a = second.addNode(makeNode("a", "leaf", 7));
  auto b = second.addNode(makeNode("b", "spine", std::nullopt));
  second.addLink(second.addPort(a, "p1"), second.addPort(b, "p1"), 100);
  second.finalize();

  using std::chrono::milliseconds;
  const std::chrono::system_clock::time_point t1(milliseconds(1'700'000'000'123));
  const std::chrono::system_clock::time_point t2(milliseconds(1'700'000'060'456));
  auto id1 = saveTopology(db, first, "before maintenance", t1);
  auto id2 = saveTopology(db, second, "after maintenance", t2);
  ASSERT_TRUE(id1) << id1.message();
  ASSERT_TRUE(id2) << id2.message();
  EXPECT_NE(*id1, *id2);

  auto latest = latestTopologySnapshot(db);
  ASSERT_TRUE(latest) << latest.message();
  EXPECT_EQ(*latest, std::optional<int64_t>(*id2));

  auto list = listTopologySnapshots(db);
  ASSERT_TRUE(list) << list.message();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, *id1);
  EXPECT_EQ((*list)[0].label, "before maintenance");
  EXPECT_EQ((*list)[0].name, "first");
  EXPECT_EQ((*list)[0].created_at, t1);
  EXPECT_EQ((*list)[0].node_count, 6);
  EXPECT_EQ((*list)[0].port_count, 11);
  EXPECT_EQ((*list)[0].link_count, 5);
  EXPECT_EQ((*list)[1].id, *id2);
  EXPECT_EQ((*list)[1].label, "after maintenance");
  EXPECT_EQ((*list)[1].created_at, t2);
  EXPECT_EQ((*list)[1].node_count, 2);

  auto l1 = loadTopology(db, *id1);
  auto l2 = loadTopology(db, *id2);
  ASSERT_TRUE(l1) << l1.message();
  ASSERT_TRUE(l2) << l2.message();
  expectSameTopology(first, *l1);
  expectSameTopology(second, *l2);
}

TEST(TopologyStore, UnknownSnapshotIsAnError) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  auto loaded = loadTopology(db, 42);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.message().find("42"), std::string::npos) << loaded.message();
  EXPECT_NE(loaded.message().find("no such snapshot"), std::string::npos) << loaded.message();
}

TEST(TopologyStore, InconsistentRowsAreRejectedOnLoad) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  auto id = saveTopology(db, smallFabric(), "x");
  ASSERT_TRUE(id) << id.message();
  ASSERT_TRUE(db.exec("UPDATE topology_link SET b_port = a_port WHERE link_id = 2"));
  auto loaded = loadTopology(db, *id);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.message().find("bad link row at id 2"), std::string::npos) << loaded.message();
}

TEST(TopologyStore, FailedSaveLeavesNothingBehind) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  // Make the link inserts fail after the header, nodes and ports went in.
  ASSERT_TRUE(
      db.exec("CREATE TRIGGER no_links BEFORE INSERT ON topology_link "
              "BEGIN SELECT RAISE(ABORT, 'links refused'); END"));
  auto id = saveTopology(db, smallFabric(), "doomed");
  ASSERT_FALSE(id);
  EXPECT_NE(id.message().find("links refused"), std::string::npos) << id.message();
  EXPECT_FALSE(db.inTransaction());
  auto list = listTopologySnapshots(db);
  ASSERT_TRUE(list) << list.message();
  EXPECT_TRUE(list->empty());
  auto rows = db.prepare("SELECT count(*) FROM topology_node");
  ASSERT_TRUE(rows) << rows.message();
  ASSERT_TRUE(rows->step().value());
  EXPECT_EQ(rows->columnInt64(0), 0);
}

// ---- connection settings ----

std::string pragmaText(Database& db, const std::string& pragma) {
  auto stmt = db.prepare("PRAGMA " + pragma);
  EXPECT_TRUE(stmt) << stmt.message();
  auto row = stmt->step();
  EXPECT_TRUE(row && *row) << pragma;
  return std::string(stmt->columnText(0));
}

TEST(Sqlite, OpenEnablesWalForeignKeysAndBusyTimeout) {
  TempDir dir;
  auto db = Database::open(dir.file("fabric.db"));
  ASSERT_TRUE(db) << db.message();
  EXPECT_EQ(pragmaText(*db, "journal_mode"), "wal");
  EXPECT_EQ(pragmaText(*db, "foreign_keys"), "1");
  EXPECT_EQ(pragmaText(*db, "synchronous"), "1");  // NORMAL
  EXPECT_EQ(pragmaText(*db, "busy_timeout"), "5000");

  // A second connection sees WAL too: the mode is stored in the file.
  auto other = Database::open(dir.file("fabric.db"), {.busy_timeout_ms = 250});
  ASSERT_TRUE(other) << other.message();
  EXPECT_EQ(pragmaText(*other, "journal_mode"), "wal");
  EXPECT_EQ(pragmaText(*other, "busy_timeout"), "250");
}

TEST(Sqlite, ReaderSeesCommittedDataWhileWriterHoldsLock) {
  TempDir dir;
  auto writer = openMigrated(dir.file("fabric.db"));
  auto id = saveTopology(writer, smallFabric(), "x");
  ASSERT_TRUE(id) << id.message();

  auto txn = Transaction::begin(writer);  // holds the write lock
  ASSERT_TRUE(txn) << txn.message();
  ASSERT_TRUE(writer.exec("DELETE FROM topology_snapshot"));

  auto reader = Database::open(dir.file("fabric.db"), {.busy_timeout_ms = 50});
  ASSERT_TRUE(reader) << reader.message();
  auto loaded = loadTopology(*reader, *id);
  ASSERT_TRUE(loaded) << loaded.message();  // WAL: readers are not blocked
  auto second = Transaction::begin(*reader);
  ASSERT_FALSE(second);  // but a second writer times out
  EXPECT_NE(second.message().find("locked"), std::string::npos) << second.message();
}

TEST(Sqlite, ForeignKeyCascadeDeletesSnapshotRows) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  auto id = saveTopology(db, smallFabric(), "x");
  ASSERT_TRUE(id) << id.message();
  ASSERT_TRUE(db.exec("DELETE FROM topology_snapshot"));
  auto rows = db.prepare(
      "SELECT (SELECT count(*) FROM topology_node) + (SELECT count(*) FROM topology_port) + "
      "(SELECT count(*) FROM topology_link)");
  ASSERT_TRUE(rows) << rows.message();
  ASSERT_TRUE(rows->step().value());
  EXPECT_EQ(rows->columnInt64(0), 0);
}

TEST(Sqlite, MissingDirectoryIsAClearError) {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/fabric.db");
  auto db = Database::open(path);
  ASSERT_FALSE(db);
  EXPECT_NE(db.message().find(path), std::string::npos) << db.message();
  EXPECT_NE(db.message().find("unable to open database file"), std::string::npos) << db.message();
  EXPECT_NE(db.message().find("does not exist"), std::string::npos) << db.message();
}

TEST(Sqlite, MissingFileWithoutCreateIsAnError) {
  TempDir dir;
  const std::string path = dir.file("typo.db");
  auto db = Database::open(path, {.create_if_missing = false});
  ASSERT_FALSE(db);
  EXPECT_NE(db.message().find(path), std::string::npos) << db.message();
  EXPECT_FALSE(fs::exists(path));
}

TEST(Sqlite, CorruptFileIsAnError) {
  TempDir dir;
  for (size_t size : {16u, 4096u}) {
    const std::string path = dir.file("garbage" + std::to_string(size) + ".db");
    {
      std::ofstream out(path, std::ios::binary);
      for (size_t i = 0; i < size; ++i) out.put(static_cast<char>((i * 7919 + 13) & 0xff));
    }
    auto db = Database::open(path);
    ASSERT_FALSE(db) << size;
    EXPECT_NE(db.message().find(path), std::string::npos) << db.message();
    EXPECT_NE(db.message().find("not a database"), std::string::npos) << db.message();
  }
}

TEST(Sqlite, StatementBindsAndReadsEveryType) {
  auto db = Database::open(":memory:");
  ASSERT_TRUE(db) << db.message();
  auto stmt = db->prepare("SELECT ?1, ?2, ?3, ?4, ?5");
  ASSERT_TRUE(stmt) << stmt.message();
  std::string text("with\0nul", 8);
  ASSERT_TRUE(stmt->bindAll(int64_t{1} << 40, 2.5, text, std::optional<int64_t>(), -3));
  ASSERT_TRUE(stmt->step().value());
  EXPECT_EQ(stmt->columnCount(), 5);
  EXPECT_EQ(stmt->columnInt64(0), int64_t{1} << 40);
  EXPECT_EQ(stmt->columnDouble(1), 2.5);
  EXPECT_EQ(stmt->columnText(2), text);
  EXPECT_TRUE(stmt->columnIsNull(3));
  EXPECT_EQ(stmt->columnInt64(4), -3);
  EXPECT_FALSE(stmt->step().value());

  stmt->reset();
  ASSERT_TRUE(stmt->bindInt64(1, 7));
  ASSERT_TRUE(stmt->step().value());
  EXPECT_EQ(stmt->columnInt64(0), 7);
  EXPECT_EQ(stmt->columnDouble(1), 2.5);  // other binds survive reset()

  EXPECT_FALSE(stmt->bindInt64(6, 0));  // out of range
  auto bad = db->prepare("SELEC 1");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.message().find("syntax error"), std::string::npos) << bad.message();
}

TEST(Sqlite, TransactionRollsBackUnlessCommitted) {
  auto db = Database::open(":memory:");
  ASSERT_TRUE(db) << db.message();
  ASSERT_TRUE(db->exec("CREATE TABLE t (x INTEGER)"));
  {
    auto txn = Transaction::begin(*db);
    ASSERT_TRUE(txn) << txn.message();
    ASSERT_TRUE(db->exec("INSERT INTO t VALUES (1)"));
  }
  {
    auto txn = Transaction::begin(*db);
    ASSERT_TRUE(txn) << txn.message();
    ASSERT_TRUE(db->exec("INSERT INTO t VALUES (2)"));
    ASSERT_TRUE(txn->commit());
    EXPECT_FALSE(txn->commit());  // only once
  }
  auto stmt = db->prepare("SELECT group_concat(x) FROM t");
  ASSERT_TRUE(stmt) << stmt.message();
  ASSERT_TRUE(stmt->step().value());
  EXPECT_EQ(stmt->columnText(0), "2");
}

// ---- migrations ----

TEST(Migrations, FreshDatabaseReachesLatestVersion) {
  TempDir dir;
  auto db = Database::open(dir.file("fabric.db"));
  ASSERT_TRUE(db) << db.message();
  EXPECT_EQ(schemaVersion(*db).value(), 0);
  ASSERT_TRUE(migrate(*db));
  EXPECT_EQ(schemaVersion(*db).value(), latestSchemaVersion());
  EXPECT_EQ(latestSchemaVersion(), migrations().back().version);
  EXPECT_GE(latestSchemaVersion(), 1);

  auto rows = db->prepare("SELECT version, description FROM schema_version ORDER BY version");
  ASSERT_TRUE(rows) << rows.message();
  for (const Migration& m : migrations()) {
    ASSERT_TRUE(rows->step().value());
    EXPECT_EQ(rows->columnInt64(0), m.version);
    EXPECT_EQ(rows->columnText(1), m.description);
  }
  EXPECT_FALSE(rows->step().value());
}

TEST(Migrations, MigrateIsIdempotent) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  auto id = saveTopology(db, smallFabric(), "kept");
  ASSERT_TRUE(id) << id.message();
  auto again = migrate(db);
  ASSERT_TRUE(again) << again.message();
  auto third = openAndMigrate(dir.file("fabric.db"));
  ASSERT_TRUE(third) << third.message();
  EXPECT_EQ(schemaVersion(db).value(), latestSchemaVersion());
  auto count = db.prepare("SELECT count(*) FROM schema_version");
  ASSERT_TRUE(count) << count.message();
  ASSERT_TRUE(count->step().value());
  EXPECT_EQ(count->columnInt64(0), static_cast<int64_t>(migrations().size()));
  EXPECT_TRUE(loadTopology(db, *id));
}

TEST(Migrations, RefusesDatabaseFromTheFuture) {
  TempDir dir;
  const std::string path = dir.file("fabric.db");
  {
    auto db = openMigrated(path);
    ASSERT_TRUE(db.exec("INSERT INTO schema_version VALUES (999, 'from the future', 'later')"));
  }
  auto db = openAndMigrate(path);
  ASSERT_FALSE(db);
  EXPECT_NE(db.message().find("999"), std::string::npos) << db.message();
  EXPECT_NE(db.message().find("newer"), std::string::npos) << db.message();
  EXPECT_NE(db.message().find(path), std::string::npos) << db.message();
}

TEST(Migrations, RefusesForeignDatabase) {
  TempDir dir;
  auto db = Database::open(dir.file("other.db"));
  ASSERT_TRUE(db) << db.message();
  ASSERT_TRUE(db->exec("CREATE TABLE someone_elses (x)"));
  auto s = migrate(*db);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("not a netdiag database"), std::string::npos) << s.message();
}

TEST(Migrations, AppendedMigrationAppliesAndFailedOneRollsBack) {
  TempDir dir;
  auto db = openMigrated(dir.file("fabric.db"));
  const int v = latestSchemaVersion();
  std::vector<Migration> list(migrations().begin(), migrations().end());
  list.push_back({v + 1, "next feature", "CREATE TABLE next_feature (id INTEGER PRIMARY KEY)"});
  list.push_back({v + 2, "broken", "CREATE TABLE half (x); CREATE TABLE oops syntax error"});

  auto s = migrate(db, list);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("migration " + std::to_string(v + 2) + " (broken)"), std::string::npos)
      << s.message();
  EXPECT_EQ(schemaVersion(db).value(), v + 1);  // the good one stayed
  EXPECT_TRUE(db.exec("SELECT * FROM next_feature"));
  EXPECT_FALSE(db.exec("SELECT * FROM half"));  // the bad one left nothing

  list.pop_back();
  EXPECT_TRUE(migrate(db, list));
  std::swap(list[list.size() - 1], list[list.size() - 2]);
  EXPECT_FALSE(migrate(db, list));  // out of order
}

}  // namespace
}  // namespace netdiag::store
