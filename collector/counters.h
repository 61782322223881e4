#pragma once

// Per-port counters of the monitored interfaces, read from sysfs (and the
// ethtool ioctl), as the wire's v1::PortCounters (formats.md §2, kind port).
//
// Sources, per interface <if> (the topology's port name) and what they fill:
//   <root>/class/net/<if>/statistics/rx_packets, tx_packets -> rx_packets, tx_packets
//   .../statistics/rx_errors, rx_crc_errors, rx_dropped, tx_dropped
//                                      -> rx_errors, rx_crc_errors, rx_drops, tx_drops
//   <root>/class/net/<if>/carrier_changes -> carrier_changes
//   <root>/class/net/<if>/operstate   -> oper_up ("up" true; "down",
//       "lowerlayerdown", "notpresent", "dormant", "testing" false; "unknown"
//       — virtual devices — falls back to the `carrier` file, else absent)
//   ethtool statistics (SIOCETHTOOL GSTRINGS/GSTATS), where the driver has them:
//       a name with "crc" or "fcs" and "err" (not tx_*) -> rx_crc_errors,
//       replacing the sysfs value (drivers such as mlx5/ice count PHY CRC
//       errors there only); a name with "fec" and "uncorr" -> fec_uncorrectable.
//       Several matching names: the largest (per-lane/per-queue variants are
//       parts of the whole). No ethtool stats or no match: left as sysfs says.
//   RDMA ports, <root>/class/infiniband/<dev>/ports/<n>/counters, for the
//       netdev associated with the port (gid_attrs/ndevs/0, else the one
//       entry of <dev>/device/net, matched by dev_port when several):
//       port_rcv_errors is added to rx_errors and rx_crc_errors (IB counts
//       packets failing ICRC/VCRC and link-level checks there),
//       symbol_error to fec_uncorrectable (PHY errors FEC did not correct),
//       port_xmit_discards to tx_drops, and link_downed counts for two
//       carrier changes when the netdev has no carrier_changes. Packet
//       counts stay the netdev's (RDMA traffic may or may not be in them,
//       depending on the driver; we do not guess).
//
// Resets: every source counter is tracked separately; one that goes
// backwards (reboot, driver reload, interface re-created) is taken to have
// restarted from zero, and an offset keeps the reported value monotonic, so
// the analyzer never sees a huge bogus delta. resets() counts them.
//
// Errors: a missing or malformed file (not a number, unreadable) leaves that
// field absent and yields one message naming the file and the problem; an
// interface missing from sysfs yields one message and no record. Missing
// ethtool or RDMA counters are normal and not errors.
//
// Thread-safety: none; one reader per agent loop.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collector/source_stats.h"
#include "netdiag/v1/collector.pb.h"

namespace netdiag::collector {

// name -> value of one interface's ethtool statistics; nullopt when the
// interface or driver has none (then *error is set only for unexpected
// failures, e.g. "eth0: SIOCETHTOOL GSTATS: Operation not permitted").
using EthtoolStats = std::map<std::string, uint64_t>;
using EthtoolReader =
    std::function<std::optional<EthtoolStats>(const std::string& ifname, std::string* error)>;

// The real one: ETHTOOL_GDRVINFO / GSTRINGS(ETH_SS_STATS) / GSTATS ioctls
// in the caller's network namespace. Needs no privilege.
std::optional<EthtoolStats> readEthtoolStats(const std::string& ifname, std::string* error);

class CounterReader {
 public:
  // sysfs_root: "/sys", or a fake tree in tests; node: this agent's node
  // name, so ports are reported as "<node>:<if>"; interfaces: the local
  // interface names to monitor. `ethtool` may be empty to skip ethtool.
  CounterReader(std::string sysfs_root, std::string node, std::vector<std::string> interfaces,
                EthtoolReader ethtool = readEthtoolStats);

  // The monitored set changed (a new plan); state of kept interfaces stays.
  void setInterfaces(std::vector<std::string> interfaces);

  // One record per monitored interface present in sysfs, stamped t = now
  // (wall-clock Unix seconds). Problems are appended to *errors if given;
  // one outcome per interface to *polls (failed: missing, or any problem).
  std::vector<v1::PortCounters> read(double now, std::vector<std::string>* errors = nullptr,
                                     std::vector<TargetPoll>* polls = nullptr);

  uint64_t resets() const { return resets_; }
  uint64_t errors() const { return errors_; }  // messages produced so far

 private:
  // Keeps one source counter monotonic across resets.
  struct Tracker {
    uint64_t last_raw = 0;
    uint64_t offset = 0;
    bool seen = false;
  };
  uint64_t monotonic(const std::string& key, uint64_t raw);
  std::optional<uint64_t> readCounter(const std::string& file, const std::string& key,
                                      std::vector<std::string>* errors, bool required);
  std::optional<std::string> rdmaPortFor(const std::string& ifname);
  void mapRdma();

  std::string root_;
  std::string node_;
  std::vector<std::string> interfaces_;
  EthtoolReader ethtool_;
  std::map<std::string, Tracker> trackers_;  // "<if>/<source counter>"
  std::map<std::string, std::string> rdma_;  // netdev -> ".../ports/<n>" dir
  uint64_t resets_ = 0;
  uint64_t errors_ = 0;
};

}  // namespace netdiag::collector
