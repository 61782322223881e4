#include "collector/snmp/oid.h"

#include <algorithm>

namespace netdiag::collector::snmp {

std::string oidText(const Oid& oid) {
  std::string out;
  for (uint32_t s : oid) {
    if (!out.empty()) out += '.';
    out += std::to_string(s);
  }
  return out;
}

bool oidUnder(const Oid& oid, const Oid& root) {
  return oid.size() > root.size() && std::equal(root.begin(), root.end(), oid.begin());
}

Oid oidSuffix(const Oid& oid, const Oid& root) { return Oid(oid.begin() + root.size(), oid.end()); }

Oid oidJoin(const Oid& root, uint32_t column) {
  Oid out = root;
  out.push_back(column);
  return out;
}

const char* typeName(Varbind::Type type) {
  switch (type) {
    case Varbind::Type::kInteger:
      return "INTEGER";
    case Varbind::Type::kOctets:
      return "OCTET STRING";
    case Varbind::Type::kOid:
      return "OBJECT IDENTIFIER";
    case Varbind::Type::kIpAddress:
      return "IpAddress";
    case Varbind::Type::kCounter32:
      return "Counter32";
    case Varbind::Type::kGauge32:
      return "Gauge32";
    case Varbind::Type::kTimeTicks:
      return "TimeTicks";
    case Varbind::Type::kCounter64:
      return "Counter64";
    case Varbind::Type::kNull:
      return "NULL";
    case Varbind::Type::kNoSuchObject:
      return "noSuchObject";
    case Varbind::Type::kNoSuchInstance:
      return "noSuchInstance";
    case Varbind::Type::kEndOfMibView:
      return "endOfMibView";
    case Varbind::Type::kOther:
      return "an unknown type";
  }
  return "an unknown type";
}

}  // namespace netdiag::collector::snmp
