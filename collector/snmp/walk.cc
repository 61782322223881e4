#include "collector/snmp/walk.h"

#include <algorithm>

namespace netdiag::collector::snmp {

BulkWalk::BulkWalk(std::vector<Oid> columns, size_t max_rows) : max_rows_(max_rows) {
  for (Oid& c : columns) {
    Column col;
    col.last = c;
    col.root = std::move(c);
    columns_.push_back(std::move(col));
  }
}

std::vector<Oid> BulkWalk::nextRequest() const {
  std::vector<Oid> out;
  if (failed_) return out;
  for (const Column& c : columns_) {
    if (c.open) out.push_back(c.last);
  }
  return out;
}

bool BulkWalk::done() const {
  return failed_ ||
         std::none_of(columns_.begin(), columns_.end(), [](const Column& c) { return c.open; });
}

std::string BulkWalk::feed(const std::vector<Varbind>& response) {
  if (done()) return "";
  std::vector<Column*> open;
  for (Column& c : columns_) {
    if (c.open) open.push_back(&c);
  }
  // Repetitions come row-major: the open columns in request order, again
  // and again; a response cut short to fit may end mid-row.
  std::vector<bool> ended(open.size(), false);
  bool progress = false;
  for (size_t i = 0; i < response.size(); ++i) {
    const size_t k = i % open.size();
    Column& col = *open[k];
    if (ended[k]) continue;
    const Varbind& vb = response[i];
    if (vb.type == Varbind::Type::kEndOfMibView || !oidUnder(vb.oid, col.root)) {
      ended[k] = true;
      col.open = false;
      progress = true;
      continue;
    }
    if (!(col.last < vb.oid)) {
      failed_ = true;
      return "OID " + oidText(vb.oid) + " does not follow " + oidText(col.last) +
             " (the agent returned OIDs out of order)";
    }
    if (col.rows.size() >= max_rows_) {
      failed_ = true;
      return "table " + oidText(col.root) + " larger than " + std::to_string(max_rows_) +
             " rows (max_rows)";
    }
    col.last = vb.oid;
    col.rows.emplace(oidSuffix(vb.oid, col.root), vb);
    ++varbinds_;
    progress = true;
  }
  if (!progress) {
    failed_ = true;
    return response.empty() ? "empty GETBULK response" : "GETBULK response made no progress";
  }
  return "";
}

}  // namespace netdiag::collector::snmp
