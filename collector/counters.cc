#include "collector/counters.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace netdiag::collector {
namespace {

namespace fs = std::filesystem;

enum class FileStatus { kOk, kMissing, kError };

// Reads a small sysfs file with read(2), so errors keep their errno (some
// attributes fail with EINVAL while a link is down).
FileStatus readSmallFile(const std::string& path, std::string* out, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return FileStatus::kMissing;
    *error = std::strerror(errno);
    return FileStatus::kError;
  }
  out->clear();
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = std::strerror(errno);
      ::close(fd);
      return FileStatus::kError;
    }
    if (n == 0 || out->size() > 4096) break;  // sysfs values are short
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return FileStatus::kOk;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::optional<uint64_t> parseU64(const std::string& text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return v;
}

// Shows file contents in an error message: bounded and printable.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < 40; ++i) out += (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
  if (s.size() > 40) out += "...";
  return out + "\"";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

bool isCrcName(const std::string& raw) {
  const std::string n = lower(raw);
  if (n.rfind("tx", 0) == 0 || has(n, "tx_") || has(n, ".tx")) return false;
  return (has(n, "crc") || has(n, "fcs")) && has(n, "err");
}

bool isFecUncorrectableName(const std::string& raw) {
  const std::string n = lower(raw);
  return has(n, "fec") && has(n, "uncorr");
}

void report(std::vector<std::string>* errors, uint64_t* count, std::string message) {
  ++*count;
  if (errors) errors->push_back(std::move(message));
}

// Adds b to a when b is present (a becomes b when a is absent).
std::optional<uint64_t> plus(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!b) return a;
  return a.value_or(0) + *b;
}

}  // namespace

std::optional<EthtoolStats> readEthtoolStats(const std::string& ifname, std::string* error) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ) return std::nullopt;
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    if (error) *error = ifname + ": socket for SIOCETHTOOL: " + std::strerror(errno);
    return std::nullopt;
  }
  struct ifreq ifr {};
  std::memcpy(ifr.ifr_name, ifname.data(), ifname.size());
  // Absent device or driver without statistics: nothing to report.
  auto quiet = [](int e) { return e == EOPNOTSUPP || e == ENODEV || e == EINVAL || e == ENXIO; };
  auto call = [&](void* data, const char* what) {
    ifr.ifr_data = static_cast<char*>(data);
    if (::ioctl(fd, SIOCETHTOOL, &ifr) == 0) return true;
    if (!quiet(errno) && error)
      *error = ifname + ": SIOCETHTOOL " + what + ": " + std::strerror(errno);
    return false;
  };

  std::optional<EthtoolStats> result;
  struct ethtool_drvinfo info {};
  info.cmd = ETHTOOL_GDRVINFO;
  if (call(&info, "GDRVINFO") && info.n_stats > 0 && info.n_stats < 100000) {
    const uint32_t n = info.n_stats;
    std::vector<uint64_t> strings_buf(
        (sizeof(ethtool_gstrings) + size_t{n} * ETH_GSTRING_LEN) / sizeof(uint64_t) + 1);
    auto* strings = reinterpret_cast<ethtool_gstrings*>(strings_buf.data());
    strings->cmd = ETHTOOL_GSTRINGS;
    strings->string_set = ETH_SS_STATS;
    strings->len = n;
    std::vector<uint64_t> stats_buf(
        (sizeof(ethtool_stats) + size_t{n} * sizeof(uint64_t)) / sizeof(uint64_t) + 1);
    auto* stats = reinterpret_cast<ethtool_stats*>(stats_buf.data());
    stats->cmd = ETHTOOL_GSTATS;
    stats->n_stats = n;
    if (call(strings, "GSTRINGS") && call(stats, "GSTATS")) {
      // The driver may have changed its set in between; use the common part.
      const uint32_t count = std::min({n, strings->len, stats->n_stats});
      result.emplace();
      for (uint32_t i = 0; i < count; ++i) {
        const char* name =
            reinterpret_cast<const char*>(strings->data) + size_t{i} * ETH_GSTRING_LEN;
        (*result)[std::string(name, strnlen(name, ETH_GSTRING_LEN))] = stats->data[i];
      }
    }
  }
  ::close(fd);
  return result;
}

