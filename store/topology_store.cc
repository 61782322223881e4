#include "store/topology_store.h"

#include <utility>

namespace netdiag::store {
namespace {

using topology::kNone;
using topology::LinkId;
using topology::NodeId;
using topology::PortId;
using topology::Topology;

Status saveError(const Status& s) {
  return Status::error("save topology snapshot: " + s.message());
}

Status loadError(int64_t id, std::string_view what) {
  std::string msg = "load topology snapshot " + std::to_string(id) + ": ";
  msg += what;
  return Status::error(std::move(msg));
}

// Binds one row, runs it and makes the statement ready for the next row.
template <typename... Values>
Status insertRow(Statement& stmt, const Values&... values) {
  auto s = stmt.bindAll(values...);
  if (s) s = stmt.run();
  stmt.reset();
  return s;
}

Status saveRows(Database& db, const Topology& topo, int64_t snapshot) {
  auto node_stmt = db.prepare(
      "INSERT INTO topology_node (snapshot_id, node_id, name, role, role_name, pod, addr, line) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  if (!node_stmt) return node_stmt.status();
  for (NodeId id = 0; id < topo.nodeCount(); ++id) {
    const auto& n = topo.node(id);
    auto s = insertRow(*node_stmt, snapshot, id, n.name, topology::roleName(n.role), n.role_name,
                       n.pod, n.addr, n.line);
    if (!s) return Status::error("node " + n.name + ": " + s.message());
  }

  auto port_stmt = db.prepare(
      "INSERT INTO topology_port (snapshot_id, port_id, node_id, name, addr) "
      "VALUES (?1, ?2, ?3, ?4, ?5)");
  if (!port_stmt) return port_stmt.status();
  for (PortId id = 0; id < topo.portCount(); ++id) {
    const auto& p = topo.port(id);
    auto s = insertRow(*port_stmt, snapshot, id, p.node, p.name, p.addr);
    if (!s) return Status::error("port " + topo.portRef(id) + ": " + s.message());
  }

  auto link_stmt = db.prepare(
      "INSERT INTO topology_link (snapshot_id, link_id, a_port, b_port, speed_gbps, line) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  if (!link_stmt) return link_stmt.status();
  for (LinkId id = 0; id < topo.linkCount(); ++id) {
    const auto& l = topo.link(id);
    auto s = insertRow(*link_stmt, snapshot, id, l.a, l.b, l.speed_gbps, l.line);
    if (!s) return Status::error("link " + std::to_string(id) + ": " + s.message());
  }
  return Status::ok();
}

constexpr std::string_view kSelectInfoSql =
    "SELECT id, label, name, created_at, node_count, port_count, link_count "
    "FROM topology_snapshot ";

SnapshotInfo infoFromRow(const Statement& stmt) {
  SnapshotInfo info;
  info.id = stmt.columnInt64(0);
  info.label = stmt.columnText(1);
  info.name = stmt.columnText(2);
  info.created_at =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(stmt.columnInt64(3)));
  info.node_count = stmt.columnInt64(4);
  info.port_count = stmt.columnInt64(5);
  info.link_count = stmt.columnInt64(6);
  return info;
}

Result<SnapshotInfo> readInfo(Database& db, int64_t id) {
  auto stmt = db.prepare(std::string(kSelectInfoSql) + "WHERE id = ?1");
  if (!stmt) return stmt.status();
  if (auto s = stmt->bindInt64(1, id); !s) return s;
  auto row = stmt->step();
  if (!row) return row.status();
  if (!*row) return Status::error("no such snapshot");
  return infoFromRow(*stmt);
}

// Reads the three row sets back through the builder, checking that the rows
// form the graph the counts promise: stored data may have been edited by
// hand or written by a buggy version.
Status loadRows(Database& db, const SnapshotInfo& info, Topology& topo) {
  auto nodes = db.prepare(
      "SELECT node_id, name, role_name, pod, addr, line, role FROM topology_node "
      "WHERE snapshot_id = ?1 ORDER BY node_id");
  if (!nodes) return nodes.status();
  if (auto s = nodes->bindInt64(1, info.id); !s) return s;
  for (int64_t expect = 0;; ++expect) {
    auto row = nodes->step();
    if (!row) return row.status();
    if (!*row) break;
    if (nodes->columnInt64(0) != expect) {
      return Status::error("node ids are not dense at " + std::to_string(expect));
    }
    topology::Node n;
    n.name = nodes->columnText(1);
    n.role_name = nodes->columnText(2);
    if (!nodes->columnIsNull(3)) n.pod = nodes->columnInt64(3);
    n.addr = nodes->columnText(4);
    n.line = static_cast<uint32_t>(nodes->columnInt64(5));
    // From the canonical column: a Topology built in memory may set role
    // without role_name.
    n.role = topology::roleFromName(nodes->columnText(6));
    if (topo.addNode(std::move(n)) == kNone) {
      return Status::error("duplicate node name at id " + std::to_string(expect));
    }
  }
  auto ports = db.prepare(
      "SELECT port_id, node_id, name, addr FROM topology_port "
      "WHERE snapshot_id = ?1 ORDER BY port_id");
  if (!ports) return ports.status();
  if (auto s = ports->bindInt64(1, info.id); !s) return s;
  for (int64_t expect = 0;; ++expect) {
    auto row = ports->step();
    if (!row) return row.status();
    if (!*row) break;
    int64_t node = ports->columnInt64(1);
    if (ports->columnInt64(0) != expect || node < 0 ||
        static_cast<uint64_t>(node) >= topo.nodeCount()) {
      return Status::error("bad port row at id " + std::to_string(expect));
    }
    PortId id = topo.addPort(static_cast<NodeId>(node), ports->columnText(2));
    if (id != static_cast<PortId>(expect)) {
      return Status::error("duplicate port " + topo.portRef(id));
    }
    topo.mutablePort(id).addr = ports->columnText(3);
  }

  auto links = db.prepare(
      "SELECT link_id, a_port, b_port, speed_gbps, line FROM topology_link "
      "WHERE snapshot_id = ?1 ORDER BY link_id");
  if (!links) return links.status();
  if (auto s = links->bindInt64(1, info.id); !s) return s;
  const auto port_ok = [&](int64_t p) {
    return p >= 0 && static_cast<uint64_t>(p) < topo.portCount() &&
           topo.port(static_cast<PortId>(p)).link == kNone;
  };
  for (int64_t expect = 0;; ++expect) {
    auto row = links->step();
    if (!row) return row.status();
    if (!*row) break;
    int64_t a = links->columnInt64(1);
    int64_t b = links->columnInt64(2);
    if (links->columnInt64(0) != expect || a == b || !port_ok(a) || !port_ok(b)) {
      return Status::error("bad link row at id " + std::to_string(expect));
    }
    topo.addLink(static_cast<PortId>(a), static_cast<PortId>(b), links->columnDouble(3),
                 static_cast<uint32_t>(links->columnInt64(4)));
  }

  if (std::cmp_not_equal(topo.nodeCount(), info.node_count) ||
      std::cmp_not_equal(topo.portCount(), info.port_count) ||
      std::cmp_not_equal(topo.linkCount(), info.link_count)) {
    return Status::error("row counts do not match the snapshot header");
  }
  return Status::ok();
}

}  // namespace

Result<int64_t> saveTopology(Database& db, const Topology& topo, std::string_view label,
                             std::chrono::system_clock::time_point created_at) {
  // One transaction: all rows or none, and one fsync instead of one per row.
  auto txn = Transaction::begin(db);
  if (!txn) return saveError(txn.status());

  auto header = db.prepare(
      "INSERT INTO topology_snapshot "
      "(label, name, created_at, node_count, port_count, link_count) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  if (!header) return saveError(header.status());
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(created_at.time_since_epoch());
  if (auto s = insertRow(*header, label, topo.name, ms.count(), topo.nodeCount(), topo.portCount(),
                         topo.linkCount());
      !s) {
    return saveError(s);
  }
  const int64_t id = db.lastInsertRowId();

  if (auto s = saveRows(db, topo, id); !s) return saveError(s);
  if (auto s = txn->commit(); !s) return saveError(s);
  return id;
}

Result<Topology> loadTopology(Database& db, int64_t snapshot_id) {
  // A read transaction so the header and rows come from one version of the
  // database even while the daemon saves another snapshot.
  auto txn = Transaction::begin(db, Transaction::Mode::kDeferred);
  if (!txn) return loadError(snapshot_id, txn.message());
  auto info = readInfo(db, snapshot_id);
  if (!info) return loadError(snapshot_id, info.message());

  Topology topo;
  topo.name = info->name;
  if (auto s = loadRows(db, *info, topo); !s) return loadError(snapshot_id, s.message());
  topo.finalize();
  return topo;
}

Result<std::optional<int64_t>> latestTopologySnapshot(Database& db) {
  auto stmt = db.prepare("SELECT max(id) FROM topology_snapshot");
  if (!stmt) return stmt.status();
  auto row = stmt->step();
  if (!row) return row.status();
  if (!*row || stmt->columnIsNull(0)) return std::optional<int64_t>();
  return std::optional<int64_t>(stmt->columnInt64(0));
}

Result<std::vector<SnapshotInfo>> listTopologySnapshots(Database& db) {
  auto stmt = db.prepare(std::string(kSelectInfoSql) + "ORDER BY id");
  if (!stmt) return stmt.status();
  std::vector<SnapshotInfo> out;
  for (;;) {
    auto row = stmt->step();
    if (!row) return row.status();
    if (!*row) break;
    out.push_back(infoFromRow(*stmt));
  }
  return out;
}

}  // namespace netdiag::store
