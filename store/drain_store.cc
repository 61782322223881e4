#include "store/drain_store.h"

#include <cmath>

namespace netdiag::store {

Status appendDrainEvent(Database& db, const DrainEvent& e) {
  if (e.link.empty() || e.event.empty()) return Status::error("drain event: empty link or event");
  if (!std::isfinite(e.at)) return Status::error("drain event: time is not a number");
  auto stmt = db.prepare(
      "INSERT INTO drain_event (at, link, event, port, incident, actor, nonce, detail) "
      "VALUES (?1, ?2, ?3, NULLIF(?4, ''), NULLIF(?5, ''), NULLIF(?6, ''), NULLIF(?7, ''), "
      "NULLIF(?8, ''))");
  if (!stmt) return stmt.status();
  int i = 0;
  for (Status s :
       {stmt->bindDouble(++i, e.at), stmt->bindText(++i, e.link), stmt->bindText(++i, e.event),
        stmt->bindText(++i, e.port), stmt->bindText(++i, e.incident), stmt->bindText(++i, e.actor),
        stmt->bindText(++i, e.nonce), stmt->bindText(++i, e.detail)}) {
    if (!s) return s;
  }
  return stmt->run();
}

Result<std::vector<DrainEvent>> loadDrainEvents(Database& db, int64_t after_seq, int64_t limit,
                                                bool newest_first) {
  auto stmt = db.prepare(
      std::string("SELECT seq, at, link, event, ifnull(port, ''), ifnull(incident, ''), "
                  "ifnull(actor, ''), ifnull(nonce, ''), ifnull(detail, '') FROM drain_event "
                  "WHERE seq > ?1 ORDER BY seq ") +
      (newest_first ? "DESC" : "ASC") + " LIMIT ?2");
  if (!stmt) return stmt.status();
  if (auto s = stmt->bindInt64(1, after_seq); !s) return s;
  if (auto s = stmt->bindInt64(2, limit > 0 ? limit : -1); !s) return s;
  std::vector<DrainEvent> out;
  while (true) {
    auto row = stmt->step();
    if (!row) return row.status();
    if (!*row) break;
    DrainEvent e;
    e.seq = stmt->columnInt64(0);
    e.at = stmt->columnDouble(1);
    e.link = stmt->columnText(2);
    e.event = stmt->columnText(3);
    e.port = stmt->columnText(4);
    e.incident = stmt->columnText(5);
    e.actor = stmt->columnText(6);
    e.nonce = stmt->columnText(7);
    e.detail = stmt->columnText(8);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace netdiag::store
