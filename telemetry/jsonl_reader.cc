#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <tuple>
#include <utility>

#include <simdjson.h>

#include "telemetry/jsonl.h"
#include "topology/display_text.h"
#include "topology/port_index.h"

namespace netdiag::telemetry {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using topology::DirLinkId;
using topology::kNone;
using topology::PortId;

// The fields the reader knows. Everything else is ignored.
enum class Key : uint8_t {
  kT,
  kKind,
  kSrc,
  kDst,
  kFlow,
  kWindowS,
  kSent,
  kLost,
  kLostFwd,
  kLostRev,
  kRttP50,
  kRttP99,
  kPath,
  kPathPartial,
  kReplyPath,
  kPort,
  kOperUp,
  kRxPackets,
  kTxPackets,
  kRxErrors,
  kRxCrcErrors,
  kRxDrops,
  kTxDrops,
  kFecUncorrectable,
  kCarrierChanges,
  kNeighbor,
  kCount,
  kUnknown = kCount,
};
constexpr size_t kKeyCount = static_cast<size_t>(Key::kCount);

constexpr std::array<std::string_view, kKeyCount> kKeyNames = {
    "t",
    "kind",
    "src",
    "dst",
    "flow",
    "window_s",
    "sent",
    "lost",
    "lost_fwd",
    "lost_rev",
    "rtt_us_p50",
    "rtt_us_p99",
    "path",
    "path_partial",
    "reply_path",
    "port",
    "oper_up",
    "rx_packets",
    "tx_packets",
    "rx_errors",
    "rx_crc_errors",
    "rx_drops",
    "tx_drops",
    "fec_uncorrectable",
    "carrier_changes",
    "neighbor",
};

// A key's length, first and last letters tell the known keys apart: they
// pick one slot of a small table, and one comparison confirms the key.
constexpr size_t keySlot(size_t len, unsigned char first, unsigned char last) {
  return (len * 2 + first * 20 + last * 3) % 64;
}
struct KeyTable {
  std::array<Key, 64> slots{};
  bool distinct = true;  // no two known keys share a slot
  constexpr KeyTable() {
    slots.fill(Key::kUnknown);
    for (size_t i = 0; i < kKeyCount; ++i) {
      std::string_view name = kKeyNames[i];
      Key& slot = slots[keySlot(name.size(), static_cast<unsigned char>(name.front()),
                                static_cast<unsigned char>(name.back()))];
      distinct = distinct && slot == Key::kUnknown;
      slot = static_cast<Key>(i);
    }
  }
};
constexpr KeyTable kKeyTable;
static_assert(kKeyTable.distinct, "two keys share a slot of kKeyTable: change keySlot()");

Key keyOf(std::string_view k) {
  if (k.empty()) return Key::kUnknown;
  Key key = kKeyTable.slots[keySlot(k.size(), static_cast<unsigned char>(k.front()),
                                    static_cast<unsigned char>(k.back()))];
  if (key == Key::kUnknown || kKeyNames[static_cast<size_t>(key)] != k) return Key::kUnknown;
  return key;
}

struct Counter {
  Key key;
  std::optional<uint64_t> PortRecord::*field;
};
constexpr std::array<Counter, 8> kCounters = {{
    {Key::kRxPackets, &PortRecord::rx_packets},
    {Key::kTxPackets, &PortRecord::tx_packets},
    {Key::kRxErrors, &PortRecord::rx_errors},
    {Key::kRxCrcErrors, &PortRecord::rx_crc_errors},
    {Key::kRxDrops, &PortRecord::rx_drops},
    {Key::kTxDrops, &PortRecord::tx_drops},
    {Key::kFecUncorrectable, &PortRecord::fec_uncorrectable},
    {Key::kCarrierChanges, &PortRecord::carrier_changes},
}};

// A value quoted for a message: JSON-like, control and bidi characters escaped and
// long text cut (at a UTF-8 boundary) so one bad line cannot flood a report.
constexpr size_t kMaxQuoted = 80;

void appendQuoted(std::string& out, std::string_view s) {
  bool cut = s.size() > kMaxQuoted;
  if (cut) {
    size_t n = kMaxQuoted;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    s = s.substr(0, n);
  }
  // JSON escapes handle control characters and bad UTF-8; bidi controls
  // are valid UTF-8 and need the display escaping on top.
  std::string json;
  detail::appendJsonEscaped(json, s);
  out += '\'';
  topology::appendEscapedForDisplay(out, json);
  if (cut) out += "...";
  out += '\'';
}

std::string quotedValue(std::string_view s) {
  std::string out;
  appendQuoted(out, s);
  return out;
}

void appendNumber(std::string& out, double v) {
  char tmp[32];
  auto res = std::to_chars(tmp, tmp + sizeof tmp, v);
  out.append(tmp, res.ptr);
}

template <typename Int>
void appendInt(std::string& out, Int v) {
  char tmp[24];
  auto res = std::to_chars(tmp, tmp + sizeof tmp, v);
  out.append(tmp, res.ptr);
}

// How a JSON value shows in a message.
std::string describe(const element& e) {
  std::string out;
  switch (e.type()) {
    case element_type::STRING:
      appendQuoted(out, e.get_string().value_unsafe());
      break;
    case element_type::INT64:
      appendInt(out, e.get_int64().value_unsafe());
      break;
    case element_type::UINT64:
      appendInt(out, e.get_uint64().value_unsafe());
      break;
    case element_type::DOUBLE:
      appendNumber(out, e.get_double().value_unsafe());
      break;
    case element_type::BOOL:
      out = e.get_bool().value_unsafe() ? "true" : "false";
      break;
    case element_type::NULL_VALUE:
      out = "null";
      break;
    case element_type::ARRAY:
      out = "an array";
      break;
    case element_type::OBJECT:
      out = "an object";
      break;
  }
  return out;
}

// Parses one line at a time; holds the reused parser and records.
class LineParser {
 public:
  enum class Outcome { kBlank, kRecord, kUnknownKind, kBad, kFuture };

