#include "collector/snmp/lldp_table.h"

#include <map>
#include <optional>

#include "collector/lldp.h"

namespace netdiag::collector::snmp {
namespace {

constexpr size_t kMaxLldpString = 255;  // 802.1AB's bound for IDs and names

}  // namespace

std::vector<Oid> lldpColumns() {
  using namespace oids;
  return {oidJoin(kLldpLocPortEntry, 2), oidJoin(kLldpLocPortEntry, 3), oidJoin(kLldpRemEntry, 4),
          oidJoin(kLldpRemEntry, 5),     oidJoin(kLldpRemEntry, 6),     oidJoin(kLldpRemEntry, 7),
          oidJoin(kLldpRemEntry, 9)};
}

std::vector<v1::LldpNeighbor> lldpRecords(double t, const std::string& node, const PortTable& ports,
                                          const BulkWalk& walk,
                                          std::vector<std::string>* problems) {
  size_t bad = 0;
  std::string first_bad;
  auto report = [&](const std::string& what) {
    if (bad++ == 0) first_bad = what;
  };
  auto value = [&](size_t c, const Oid& index, Varbind::Type want) -> const Varbind* {
    const auto& rows = walk.rows(c);
    auto it = rows.find(index);
    if (it == rows.end()) return nullptr;
    const Varbind& vb = it->second;
    if (vb.type != want) {
      report(oidText(vb.oid) + " is " + typeName(vb.type) + ", expected " + typeName(want));
      return nullptr;
    }
    if (vb.type == Varbind::Type::kOctets && vb.bytes.size() > kMaxLldpString) {
      report(oidText(vb.oid) + " is " + std::to_string(vb.bytes.size()) +
             " bytes long (802.1AB allows 255)");
      return nullptr;
    }
    return &vb;
  };

  // Local port numbers to port names.
  auto localPort = [&](uint32_t num) -> std::string {
    const Oid index = {num};
    const Varbind* subtype = value(kColLocPortIdSubtype, index, Varbind::Type::kInteger);
    const Varbind* id = value(kColLocPortId, index, Varbind::Type::kOctets);
    if (subtype && id &&
        (subtype->integer == kPortInterfaceName || subtype->integer == kPortLocal)) {
      const std::string port = ports.portFor(id->bytes);
      if (!port.empty()) return port;
    }
    auto it = ports.portNames().find(num);
    return it == ports.portNames().end() ? "" : it->second;
  };

  struct Seen {
    uint32_t time_mark = 0;
    std::string neighbor;
  };
  std::map<std::string, Seen> by_port;
  for (const auto& [index, vb] : walk.rows(kColRemPortId)) {
    if (index.size() != 3) {
      report(oidText(vb.oid) + ": index is not timeMark.localPortNum.index");
      continue;
    }
    const Varbind* port_id = value(kColRemPortId, index, Varbind::Type::kOctets);
    const Varbind* port_subtype = value(kColRemPortIdSubtype, index, Varbind::Type::kInteger);
    const Varbind* chassis = value(kColRemChassisId, index, Varbind::Type::kOctets);
    const Varbind* chassis_subtype = value(kColRemChassisIdSubtype, index, Varbind::Type::kInteger);
    const Varbind* sys_name = value(kColRemSysName, index, Varbind::Type::kOctets);
    if (!port_id || port_id->bytes.empty()) continue;
    const std::string port = localPort(index[1]);
    if (port.empty()) continue;  // a port the topology does not have
    LldpInfo info;
    info.port_subtype =
        port_subtype ? static_cast<uint8_t>(port_subtype->integer) : uint8_t{kPortLocal};
    info.port_id = port_id->bytes;
    if (chassis) info.chassis_id = chassis->bytes;
    info.chassis_subtype =
        chassis_subtype ? static_cast<uint8_t>(chassis_subtype->integer) : uint8_t{kChassisLocal};
    if (sys_name) info.system_name = sys_name->bytes;
    Seen& seen = by_port[port];
    if (seen.neighbor.empty() || index[0] >= seen.time_mark) {
      seen.time_mark = index[0];
      seen.neighbor = info.neighbor();
    }
  }
  if (bad > 0 && problems) {
    problems->push_back(first_bad + (bad > 1 ? " (and " + std::to_string(bad - 1) + " more)" : "") +
                        "; those entries skipped");
  }
  std::vector<v1::LldpNeighbor> out;
  for (const auto& [port, seen] : by_port) {
    v1::LldpNeighbor r;
    r.set_t(t);
    r.set_port(node + ":" + port);
    r.set_neighbor(seen.neighbor);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace netdiag::collector::snmp
