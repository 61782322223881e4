#pragma once

// OIDs as plain sub-identifier vectors, the numeric OIDs the poller reads
// (Debian ships no MIB files, and the poller never needs them), and what a
// varbind of a response holds once it left net-snmp.
//
//   SNMPv2-MIB  sysUpTime            1.3.6.1.2.1.1.3.0
//   IF-MIB      ifTable              1.3.6.1.2.1.2.2.1.C.ifIndex
//               ifXTable             1.3.6.1.2.1.31.1.1.1.C.ifIndex
//   EtherLike   dot3StatsTable       1.3.6.1.2.1.10.7.2.1.C.ifIndex
//   LLDP-MIB    lldpLocPortTable     1.0.8802.1.1.2.1.3.7.1.C.lldpLocPortNum
//               lldpRemTable         1.0.8802.1.1.2.1.4.1.1.C.timeMark.localPortNum.index

#include <cstdint>
#include <string>
#include <vector>

namespace netdiag::collector::snmp {

using Oid = std::vector<uint32_t>;

// "1.3.6.1.2.1.1.3.0"
std::string oidText(const Oid& oid);
// Whether `oid` lies strictly under `root`.
bool oidUnder(const Oid& oid, const Oid& root);
// The sub-identifiers after `root` (oid must be under it).
Oid oidSuffix(const Oid& oid, const Oid& root);
Oid oidJoin(const Oid& root, uint32_t column);

namespace oids {
inline const Oid kSysUpTime = {1, 3, 6, 1, 2, 1, 1, 3};  // .0 is the instance
inline const Oid kIfEntry = {1, 3, 6, 1, 2, 1, 2, 2, 1};
inline const Oid kIfXEntry = {1, 3, 6, 1, 2, 1, 31, 1, 1, 1};
inline const Oid kDot3StatsEntry = {1, 3, 6, 1, 2, 1, 10, 7, 2, 1};
inline const Oid kLldpLocPortEntry = {1, 0, 8802, 1, 1, 2, 1, 3, 7, 1};
inline const Oid kLldpRemEntry = {1, 0, 8802, 1, 1, 2, 1, 4, 1, 1};
}  // namespace oids

// A varbind's value, typed as SNMP (RFC 3416) has it.
struct Varbind {
  enum class Type {
    kInteger,
    kOctets,
    kOid,
    kIpAddress,
    kCounter32,
    kGauge32,
    kTimeTicks,
    kCounter64,
    kNull,
    kNoSuchObject,
    kNoSuchInstance,
    kEndOfMibView,
    kOther,
  };
  Oid oid;
  Type type = Type::kNull;
  int64_t integer = 0;  // kInteger
  uint64_t number = 0;  // the unsigned types
  std::string bytes;    // kOctets (and the printable form of the rest)
};

const char* typeName(Varbind::Type type);

}  // namespace netdiag::collector::snmp
