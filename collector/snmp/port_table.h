#pragma once

// One switch's interfaces as IF-MIB and EtherLike-MIB show them, turned into
// the wire's port records exactly as formats.md §2 reads them:
//
//   rx_packets     ifHCIn{Ucast,Multicast,Broadcast}Pkts summed (ifXTable),
//                  else ifIn{Ucast,NUcast}Pkts (ifTable, 32-bit)
//   tx_packets     the same for Out
//   rx_errors      ifInErrors          rx_drops   ifInDiscards
//   rx_crc_errors  dot3StatsFCSErrors  tx_drops   ifOutDiscards
//   oper_up        ifOperStatus: up(1) true; down(2), dormant(5),
//                  notPresent(6), lowerLayerDown(7) false; testing(3) and
//                  unknown(4) leave it absent
//   carrier_changes  counted by the poller, as Linux counts them: +1 for each
//                  change of ifOperStatus between up and not up seen from one
//                  poll to the next; +2 when the status is the same but
//                  ifLastChange moved (a down-up or up-down cycle fell
//                  between polls)
//
// Counters: 64-bit ones go out as read. 32-bit ones (every ifTable counter
// and dot3StatsFCSErrors) are unwrapped first: §2 reads a lower value as a
// reset, so a wrap must not look like one. A restart of the switch
// (sysUpTime going back, other than its own 497-day wrap) is emitted as a
// reset: every unwrapped counter starts again from its raw value, and no
// carrier change is inferred across it. An ifIndex whose ifName changed is
// a new interface (its state starts over).
//
// Port names: ifName, through the target's port_map where it has the name;
// with a set of known ports (the topology's, for this switch), interfaces
// outside it are skipped (a switch's management and loopback interfaces).
//
// Thread-safety: none; one per target, updated by the poller's I/O thread.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collector/snmp/walk.h"
#include "netdiag/v1/collector.pb.h"

namespace netdiag::collector::snmp {

// The columns of a counters walk, in this order (BulkWalk column indexes).
enum IfColumn : size_t {
  kColName,
  kColOperStatus,
  kColLastChange,
  kColInErrors,
  kColInDiscards,
  kColOutDiscards,
  kColFcsErrors,
  // 64-bit packet counters (ifXTable)...
  kColHcInUcast,
  kColHcInMcast,
  kColHcInBcast,
  kColHcOutUcast,
  kColHcOutMcast,
  kColHcOutBcast,
  // ...or, on agents without them, the 32-bit ones (ifTable).
  kColInUcast = kColHcInUcast,
  kColInNUcast,
  kColOutUcast,
  kColOutNUcast,
};

// The counters walk's columns: with the 64-bit packet counters or the
// 32-bit ones.
std::vector<Oid> counterColumns(bool hc);

// sysUpTime's TimeTicks wrap after 2^32 hundredths of a second; a value
// this close below the wrap followed by a small one is a wrap, not a restart.
inline constexpr uint64_t kUptimeWrapMargin = 100ull * 3600;  // an hour

class PortTable {
 public:
  PortTable(std::string node, std::map<std::string, std::string> port_map,
            std::set<std::string> known_ports);

  // One finished walk of counterColumns(usesHcCounters()) with the
  // sysUpTime read in the same request (nullopt when the agent gave none).
  // Returns the port records, stamped t; problems (a value of the wrong
  // type, an index that is not an ifIndex) go to *problems, one line each.
  std::vector<v1::PortCounters> update(double t, std::optional<uint32_t> uptime,
                                       const BulkWalk& walk, std::vector<std::string>* problems);

  // Whether the next walk should read the 64-bit packet counters: true
  // until a walk found an agent with interfaces but none of them.
  bool usesHcCounters() const { return hc_; }
  // Restarts seen (sysUpTime going back).
  uint64_t restarts() const { return restarts_; }
  // Topology port names by ifIndex, from the last walk (LLDP-MIB's local
  // port numbers are usually ifIndexes).
  const std::map<uint32_t, std::string>& portNames() const { return port_names_; }
  // The port name for an interface name (port_map applied); "" when the
  // port is not one the topology knows.
  std::string portFor(const std::string& if_name) const;

 private:
  // A 32-bit counter unwrapped onto 64 bits.
  struct Wide {
    std::optional<uint32_t> raw;
    uint64_t value = 0;
    uint64_t feed(uint32_t now);
  };
  struct Interface {
    std::string if_name;
    std::map<size_t, Wide> wide;  // by column
    std::optional<bool> up;
    std::optional<uint32_t> last_change;
    uint64_t carrier = 0;
  };

  std::string node_;
  std::map<std::string, std::string> port_map_;
  std::set<std::string> known_ports_;
  bool hc_ = true;
  std::optional<uint32_t> uptime_;
  uint64_t restarts_ = 0;
  std::map<uint32_t, Interface> interfaces_;  // by ifIndex
  std::map<uint32_t, std::string> port_names_;
};

}  // namespace netdiag::collector::snmp