CounterReader::CounterReader(std::string sysfs_root, std::string node,
                             std::vector<std::string> interfaces, EthtoolReader ethtool)
    : root_(std::move(sysfs_root)),
      node_(std::move(node)),
      interfaces_(std::move(interfaces)),
      ethtool_(std::move(ethtool)) {}

void CounterReader::setInterfaces(std::vector<std::string> interfaces) {
  interfaces_ = std::move(interfaces);
}

uint64_t CounterReader::monotonic(const std::string& key, uint64_t raw) {
  Tracker& t = trackers_[key];
  if (t.seen && raw < t.last_raw) {
    // Restarted from zero: continue from the last value reported.
    t.offset += t.last_raw;
    ++resets_;
  }
  t.seen = true;
  t.last_raw = raw;
  return t.offset + raw;
}

std::optional<uint64_t> CounterReader::readCounter(const std::string& file, const std::string& key,
                                                   std::vector<std::string>* errors,
                                                   bool required) {
  std::string text, error;
  switch (readSmallFile(file, &text, &error)) {
    case FileStatus::kMissing:
      if (required) report(errors, &errors_, file + ": missing");
      return std::nullopt;
    case FileStatus::kError:
      report(errors, &errors_, file + ": " + error);
      return std::nullopt;
    case FileStatus::kOk:
      break;
  }
  const std::string value = trim(text);
  const auto v = parseU64(value);
  if (!v) {
    report(errors, &errors_, file + ": not a counter: " + quoted(value));
    return std::nullopt;
  }
  return monotonic(key, *v);
}

void CounterReader::mapRdma() {
  rdma_.clear();
  std::error_code ec;
  const fs::path ib = fs::path(root_) / "class" / "infiniband";
  if (!fs::is_directory(ib, ec)) return;
  for (const auto& dev : fs::directory_iterator(ib, ec)) {
    std::error_code ec2;
    const fs::path ports = dev.path() / "ports";
    if (!fs::is_directory(ports, ec2)) continue;
    for (const auto& port : fs::directory_iterator(ports, ec2)) {
      std::string text, error, ndev;
      // RoCE: the netdev carrying GID 0 of the port.
      if (readSmallFile((port.path() / "gid_attrs" / "ndevs" / "0").string(), &text, &error) ==
          FileStatus::kOk)
        ndev = trim(text);
      if (ndev.empty()) {
        // InfiniBand (IPoIB) or no GID table: the PCI function's netdevs.
        std::vector<std::string> nets;
        std::error_code ec3;
        const fs::path net = dev.path() / "device" / "net";
        if (fs::is_directory(net, ec3))
          for (const auto& n : fs::directory_iterator(net, ec3))
            nets.push_back(n.path().filename().string());
        if (nets.size() == 1) {
          ndev = nets[0];
        } else {
          const auto port_no = parseU64(port.path().filename().string());
          for (const auto& n : nets) {
            std::string dp;
            if (port_no && *port_no > 0 &&
                readSmallFile((net / n / "dev_port").string(), &dp, &error) == FileStatus::kOk &&
                parseU64(trim(dp)) == *port_no - 1)
              ndev = n;
          }
        }
      }
      if (!ndev.empty()) rdma_[ndev] = port.path().string();
    }
  }
}