  LineParser(const topology::Topology& topo, RecordSink& sink, double max_future_s)
      : topo_(topo), ports_(topo), sink_(sink), max_future_s_(max_future_s) {}

  // [p, p + len) is one line without its '\n'; at least SIMDJSON_PADDING
  // readable bytes follow it. On kBad and kFuture, error() says why.
  Outcome parse(const char* p, size_t len);
  const std::string& error() const { return error_; }
  // After kRecord: why the record, kept, is implausible; empty when it is not.
  const std::string& warning() const { return warning_; }

 private:
  Outcome bad(std::string msg) {
    error_ = std::move(msg);
    return Outcome::kBad;
  }
  bool has(Key k) const { return present_[static_cast<size_t>(k)]; }
  // Present and not null: optional fields treat null as absent.
  bool given(Key k) const { return has(k) && !field(k).is_null(); }
  const element& field(Key k) const { return fields_[static_cast<size_t>(k)]; }
  static std::string_view name(Key k) { return kKeyNames[static_cast<size_t>(k)]; }

  // Each getter sets error_ (prefixed by the record kind) and returns false
  // when the field is missing or of the wrong type or range.
  bool requiredString(Key k, std::string_view& out);
  bool knownPort(Key k, PortId& out);
  bool unknownPort(Key k, std::string_view ref);
  bool uintField(Key k, uint64_t max, uint64_t& out);
  bool numberField(Key k, double& out);
  Outcome badRecord(std::string msg) {
    fail(std::move(msg));
    return Outcome::kBad;
  }
  bool fail(std::string msg) {
    error_ = std::string(kind_);
    error_ += ": ";
    error_ += msg;
    return false;
  }
  // Converts a contract port list into directed links; `partial` allows a
  // known prefix. `from`/`to` are the ends the path must start and end at.
  bool readPath(Key k, PortId from, PortId to, bool partial, std::vector<DirLinkId>& out);

