#include "collector/snmp/port_table.h"

namespace netdiag::collector::snmp {
namespace {

// IF-MIB column numbers.
constexpr uint32_t kIfInUcastPkts = 11, kIfInNUcastPkts = 12, kIfInDiscards = 13, kIfInErrors = 14,
                   kIfOutUcastPkts = 17, kIfOutNUcastPkts = 18, kIfOutDiscards = 19,
                   kIfOperStatus = 8, kIfLastChange = 9;
constexpr uint32_t kIfName = 1, kIfHCInUcastPkts = 7, kIfHCInMulticastPkts = 8,
                   kIfHCInBroadcastPkts = 9, kIfHCOutUcastPkts = 11, kIfHCOutMulticastPkts = 12,
                   kIfHCOutBroadcastPkts = 13;
constexpr uint32_t kDot3StatsFCSErrors = 3;

const char* columnName(size_t c, bool hc) {
  static const char* const kNames[] = {
      "ifName",       "ifOperStatus",  "ifLastChange",      "ifInErrors",
      "ifInDiscards", "ifOutDiscards", "dot3StatsFCSErrors"};
  static const char* const kHc[] = {"ifHCInUcastPkts",      "ifHCInMulticastPkts",
                                    "ifHCInBroadcastPkts",  "ifHCOutUcastPkts",
                                    "ifHCOutMulticastPkts", "ifHCOutBroadcastPkts"};
  static const char* const k32[] = {"ifInUcastPkts", "ifInNUcastPkts", "ifOutUcastPkts",
                                    "ifOutNUcastPkts"};
  if (c < kColHcInUcast) return kNames[c];
  return hc ? kHc[c - kColHcInUcast] : k32[c - kColInUcast];
}

}  // namespace

std::vector<Oid> counterColumns(bool hc) {
  using namespace oids;
  std::vector<Oid> c = {
      oidJoin(kIfXEntry, kIfName),
      oidJoin(kIfEntry, kIfOperStatus),
      oidJoin(kIfEntry, kIfLastChange),
      oidJoin(kIfEntry, kIfInErrors),
      oidJoin(kIfEntry, kIfInDiscards),
      oidJoin(kIfEntry, kIfOutDiscards),
      oidJoin(kDot3StatsEntry, kDot3StatsFCSErrors),
  };
  if (hc) {
    for (uint32_t col : {kIfHCInUcastPkts, kIfHCInMulticastPkts, kIfHCInBroadcastPkts,
                         kIfHCOutUcastPkts, kIfHCOutMulticastPkts, kIfHCOutBroadcastPkts})
      c.push_back(oidJoin(kIfXEntry, col));
  } else {
    for (uint32_t col : {kIfInUcastPkts, kIfInNUcastPkts, kIfOutUcastPkts, kIfOutNUcastPkts})
      c.push_back(oidJoin(kIfEntry, col));
  }
  return c;
}

uint64_t PortTable::Wide::feed(uint32_t now) {
  if (!raw) {
    value = now;
  } else {
    value += static_cast<uint32_t>(now - *raw);  // modulo 2^32: a wrap is a small step
  }
  raw = now;
  return value;
}

PortTable::PortTable(std::string node, std::map<std::string, std::string> port_map,
                     std::set<std::string> known_ports)
    : node_(std::move(node)),
      port_map_(std::move(port_map)),
      known_ports_(std::move(known_ports)) {}

std::string PortTable::portFor(const std::string& if_name) const {
  auto m = port_map_.find(if_name);
  const std::string port = m == port_map_.end() ? if_name : m->second;
  if (port.empty()) return "";
  if (!known_ports_.empty() && known_ports_.count(port) == 0) return "";
  return port;
}

std::vector<v1::PortCounters> PortTable::update(double t, std::optional<uint32_t> uptime,
                                                const BulkWalk& walk,
                                                std::vector<std::string>* problems) {
  const bool hc = hc_;
  // A restart: every interface's state starts over (counters emitted as
  // read, which §2 takes as a reset; no carrier change inferred).
  if (uptime && uptime_ && *uptime < *uptime_ &&
      !(*uptime_ > (uint64_t{1} << 32) - kUptimeWrapMargin && *uptime < kUptimeWrapMargin)) {
    ++restarts_;
    for (auto& [index, itf] : interfaces_) {
      itf.wide.clear();
      itf.up.reset();
      itf.last_change.reset();
    }
  }
  if (uptime) uptime_ = uptime;

  // Typed values by ifIndex and column; wrong types and indexes reported.
  std::map<uint32_t, std::map<size_t, const Varbind*>> values;
  size_t bad = 0;
  std::string first_bad;
  for (size_t c = 0; c < walk.columns(); ++c) {
    const bool want_64 = hc && c >= kColHcInUcast;
    for (const auto& [index, vb] : walk.rows(c)) {
      Varbind::Type want = want_64 ? Varbind::Type::kCounter64 : Varbind::Type::kCounter32;
      if (c == kColName) want = Varbind::Type::kOctets;
      if (c == kColOperStatus) want = Varbind::Type::kInteger;
      if (c == kColLastChange) want = Varbind::Type::kTimeTicks;
      std::string why;
      if (index.size() != 1) {
        why = "index " + oidText(index) + " is not an ifIndex";
      } else if (vb.type == Varbind::Type::kNoSuchInstance ||
                 vb.type == Varbind::Type::kNoSuchObject) {
        continue;  // absent: the field stays absent
      } else if (vb.type != want) {
        why = std::string("is ") + typeName(vb.type) + ", expected " + typeName(want);
      }
      if (!why.empty()) {
        if (bad++ == 0)
          first_bad = std::string(columnName(c, hc)) + "." + oidText(index) + " " + why;
        continue;
      }
      values[index[0]][c] = &vb;
    }
  }
  if (bad > 0 && problems) {
    problems->push_back(first_bad + (bad > 1 ? " (and " + std::to_string(bad - 1) + " more)" : "") +
                        "; those values ignored");
  }

  std::vector<v1::PortCounters> out;
  std::map<uint32_t, Interface> next;
  bool any_hc = false;
  port_names_.clear();
  for (auto& [if_index, cols] : values) {
    auto name_it = cols.find(kColName);
    if (name_it == cols.end()) continue;  // no ifName: cannot name the port
    const std::string& if_name = name_it->second->bytes;
    Interface itf;
    if (auto old = interfaces_.find(if_index);
        old != interfaces_.end() && old->second.if_name == if_name) {
      itf = std::move(old->second);
    }
    itf.if_name = if_name;
    auto get = [&](size_t c) -> const Varbind* {
      auto it = cols.find(c);
      return it == cols.end() ? nullptr : it->second;
    };
    auto wide = [&](size_t c) -> std::optional<uint64_t> {
      const Varbind* vb = get(c);
      if (!vb) return std::nullopt;
      return itf.wide[c].feed(static_cast<uint32_t>(vb->number));
    };
    // Every counter is fed, whether or not its port is reported, so the
    // unwrapping never misses a step.
    const std::optional<uint64_t> in_errors = wide(kColInErrors),
                                  in_discards = wide(kColInDiscards),
                                  out_discards = wide(kColOutDiscards), fcs = wide(kColFcsErrors);
    std::optional<uint64_t> rx, tx;
    if (hc) {
      auto sum = [&](std::initializer_list<size_t> cs) -> std::optional<uint64_t> {
        if (!get(*cs.begin())) return std::nullopt;  // no unicast count: no total
        uint64_t s = 0;
        for (size_t c : cs)
          if (const Varbind* vb = get(c)) s += vb->number;
        return s;
      };
      rx = sum({kColHcInUcast, kColHcInMcast, kColHcInBcast});
      tx = sum({kColHcOutUcast, kColHcOutMcast, kColHcOutBcast});
      any_hc = any_hc || rx || tx;
    } else {
      auto sum = [&](size_t ucast, size_t nucast) -> std::optional<uint64_t> {
        const std::optional<uint64_t> u = wide(ucast), n = wide(nucast);
        if (!u) return std::nullopt;
        return *u + n.value_or(0);
      };
      rx = sum(kColInUcast, kColInNUcast);
      tx = sum(kColOutUcast, kColOutNUcast);
    }
    std::optional<bool> up;
    if (const Varbind* vb = get(kColOperStatus)) {
      const int64_t s = vb->integer;
      if (s == 1) up = true;
      if (s == 2 || s == 5 || s == 6 || s == 7) up = false;
    }
    const Varbind* change = get(kColLastChange);
    if (up) {
      if (itf.up && *itf.up != *up) {
        itf.carrier += 1;
      } else if (itf.up && change && itf.last_change &&
                 static_cast<uint32_t>(change->number) != *itf.last_change) {
        itf.carrier += 2;  // it went and came back (or came and went) between polls
      }
      itf.up = up;
    }
    if (change) itf.last_change = static_cast<uint32_t>(change->number);

    const std::string port = portFor(if_name);
    if (!port.empty()) {
      port_names_[if_index] = port;
      v1::PortCounters r;
      r.set_t(t);
      r.set_port(node_ + ":" + port);
      if (up) r.set_oper_up(*up);
      if (rx) r.set_rx_packets(*rx);
      if (tx) r.set_tx_packets(*tx);
      if (in_errors) r.set_rx_errors(*in_errors);
      if (fcs) r.set_rx_crc_errors(*fcs);
      if (in_discards) r.set_rx_drops(*in_discards);
      if (out_discards) r.set_tx_drops(*out_discards);
      if (itf.up) r.set_carrier_changes(itf.carrier);
      out.push_back(std::move(r));
    }
    next.emplace(if_index, std::move(itf));
  }
  interfaces_ = std::move(next);
  // An agent with interfaces but no 64-bit counters: read the 32-bit ones.
  if (hc && !values.empty() && !any_hc) hc_ = false;
  return out;
}

}  // namespace netdiag::collector::snmp
