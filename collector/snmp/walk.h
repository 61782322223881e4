#pragma once

// A GETBULK walk of table columns, as a state machine that knows nothing of
// the transport: it says which columns to ask for next and from where,
// takes each response and checks it. A response is trusted for nothing:
//   - a column ends where the agent leaves its subtree or says
//     endOfMibView; varbinds past that are ignored;
//   - OIDs must grow within a column (an agent that goes back or repeats
//     would loop the walk forever): the walk fails, naming the OID;
//   - a response that makes no progress on any open column fails;
//   - a column may hold at most max_rows rows: past that the walk fails
//     ("table larger than ..."), so a hostile or huge table costs bounded
//     memory and time.
// Rows are kept by index (the sub-identifiers after the column's OID).
//
// Thread-safety: none; one walk per target poll.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "collector/snmp/oid.h"

namespace netdiag::collector::snmp {

class BulkWalk {
 public:
  BulkWalk(std::vector<Oid> columns, size_t max_rows);

  // The varbinds of the next GETBULK (one per open column, each the last
  // OID seen in it, or the column itself); empty when the walk is done.
  std::vector<Oid> nextRequest() const;
  // Takes the response to nextRequest() (the repeaters only: the caller
  // strips non-repeaters). "" or what was wrong; after an error the walk is
  // done and failed.
  std::string feed(const std::vector<Varbind>& response);

  bool done() const;
  bool failed() const { return failed_; }
  size_t columns() const { return columns_.size(); }
  // Column c's rows by index.
  const std::map<Oid, Varbind>& rows(size_t c) const { return columns_[c].rows; }
  size_t varbinds() const { return varbinds_; }

 private:
  struct Column {
    Oid root;
    Oid last;  // the last OID seen (the root until one is)
    bool open = true;
    std::map<Oid, Varbind> rows;
  };
  std::vector<Column> columns_;
  size_t max_rows_;
  size_t varbinds_ = 0;
  bool failed_ = false;
};

}  // namespace netdiag::collector::snmp