  // Starts loading what resolving a probe's ports will read (hints only).
  void prefetchPorts();
  // ports_.find(ref), trying first the port prefetchPorts() found next in
  // its walk (the checks resolve in the same order): a hit costs no hash.
  PortId resolve(std::string_view ref) {
    if (hint_next_ < hint_count_) {
      PortId hint = hints_[hint_next_++];
      if (hint != kNone && ports_.is(hint, ref)) return hint;
    }
    return ports_.find(ref);
  }
  Outcome parseProbe();
  Outcome parsePort();
  Outcome parseLldp();
  // False (error_ set) for a valid record too far beyond the newest t
  // accepted; otherwise it becomes accepted.
  bool admit();

  const topology::Topology& topo_;
  const topology::PortIndex ports_;  // names to ids without the topology's node-based map
  RecordSink& sink_;
  const double max_future_s_;
  double newest_ = -std::numeric_limits<double>::infinity();  // of the records accepted
  simdjson::dom::parser parser_;
  std::array<element, kKeyCount> fields_{};
  std::array<bool, kKeyCount> present_{};
  std::string_view kind_;
  static constexpr size_t kMaxHints = 32;
  std::array<PortId, kMaxHints> hints_{};
  size_t hint_count_ = 0, hint_next_ = 0;
  double t_ = 0;
  std::string error_;
  std::string warning_;
  ProbeRecord probe_;
  PortRecord port_;
  LldpRecord lldp_;
};

bool isBlank(const char* p, size_t len) {
  for (size_t i = 0; i < len; ++i) {
    char c = p[i];
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

LineParser::Outcome LineParser::parse(const char* p, size_t len) {
  warning_.clear();
  hint_count_ = hint_next_ = 0;
  if (isBlank(p, len)) return Outcome::kBlank;
  element doc;
  // realloc_if_needed=false: the caller guarantees the padding.
  auto err = parser_.parse(p, len, false).get(doc);
  if (err) return bad(std::string("invalid JSON: ") + simdjson::error_message(err));
  simdjson::dom::object obj;
  if (doc.get_object().get(obj)) return bad("record is not a JSON object, got " + describe(doc));
  present_.fill(false);
  for (auto kv : obj) {
    Key k = keyOf(kv.key);
    if (k == Key::kUnknown) continue;
    fields_[static_cast<size_t>(k)] = kv.value;  // a repeated key: the last wins
    present_[static_cast<size_t>(k)] = true;
  }
  if (!has(Key::kT)) return bad("missing 't'");
  if (!field(Key::kT).is_number())
    return bad("'t' must be a number, got " + describe(field(Key::kT)));
  t_ = field(Key::kT).get_double().value_unsafe();
  if (!has(Key::kKind)) return bad("missing 'kind'");
  if (field(Key::kKind).get_string().get(kind_)) {
    return bad("'kind' must be a string, got " + describe(field(Key::kKind)));
  }
  if (kind_ == "probe") return parseProbe();
  if (kind_ == "port") return parsePort();
  if (kind_ == "lldp") return parseLldp();
  return Outcome::kUnknownKind;
}

bool LineParser::requiredString(Key k, std::string_view& out) {
  if (!has(k)) return fail("missing '" + std::string(name(k)) + "'");
  if (field(k).get_string().get(out)) {
    return fail("'" + std::string(name(k)) + "' must be a string, got " + describe(field(k)));
  }
  return true;
}

bool LineParser::knownPort(Key k, PortId& out) {
  std::string_view ref;
  if (!requiredString(k, ref)) return false;
  PortId id = resolve(ref);
  if (id == kNone) return unknownPort(k, ref);
  out = id;
  return true;
}

bool LineParser::unknownPort(Key k, std::string_view ref) {
  return fail("unknown port " + quotedValue(ref) + " in '" + std::string(name(k)) + "'");
}

bool LineParser::uintField(Key k, uint64_t max, uint64_t& out) {
  const element& e = field(k);
  bool ok = false;
  switch (e.type()) {
    case element_type::INT64: {
      int64_t v = e.get_int64().value_unsafe();
      ok = v >= 0;
      out = static_cast<uint64_t>(v);
      break;
    }
    case element_type::UINT64:
      ok = true;
      out = e.get_uint64().value_unsafe();
      break;
    case element_type::DOUBLE: {
      // Lenient: 50.0 is the integer 50 (some writers only have doubles).
      double d = e.get_double().value_unsafe();
      ok = d >= 0 && d < 18446744073709551616.0 && std::floor(d) == d;
      if (ok) out = static_cast<uint64_t>(d);
      break;
    }
    default:
      break;
  }
  if (ok && out <= max) return true;
  std::string label = "'" + std::string(name(k)) + "' ";
  if (!ok) return fail(label + "must be a non-negative integer, got " + describe(e));
  appendInt(label, out);
  label += " is out of range (max ";
  appendInt(label, max);
  label += ')';
  return fail(label);
}

bool LineParser::numberField(Key k, double& out) {
  const element& e = field(k);
  if (!e.is_number()) {
    return fail("'" + std::string(name(k)) + "' must be a number, got " + describe(e));
  }
  out = e.get_double().value_unsafe();
  return true;
}

// Contract path: p0 = from; (p[2i], p[2i+1]) is a directed link; p[2i+1]
// and p[2i+2] are the ingress and egress ports of one switch. A list that
// ends on an egress port (odd length, partial only) maps its last element
// to the link that port leaves by.
bool LineParser::readPath(Key k, PortId from, PortId to, bool partial,
                          std::vector<DirLinkId>& out) {
  out.clear();
  // Built only for a message: a good path costs no string.
  auto label = [k] { return std::string(name(k)) + ": "; };
  simdjson::dom::array arr;
  if (field(k).get_array().get(arr)) {
    return fail("'" + std::string(name(k)) + "' must be an array of port references, got " +
                describe(field(k)));
  }
  size_t i = 0;
  PortId prev = kNone;
  std::string_view prev_ref;
  DirLinkId pending = kNone;  // the link p[i-1] leaves by, when i is odd
  for (element e : arr) {
    std::string_view ref;
    if (e.get_string().get(ref)) {
      std::string msg = label() + "element ";
      appendInt(msg, i);
      return fail(msg + " must be a port reference string, got " + describe(e));
    }
    if (i == 0) {
      // Nearly always `from` itself, already resolved: compare, no lookup.
      PortId id = ports_.is(from, ref) ? from : ports_.find(ref);
      if (id == kNone) return unknownPort(k, ref);
      if (id != from) {
        return fail(label() + "starts at " + quotedValue(ref) + ", not at " +
                    quotedValue(topo_.portRef(from)));
      }
      prev = id;
    } else if (i % 2 == 1) {
      // The far end of the link p[i-1] leaves by: compare names, no lookup.
      PortId expect = pending == kNone ? kNone : ports_.peer(prev);
      if (expect == kNone || !ports_.is(expect, ref)) {
        if (ports_.find(ref) == kNone) return unknownPort(k, ref);
        return fail(label() + quotedValue(prev_ref) + " -> " + quotedValue(ref) +
                    " is not a link of the topology");
      }
      out.push_back(pending);
      prev = expect;
      pending = kNone;
    } else {
      PortId id = resolve(ref);
      if (id == kNone) return unknownPort(k, ref);
      if (id == prev) {
        return fail(label() + quotedValue(ref) + " is both ingress and egress of one hop");
      }
      if (ports_.node(id) != ports_.node(prev)) {
        return fail(label() + quotedValue(prev_ref) + " -> " + quotedValue(ref) +
                    ": ingress and egress of a hop must be ports of one node");
      }
      prev = id;
    }
    if (i % 2 == 0) {
      pending = ports_.egress(prev);
      if (pending == kNone) return fail(label() + "port " + quotedValue(ref) + " has no link");
    }
    prev_ref = ref;
    ++i;
  }
  if (i % 2 == 1) {
    // Ends on an egress port: the probe is known to have left by its link.
    if (!partial) {
      return fail(label() + "ends at egress port " + quotedValue(prev_ref) + ", not at " +
                  quotedValue(topo_.portRef(to)));
    }
    out.push_back(pending);
  } else if (i > 0 && !partial && prev != to) {
    return fail(label() + "ends at " + quotedValue(prev_ref) + ", not at " +
                quotedValue(topo_.portRef(to)));
  }
  return true;
}

// Resolving a name reads memory the engine's own working set has evicted by
// then: the port's slot, its entry, then the entry of the port at the far
// end of its link, each waiting for the one before, two or three misses per
// hop. So before checking anything, walk the record's references once and
// start every load, in three rounds (slots, the entries they name, those
// entries' peers), so that a hop's misses overlap with the other hops'. The
// walk only hints; the checks below decide, in their own order.
void LineParser::prefetchPorts() {
  std::array<uint64_t, kMaxHints> hashes;
  size_t n = 0;
  auto add = [&](const element& e) {
    std::string_view ref;
    if (n < kMaxHints && !e.get_string().get(ref)) hashes[n++] = ports_.prefetchSlot(ref);
  };
  // src and dst: the first element of path and of reply_path, whose peers
  // the second elements are compared with.
  if (has(Key::kSrc)) add(field(Key::kSrc));
  if (has(Key::kDst)) add(field(Key::kDst));
  for (Key k : {Key::kPath, Key::kReplyPath}) {
    simdjson::dom::array arr;
    if (!has(k) || field(k).get_array().get(arr)) continue;
    size_t i = 0;
    for (element e : arr) {
      if (i > 0 && i % 2 == 0) add(e);  // egress ports; the odd ones are the peers
      ++i;
    }
  }
  for (size_t j = 0; j < n; ++j) {
    hints_[j] = ports_.candidate(hashes[j]);
    ports_.prefetchEntry(hints_[j]);
  }
  for (size_t j = 0; j < n; ++j) {
    if (hints_[j] != kNone) ports_.prefetchEntry(ports_.peer(hints_[j]));
  }
  hint_count_ = n;
  hint_next_ = 0;
}

LineParser::Outcome LineParser::parseProbe() {
  prefetchPorts();
  ProbeRecord& r = probe_;
  r.t = t_;
  if (!knownPort(Key::kSrc, r.src) || !knownPort(Key::kDst, r.dst)) return Outcome::kBad;
  if (!has(Key::kFlow)) return badRecord("missing 'flow'");
  if (!uintField(Key::kFlow, std::numeric_limits<uint64_t>::max(), r.flow)) return Outcome::kBad;
  r.window_s = kDefaultWindowS;
  if (given(Key::kWindowS)) {
    if (!numberField(Key::kWindowS, r.window_s)) return Outcome::kBad;
    if (!(r.window_s > 0)) {
      return badRecord("'window_s' must be a positive number, got " +
                       describe(field(Key::kWindowS)));
    }
  }
  constexpr uint64_t kMax32 = std::numeric_limits<uint32_t>::max();
  uint64_t sent = 0, lost = 0;
  if (!has(Key::kSent)) return badRecord("missing 'sent'");
  if (!uintField(Key::kSent, kMax32, sent)) return Outcome::kBad;
  if (!has(Key::kLost)) return badRecord("missing 'lost'");
  if (!uintField(Key::kLost, kMax32, lost)) return Outcome::kBad;
  if (lost > sent) {
    std::string msg = "'lost' ";
    appendInt(msg, lost);
    msg += " > 'sent' ";
    appendInt(msg, sent);
    return badRecord(msg);
  }
  r.sent = static_cast<uint32_t>(sent);
  r.lost = static_cast<uint32_t>(lost);
  r.lost_fwd.reset();
  r.lost_rev.reset();
  uint64_t fwd = 0, rev = 0;
  bool has_fwd = given(Key::kLostFwd), has_rev = given(Key::kLostRev);
  if (has_fwd && !uintField(Key::kLostFwd, kMax32, fwd)) return Outcome::kBad;
  if (has_rev && !uintField(Key::kLostRev, kMax32, rev)) return Outcome::kBad;
  if (has_fwd && has_rev && fwd + rev != lost) {
    std::string msg = "'lost_fwd' ";
    appendInt(msg, fwd);
    msg += " + 'lost_rev' ";
    appendInt(msg, rev);
    msg += " != 'lost' ";
    appendInt(msg, lost);
    return badRecord(msg);
  }
  for (auto [present, value, key] :
       {std::tuple{has_fwd, fwd, Key::kLostFwd}, std::tuple{has_rev, rev, Key::kLostRev}}) {
    if (present && value > lost) {
      std::string msg = "'" + std::string(name(key)) + "' ";
      appendInt(msg, value);
      msg += " > 'lost' ";
      appendInt(msg, lost);
      return badRecord(msg);
    }
  }
  if (has_fwd) r.lost_fwd = static_cast<uint32_t>(fwd);
  if (has_rev) r.lost_rev = static_cast<uint32_t>(rev);
  for (auto [key, out] :
       {std::pair{Key::kRttP50, &r.rtt_us_p50}, std::pair{Key::kRttP99, &r.rtt_us_p99}}) {
    *out = NAN;
    if (!given(key)) continue;
    if (!numberField(key, *out)) return Outcome::kBad;
    if (*out < 0) {
      return badRecord("'" + std::string(name(key)) + "' must be a non-negative number, got " +
                       describe(field(key)));
    }
  }
  r.path_partial = false;
  if (given(Key::kPathPartial)) {
    if (field(Key::kPathPartial).get_bool().get(r.path_partial)) {
      return badRecord("'path_partial' must be true or false, got " +
                       describe(field(Key::kPathPartial)));
    }
  }
  r.path.clear();
  if (given(Key::kPath) && !readPath(Key::kPath, r.src, r.dst, r.path_partial, r.path)) {
    return Outcome::kBad;
  }
  if (r.path.empty()) r.path_partial = false;
  r.reply_path.clear();
  if (given(Key::kReplyPath) && !readPath(Key::kReplyPath, r.dst, r.src, false, r.reply_path)) {
    return Outcome::kBad;
  }
  if (!admit()) return Outcome::kFuture;
  if (sent > kMaxProbesPerRecord) {
    warning_ = "probe: 'sent' ";
    appendInt(warning_, sent);
    warning_ += " is more than netdiag's limit of ";
    appendInt(warning_, kMaxProbesPerRecord);
    warning_ += " probes in one record (no real prober sends that many a window); kept";
  }
  sink_.onProbe(r);
  return Outcome::kRecord;
}

LineParser::Outcome LineParser::parsePort() {
  PortRecord& r = port_;
  r.t = t_;
  if (!knownPort(Key::kPort, r.port)) return Outcome::kBad;
  r.oper_up.reset();
  if (given(Key::kOperUp)) {
    bool up = false;
    if (field(Key::kOperUp).get_bool().get(up)) {
      return badRecord("'oper_up' must be true or false, got " + describe(field(Key::kOperUp)));
    }
    r.oper_up = up;
  }
  for (const Counter& c : kCounters) {
    std::optional<uint64_t>& out = r.*c.field;
    out.reset();
    if (!given(c.key)) continue;
    uint64_t v = 0;
    if (!uintField(c.key, std::numeric_limits<uint64_t>::max(), v)) return Outcome::kBad;
    out = v;
  }
  if (!admit()) return Outcome::kFuture;
  sink_.onPort(r);
  return Outcome::kRecord;
}

LineParser::Outcome LineParser::parseLldp() {
  LldpRecord& r = lldp_;
  r.t = t_;
  if (!knownPort(Key::kPort, r.port)) return Outcome::kBad;
  std::string_view neighbor;
  if (!requiredString(Key::kNeighbor, neighbor)) return Outcome::kBad;
  r.neighbor.assign(neighbor);
  if (!admit()) return Outcome::kFuture;
  sink_.onLldp(r);
  return Outcome::kRecord;
}

bool LineParser::admit() {
  // The first record has nothing to be ahead of.
  if (newest_ != -std::numeric_limits<double>::infinity() && t_ - newest_ > max_future_s_) {
    std::string msg = "'t' ";
    appendNumber(msg, t_);
    msg += " is ";
    appendNumber(msg, t_ - newest_);
    msg += " s beyond the newest 't' so far, ";
    appendNumber(msg, newest_);
    msg += " (at most ";
    appendNumber(msg, max_future_s_);
    msg += " s ahead)";
    fail(msg);
    return false;
  }
  newest_ = std::max(newest_, t_);
  return true;
}

}  // namespace

bool readJsonl(std::istream& in, const topology::Topology& topo, RecordSink& sink, ReadStats& stats,
               const ReadOptions& options) {
  LineParser parser(topo, sink, options.max_future_s);
  // One buffer: [begin, end) holds unread bytes; the allocation keeps
  // SIMDJSON_PADDING spare bytes past `cap` so every line, even the last
  // one, can be handed to simdjson in place. It does not grow: a line longer than kMaxLineBytes is
  // reported as soon as that many bytes of it are in, and the rest of it is dropped as it is read
  // (`skipping`), so a huge line costs no memory.
  const size_t cap = 2 * kMaxLineBytes;
  std::vector<char> buf(cap + simdjson::SIMDJSON_PADDING);
  size_t begin = 0, end = 0, scanned = 0;
  bool eof = false, first = true, skipping = false;

  // Returns false to stop (strict mode hit a bad line).
  uint64_t line_no = 0;
  auto badLine = [&](const std::string& message) {
    ++stats.bad;
    if (stats.first_bad.size() < ReadStats::kMaxBadLinesKept) {
      stats.first_bad.push_back(BadLine{line_no, message});
    }
    return !options.strict;
  };
  // The line's own bytes are in [line_begin, line_end) or, when it is too
  // long, at least its first kMaxLineBytes + 3 bytes are.
  auto handle = [&](size_t line_begin, size_t line_end) {
    ++line_no;
    ++stats.lines;
    const char* p = buf.data() + line_begin;
    size_t len = line_end - line_begin;
    if (first) {
      first = false;
      if (len >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) {
        p += 3;
        len -= 3;
      }
    }
    if (len > kMaxLineBytes) {
      std::string msg = "line longer than ";
      appendInt(msg, kMaxLineBytes);
      msg += " bytes (netdiag's limit, docs/formats.md): skipped unread";
      return badLine(msg);
    }
    while (len > 0 && p[len - 1] == '\r') --len;
    switch (parser.parse(p, len)) {
      case LineParser::Outcome::kBlank:
        return true;
      case LineParser::Outcome::kRecord:
        ++stats.records;
        if (!parser.warning().empty()) {
          ++stats.implausible;
          if (stats.first_implausible.size() < ReadStats::kMaxBadLinesKept) {
            stats.first_implausible.push_back(BadLine{line_no, parser.warning()});
          }
        }
        return true;
      case LineParser::Outcome::kUnknownKind:
        ++stats.unknown_kind;
        return true;
      case LineParser::Outcome::kBad:
        return badLine(parser.error());
      case LineParser::Outcome::kFuture:
        ++stats.future;
        if (stats.first_future.size() < ReadStats::kMaxBadLinesKept) {
          stats.first_future.push_back(BadLine{line_no, parser.error()});
        }
        return !options.strict;
    }
    return true;
  };

  while (true) {
    while (scanned < end) {
      const void* nl = std::memchr(buf.data() + scanned, '\n', end - scanned);
      if (nl == nullptr) {
        scanned = end;
        break;
      }
      size_t line_end = static_cast<size_t>(static_cast<const char*>(nl) - buf.data());
      if (skipping) {
        skipping = false;  // the end of a too-long line, already reported
      } else if (!handle(begin, line_end)) {
        return false;
      }
      begin = scanned = line_end + 1;
    }
    // A partial line this long is too long whatever follows (+3: a BOM).
    if (!skipping && end - begin > kMaxLineBytes + 3) {
      if (!handle(begin, end)) return false;
      skipping = true;
    }
    if (skipping) begin = scanned = end;  // drop what is in of it
    if (eof) {
      if (begin < end && !handle(begin, end)) return false;
      break;
    }
    // Keep the partial line; it fits, being at most kMaxLineBytes + 3.
    if (begin > 0) {
      std::memmove(buf.data(), buf.data() + begin, end - begin);
      end -= begin;
      scanned -= begin;
      begin = 0;
    }
    in.read(buf.data() + end, static_cast<std::streamsize>(cap - end));
    end += static_cast<size_t>(in.gcount());
    if (!in) eof = true;
  }
  return !in.bad();
}

}  // namespace netdiag::telemetry