std::vector<v1::PortCounters> CounterReader::read(double now, std::vector<std::string>* errors,
                                                  std::vector<TargetPoll>* polls) {
  std::vector<v1::PortCounters> out;
  mapRdma();
  for (const std::string& ifname : interfaces_) {
    const TargetPollTimer timer(polls, ifname,
                                [this, before = errors_] { return errors_ == before; });
    const std::string dir = (fs::path(root_) / "class" / "net" / ifname).string();
    std::error_code ec;
    if (ifname.empty() || ifname.find('/') != std::string::npos || !fs::is_directory(dir, ec)) {
      report(errors, &errors_, "interface " + quoted(ifname) + ": not found (" + dir + ")");
      continue;
    }
    const std::string stats = dir + "/statistics/";
    auto stat = [&](const char* name) {
      return readCounter(stats + name, ifname + "/statistics/" + name, errors, true);
    };
    v1::PortCounters pc;
    pc.set_t(now);
    pc.set_port(node_ + ":" + ifname);

    // oper_up
    {
      std::string text, error;
      const std::string file = dir + "/operstate";
      const FileStatus st = readSmallFile(file, &text, &error);
      const std::string state = trim(text);
      if (st == FileStatus::kMissing) {
        report(errors, &errors_, file + ": missing");
      } else if (st == FileStatus::kError) {
        report(errors, &errors_, file + ": " + error);
      } else if (state == "up") {
        pc.set_oper_up(true);
      } else if (state == "down" || state == "lowerlayerdown" || state == "notpresent" ||
                 state == "dormant" || state == "testing") {
        pc.set_oper_up(false);
      } else if (state == "unknown") {
        std::string carrier;
        if (readSmallFile(dir + "/carrier", &carrier, &error) == FileStatus::kOk) {
          if (trim(carrier) == "1") pc.set_oper_up(true);
          if (trim(carrier) == "0") pc.set_oper_up(false);
        }
      } else {
        report(errors, &errors_, file + ": unexpected operstate " + quoted(state));
      }
    }

    std::optional<uint64_t> rx_packets = stat("rx_packets");
    std::optional<uint64_t> tx_packets = stat("tx_packets");
    std::optional<uint64_t> rx_errors = stat("rx_errors");
    std::optional<uint64_t> rx_drops = stat("rx_dropped");
    std::optional<uint64_t> tx_drops = stat("tx_dropped");
    std::optional<uint64_t> carrier =
        readCounter(dir + "/carrier_changes", ifname + "/carrier_changes", errors, true);
    std::optional<uint64_t> rx_crc, fec;

    if (ethtool_) {
      std::string error;
      const auto et = ethtool_(ifname, &error);
      if (!error.empty()) report(errors, &errors_, error);
      if (et) {
        std::optional<uint64_t> crc_raw, fec_raw;
        for (const auto& [name, value] : *et) {
          if (isCrcName(name)) crc_raw = std::max(crc_raw.value_or(0), value);
          if (isFecUncorrectableName(name)) fec_raw = std::max(fec_raw.value_or(0), value);
        }
        if (crc_raw) rx_crc = monotonic(ifname + "/ethtool:crc", *crc_raw);
        if (fec_raw) fec = monotonic(ifname + "/ethtool:fec_uncorrectable", *fec_raw);
      }
    }
    if (!rx_crc) rx_crc = stat("rx_crc_errors");

    if (const auto it = rdma_.find(ifname); it != rdma_.end()) {
      const std::string counters = it->second + "/counters/";
      auto rdma = [&](const char* name) {
        return readCounter(counters + name, ifname + "/rdma:" + name, errors, false);
      };
      const auto rcv_errors = rdma("port_rcv_errors");
      rx_errors = plus(rx_errors, rcv_errors);
      rx_crc = plus(rx_crc, rcv_errors);
      fec = plus(fec, rdma("symbol_error"));
      tx_drops = plus(tx_drops, rdma("port_xmit_discards"));
      const auto downed = rdma("link_downed");
      if (!carrier && downed) carrier = 2 * *downed;
    }

    if (rx_packets) pc.set_rx_packets(*rx_packets);
    if (tx_packets) pc.set_tx_packets(*tx_packets);
    if (rx_errors) pc.set_rx_errors(*rx_errors);
    if (rx_crc) pc.set_rx_crc_errors(*rx_crc);
    if (rx_drops) pc.set_rx_drops(*rx_drops);
    if (tx_drops) pc.set_tx_drops(*tx_drops);
    if (fec) pc.set_fec_uncorrectable(*fec);
    if (carrier) pc.set_carrier_changes(*carrier);
    out.push_back(std::move(pc));
  }
  return out;
}

}  // namespace netdiag::collector
