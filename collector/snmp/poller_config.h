#pragma once

// `netdiag poll snmp`'s settings: one YAML file (docs/operations.md has a
// full example). Secrets never come from the command line: an SNMPv2c
// community may be inline or in community_file; SNMPv3 passphrases only
// in files (auth_key_file, priv_key_file), which should be readable by the
// poller alone (a warning says so otherwise). No secret is ever logged.
//
//   identity: snmp-poller-1      # the agent name it streams as; the
//                                # analyzer's --collectors assigns its switches
//   analyzer: 10.0.0.5:7600
//   interval: 10                 # seconds between counter polls of a target
//   lldp_interval: 30            # seconds between lldpRemTable walks (0: off)
//   timeout: 2                   # seconds per request, then...
//   retries: 1                   # ...this many resends
//   defaults: {version: 2c, community: public}   # merged into every target
//   targets:
//     - node: leaf1              # the topology's node name
//       address: 10.1.0.1:161    # UDP host:port (port 161 when left out)
//       version: 3
//       user: netdiag
//       auth: SHA                # MD5 SHA SHA-224 SHA-256 SHA-384 SHA-512
//       auth_key_file: /etc/netdiag/snmp-auth.key
//       priv: AES                # AES (128) or DES
//       priv_key_file: /etc/netdiag/snmp-priv.key
//       port_map: {"Ethernet1/1": swp1}   # ifName -> topology port
//
// Thread-safety: plain data.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace netdiag::collector::snmp {

struct SnmpTarget {
  std::string node;
  std::string address;  // "host:port"
  int version = 2;      // 2: SNMPv2c; 3: SNMPv3 with USM
  std::string community;
  std::string user;
  std::string auth;                // "" (noAuthNoPriv) or a protocol name above
  std::string priv;                // "" (authNoPriv) or AES / DES
  std::string auth_key, priv_key;  // the passphrases, read from their files
  std::map<std::string, std::string> port_map;
  std::string where;  // "poller.yaml:12", for messages
};

struct PollerConfig {
  std::string identity;
  std::string analyzer;
  std::string topology;  // optional: only its ports are reported
  std::string spool_dir;
  uint64_t spool_max_bytes = 256ull << 20;
  std::string metrics_address = "127.0.0.1:9710";
  std::string tls_ca, tls_cert, tls_key;
  double batch_interval = 1;
  double interval = 10;
  double lldp_interval = 30;
  double timeout = 2;
  int retries = 1;
  // Bounds of one request and one table: a GETBULK asks for at most
  // max_repetitions rows and max_varbinds values; a table may hold at most
  // max_rows rows (a large switch has ~20,000 interfaces).
  int max_repetitions = 25;
  int max_varbinds = 400;
  size_t max_rows = 65536;
  // Targets polled at once (each has at most one request outstanding).
  size_t max_in_flight = 1024;
  std::vector<SnmpTarget> targets;
};

// The most targets one poller takes (its fds, its metrics' cardinality).
inline constexpr size_t kMaxTargets = 100000;
inline constexpr size_t kMaxPollerConfigBytes = 16u << 20;

// Parses `yaml` (from `source`, for messages; key files are relative to
// `base_dir`) into *config. Errors name the line ("poller.yaml:7: targets[2]:
// version: expected 2c or 3, got \"1\""); warnings are advice.
std::vector<std::string> parsePollerConfig(const std::string& yaml, const std::string& source,
                                           const std::string& base_dir, PollerConfig* config,
                                           std::vector<std::string>* warnings);
std::vector<std::string> loadPollerConfig(const std::string& path, PollerConfig* config,
                                          std::vector<std::string>* warnings);

}  // namespace netdiag::collector::snmp
