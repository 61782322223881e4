#pragma once

// LLDP-MIB (IEEE 802.1AB) as the wire's lldp records: every neighbour the
// switch's lldpRemTable holds becomes {port, neighbor} named as the agent's
// own capture names it (collector/lldp.h: "<system name or chassis id>:
// <port id>"), so a miscabling looks the same whichever collector saw it.
//
//   lldpRemTable index   lldpRemTimeMark . lldpRemLocalPortNum . lldpRemIndex
//   local port           lldpLocPortTable's port id for that number when its
//                        subtype is interfaceName(5) or local(7) and it names
//                        a known port; else the interface whose ifIndex is
//                        that number (LLDP-MIB allows either, lldpd uses the
//                        ifIndex)
//   several entries on   the newest (largest time mark) wins: a re-cabled
//   one port             port's old neighbour lingers until its TTL ends
//
// IDs and names longer than 802.1AB allows (255 bytes) are a malformed
// response: those entries are skipped and reported.
//
// Thread-safety: none.

#include <string>
#include <vector>

#include "collector/snmp/port_table.h"
#include "collector/snmp/walk.h"
#include "netdiag/v1/collector.pb.h"

namespace netdiag::collector::snmp {

enum LldpColumn : size_t {
  kColLocPortIdSubtype,
  kColLocPortId,
  kColRemChassisIdSubtype,
  kColRemChassisId,
  kColRemPortIdSubtype,
  kColRemPortId,
  kColRemSysName,
};

std::vector<Oid> lldpColumns();

// One finished walk of lldpColumns() on `node`, whose interfaces `ports`
// knows from its last counters walk. Records are stamped t.
std::vector<v1::LldpNeighbor> lldpRecords(double t, const std::string& node, const PortTable& ports,
                                          const BulkWalk& walk, std::vector<std::string>* problems);

}  // namespace netdiag::collector::snmp
