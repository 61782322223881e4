#pragma once

// The telemetry log of formats.md §2 as JSON Lines: a writer (RecordSink
// that prints one object a line) and a reader that checks every record
// against the topology and reports bad lines with their numbers.

#include <cstdint>
#include <istream>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::telemetry {

// Writes records as JSON Lines, compact, in the contract's field names:
// optional fields only when set (lost_fwd/lost_rev, RTTs when not NaN,
// path/reply_path when non-empty, path_partial only when true), numbers in
// shortest round-trip form. A non-finite double is written as null. Buffers
// about 1 MiB before each write to `out`; flush() or destroy to push the
// rest. Not thread-safe.
class JsonlWriter : public RecordSink {
 public:
  JsonlWriter(const topology::Topology& topo, std::ostream& out);
  ~JsonlWriter() override;
  void onProbe(const ProbeRecord& r) override;
  void onPort(const PortRecord& r) override;
  void onLldp(const LldpRecord& r) override;
  void flush();
  uint64_t linesWritten() const { return lines_; }

 private:
  void endLine();
  void appendPortRef(topology::PortId p);
  void appendPath(std::string_view key, const std::vector<topology::DirLinkId>& path);
  const topology::Topology& topo_;
  std::ostream& out_;
  std::string buf_;
  uint64_t lines_ = 0;
};

// netdiag's own limits where the contract sets none (docs/formats.md,
// "netdiag limits"). A line longer than kMaxLineBytes (not counting its
// '\n') is a bad line, skipped without being held in memory: the longest
// real record, a probe whose path and reply_path cross a few dozen ports,
// is a few kilobytes. A probe record with more than kMaxProbesPerRecord
// probes sent is kept but counted and reported as implausible: our prober
// sends at most a few hundred probes a second per host port (the planner's
// cap is 400), so even a 60 s window holds 24,000; a million in one record
// is a prober bug or a hostile writer (sent = 4.29e9 would swamp every other
// flow's evidence on its path).
inline constexpr size_t kMaxLineBytes = size_t{1} << 20;
inline constexpr uint64_t kMaxProbesPerRecord = 1'000'000;

struct BadLine {
  uint64_t line = 0;
  std::string message;  // what is wrong, naming the field or value
};

struct ReadStats {
  uint64_t lines = 0;                      // lines read, blank ones included
  uint64_t records = 0;                    // records handed to the sink
  uint64_t bad = 0;                        // invalid JSON or records that break the contract
  uint64_t unknown_kind = 0;               // counted and skipped, per the contract
  uint64_t future = 0;                     // beyond ReadOptions::max_future_s: counted and skipped
  uint64_t implausible = 0;                // valid and kept, but beyond a netdiag limit (above)
  std::vector<BadLine> first_bad;          // the first kMaxBadLinesKept of them
  std::vector<BadLine> first_future;       // likewise
  std::vector<BadLine> first_implausible;  // likewise
  static constexpr size_t kMaxBadLinesKept = 1000;
};

struct ReadOptions {
  bool strict = false;  // stop at the first bad or future line
  // A log has no clock but its own, so "the future" is relative to it: a
  // valid record stamped more than this beyond the newest `t` accepted so
  // far is skipped and counted as future (one bad clock must not move the
  // log's time for every record after it). Infinity: no bound.
  double max_future_s = std::numeric_limits<double>::infinity();
};

// Reads a log from `in`, handing each valid record to `sink` in file order.
// Returns false only when `strict` stopped at a bad or future line
// (stats.first_bad or stats.first_future says which) or the stream failed;
// an implausible record does not stop it (the contract allows it).
//
// Lines are numbered from 1; blank lines (whitespace only, CRLF endings
// included) are counted in stats.lines and skipped silently. A UTF-8 BOM at
// the start of the stream is skipped. Each line is parsed and fully
// validated as JSON (simdjson DOM parser, reused across lines); a line
// longer than kMaxLineBytes is bad and skipped unread, so the reader holds
// at most about 2 x kMaxLineBytes whatever the input. Leniencies beyond the
// contract: an optional field whose value is null counts as absent, and an
// integer field accepts a number with an integral value (50.0).
// `lost_fwd`/`lost_rev` may come alone (then it must be <= lost); when both
// come they must sum to `lost`.
// A record handed to the sink is valid only during the call (the reader
// reuses it). Counts are added to `stats` (pass a fresh one per log); line
// numbers in first_bad count from 1 in each call. Not thread-safe per call;
// concurrent calls with distinct streams, sinks and stats are fine.
bool readJsonl(std::istream& in, const topology::Topology& topo, RecordSink& sink, ReadStats& stats,
               const ReadOptions& options = {});

namespace detail {
// Appends `s` as the inside of a JSON string: quotes, backslashes and
// control characters escaped; bytes that are not well-formed UTF-8 become
// U+FFFD so the output is always valid JSON.
void appendJsonEscaped(std::string& out, std::string_view s);
}  // namespace detail

}  // namespace netdiag::telemetry
