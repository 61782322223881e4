#include "collector/lldp.h"

#include <cstdio>
#include <cstring>

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>

namespace netdiag::collector {
namespace {

std::string hexBytes(const std::string& raw, char sep) {
  std::string out;
  char buf[4];
  for (size_t i = 0; i < raw.size(); ++i) {
    if (i > 0 && sep) out += sep;
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(raw[i]));
    out += buf;
  }
  return out;
}

bool printable(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

std::string textOrHex(const std::string& raw) { return printable(raw) ? raw : hexBytes(raw, ':'); }

// IANA address family byte + address.
std::string networkAddress(const std::string& raw) {
  const auto family = static_cast<unsigned char>(raw[0]);
  char buf[INET6_ADDRSTRLEN];
  if (family == 1 && raw.size() == 5 && inet_ntop(AF_INET, raw.data() + 1, buf, sizeof buf))
    return buf;
  if (family == 2 && raw.size() == 17 && inet_ntop(AF_INET6, raw.data() + 1, buf, sizeof buf))
    return buf;
  return hexBytes(raw, ':');
}

std::string at(size_t offset) { return " at offset " + std::to_string(offset); }

bool fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return false;
}

// Checks an ID TLV (chassis or port): subtype, length, address shape.
bool checkId(const char* what, uint8_t subtype, const std::string& id, bool mac_subtype,
             bool address_subtype, size_t offset, std::string* error) {
  if (subtype == 0 || subtype > 7)
    return fail(error, std::string(what) + " ID" + at(offset) + ": reserved subtype " +
                           std::to_string(subtype));
  if (id.empty() || id.size() > 255)
    return fail(error, std::string(what) + " ID" + at(offset) + ": length " +
                           std::to_string(id.size()) + " (must be 1..255)");
  if (mac_subtype && id.size() != 6)
    return fail(error, std::string(what) + " ID" + at(offset) + ": MAC address of " +
                           std::to_string(id.size()) + " bytes (must be 6)");
  if (address_subtype) {
    const auto family = static_cast<unsigned char>(id[0]);
    if ((family == 1 && id.size() != 5) || (family == 2 && id.size() != 17) || id.size() < 2)
      return fail(error, std::string(what) + " ID" + at(offset) + ": network address of " +
                             std::to_string(id.size() - 1) + " bytes for family " +
                             std::to_string(family));
  }
  return true;
}

}  // namespace

std::string LldpInfo::chassisText() const {
  if (chassis_id.empty()) return "";
  switch (chassis_subtype) {
    case kChassisMac:
      return hexBytes(chassis_id, ':');
    case kChassisNetworkAddress:
      return networkAddress(chassis_id);
    default:
      return textOrHex(chassis_id);
  }
}

std::string LldpInfo::portText() const {
  if (port_id.empty()) return "";
  switch (port_subtype) {
    case kPortMac:
      return hexBytes(port_id, ':');
    case kPortNetworkAddress:
      return networkAddress(port_id);
    default:
      return textOrHex(port_id);
  }
}

std::string LldpInfo::neighbor() const {
  const std::string system =
      system_name && !system_name->empty() ? textOrHex(*system_name) : chassisText();
  return system + ":" + portText();
}

std::optional<LldpInfo> decodeLldpdu(const uint8_t* data, size_t size, std::string* error) {
  LldpInfo info;
  size_t pos = 0;
  int index = 0;  // TLVs seen
  bool ended = false;
  while (pos < size) {
    if (size - pos < 2) {
      fail(error, "truncated TLV header" + at(pos) + " (1 byte left)");
      return std::nullopt;
    }
    const uint16_t header = static_cast<uint16_t>(data[pos] << 8 | data[pos + 1]);
    const uint8_t type = static_cast<uint8_t>(header >> 9);
    const size_t length = header & 0x1ff;
    const size_t value_at = pos + 2;
    const std::string where = "TLV " + std::to_string(type) + at(pos);
    if (length > size - value_at) {
      fail(error, where + ": length " + std::to_string(length) + " runs past the end (" +
                      std::to_string(size - value_at) + " bytes left)");
      return std::nullopt;
    }
    const auto* value = data + value_at;
    // The three mandatory TLVs come first, in order.
    static constexpr uint8_t kMandatory[] = {kLldpChassisId, kLldpPortId, kLldpTtl};
    if (index < 3 && type != kMandatory[index]) {
      static const char* kNames[] = {"chassis ID", "port ID", "TTL"};
      fail(error, where + ": expected the " + kNames[index] + " TLV (type " +
                      std::to_string(kMandatory[index]) + ") here");
      return std::nullopt;
    }
    if (index >= 3 && (type == kLldpChassisId || type == kLldpPortId || type == kLldpTtl)) {
      fail(error, where + ": duplicate mandatory TLV");
      return std::nullopt;
    }
    switch (type) {
      case kLldpEnd:
        if (length != 0) {
          fail(error, where + ": End TLV with length " + std::to_string(length));
          return std::nullopt;
        }
        ended = true;
        break;
      case kLldpChassisId:
      case kLldpPortId: {
        if (length < 2) {
          fail(error, where + ": ID TLV of length " + std::to_string(length) + " (must be 2..256)");
          return std::nullopt;
        }
        const uint8_t subtype = value[0];
        std::string id(reinterpret_cast<const char*>(value + 1), length - 1);
        const bool chassis = type == kLldpChassisId;
        const bool mac = chassis ? subtype == kChassisMac : subtype == kPortMac;
        const bool address =
            chassis ? subtype == kChassisNetworkAddress : subtype == kPortNetworkAddress;
        if (!checkId(chassis ? "chassis" : "port", subtype, id, mac, address, pos, error))
          return std::nullopt;
        (chassis ? info.chassis_subtype : info.port_subtype) = subtype;
        (chassis ? info.chassis_id : info.port_id) = std::move(id);
        break;
      }
      case kLldpTtl:
        if (length != 2) {
          fail(error, where + ": TTL of length " + std::to_string(length) + " (must be 2)");
          return std::nullopt;
        }
        info.ttl = static_cast<uint16_t>(value[0] << 8 | value[1]);
        break;
      case kLldpPortDescription:
      case kLldpSystemName: {
        auto& field = type == kLldpSystemName ? info.system_name : info.port_description;
        if (field) {
          fail(error, where + ": duplicate " +
                          (type == kLldpSystemName ? "system name" : "port description") + " TLV");
          return std::nullopt;
        }
        field = std::string(reinterpret_cast<const char*>(value), length);
        break;
      }
      default:
        break;  // other basic, management and organisational TLVs: not needed
    }
    pos = value_at + length;
    ++index;
    if (ended) break;
  }
  if (index < 3) {
    static const char* kNames[] = {"chassis ID", "port ID", "TTL"};
    fail(error, std::string("LLDPDU of ") + std::to_string(size) + " bytes ends before its " +
                    kNames[index] + " TLV");
    return std::nullopt;
  }
  return info;
}

std::optional<LldpInfo> decodeLldpFrame(const uint8_t* data, size_t size, std::string* error) {
  if (size < 14) {
    fail(error, "frame of " + std::to_string(size) + " bytes is shorter than an Ethernet header");
    return std::nullopt;
  }
  size_t pos = 12;
  uint16_t ethertype = static_cast<uint16_t>(data[pos] << 8 | data[pos + 1]);
  while (ethertype == 0x8100 || ethertype == 0x88a8) {  // VLAN tags
    pos += 4;
    if (size < pos + 2) {
      fail(error, "frame truncated inside its VLAN tags");
      return std::nullopt;
    }
    ethertype = static_cast<uint16_t>(data[pos] << 8 | data[pos + 1]);
  }
  if (ethertype != kLldpEthertype) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%04x", ethertype);
    fail(error, std::string("ethertype ") + buf + " is not LLDP (0x88cc)");
    return std::nullopt;
  }
  return decodeLldpdu(data + pos + 2, size - pos - 2, error);
}

// ------------------------------------------------------------- capture --

LldpCapture::LldpCapture(std::string node, std::vector<std::string> interfaces, std::string* error,
                         LldpCaptureOptions options)
    : node_(std::move(node)), options_(options) {
  std::string failures;
  for (const auto& ifname : interfaces) {
    Port& port = ports_[ifname];
    std::string e;
    if (!open(ifname, port, &e)) {
      port.last_error = e;
      failures += (failures.empty() ? "" : "; ") + e;
    }
  }
  if (error) *error = failures;
}

LldpCapture::~LldpCapture() {
  for (auto& [name, port] : ports_) close(port);
}

void LldpCapture::close(Port& port) {
  if (port.handle) pcap_close(port.handle);
  port.handle = nullptr;
}

bool LldpCapture::open(const std::string& ifname, Port& port, std::string* error) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = pcap_create(ifname.c_str(), errbuf);
  if (!p) return fail(error, ifname + ": pcap_create: " + errbuf);
  auto bad = [&](const std::string& what) {
    const std::string msg = ifname + ": " + what + ": " + pcap_geterr(p);
    pcap_close(p);
    return fail(error, msg);
  };
  pcap_set_snaplen(p, 2048);
  pcap_set_promisc(p, 0);
  pcap_set_immediate_mode(p, 1);
  const int rc = pcap_activate(p);
  if (rc < 0) {
    // pcap_geterr has the detail for generic errors; name the common ones.
    std::string why = pcap_statustostr(rc);
    if (rc == PCAP_ERROR) why = pcap_geterr(p);
    pcap_close(p);
    return fail(error, ifname + ": cannot capture: " + why +
                           (rc == PCAP_ERROR_PERM_DENIED ? " (needs CAP_NET_RAW)" : ""));
  }
  if (pcap_datalink(p) != DLT_EN10MB) {
    pcap_close(p);
    return fail(error, ifname + ": not an Ethernet interface (no LLDP)");
  }
  bpf_program program{};
  if (pcap_compile(p, &program, "ether proto 0x88cc", 1, PCAP_NETMASK_UNKNOWN) != 0)
    return bad("pcap_compile");
  const int set = pcap_setfilter(p, &program);
  pcap_freecode(&program);
  if (set != 0) return bad("pcap_setfilter");
  pcap_setdirection(p, PCAP_D_IN);  // best effort: our own frames are not neighbours
  if (pcap_setnonblock(p, 1, errbuf) != 0) {
    pcap_close(p);
    return fail(error, ifname + ": pcap_setnonblock: " + errbuf);
  }
  // Accept the nearest-bridge group address without promiscuous mode.
  if (const unsigned index = if_nametoindex(ifname.c_str()); index != 0) {
    packet_mreq mreq{};
    mreq.mr_ifindex = static_cast<int>(index);
    mreq.mr_type = PACKET_MR_MULTICAST;
    mreq.mr_alen = 6;
    const unsigned char group[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e};
    std::memcpy(mreq.mr_address, group, 6);
    setsockopt(pcap_fileno(p), SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq, sizeof mreq);
  }
  port.handle = p;
  port.last_error.clear();
  return true;
}

void LldpCapture::setInterfaces(const std::vector<std::string>& interfaces) {
  std::map<std::string, Port> next;
  for (const auto& ifname : interfaces) {
    auto it = ports_.find(ifname);
    if (it != ports_.end()) {
      next[ifname] = std::move(it->second);
      it->second.handle = nullptr;  // moved
    } else {
      next[ifname];  // opened on the next poll
    }
  }
  for (auto& [name, port] : ports_) close(port);
  ports_ = std::move(next);
}

std::vector<v1::LldpNeighbor> LldpCapture::poll(double now, std::vector<std::string>* errors,
                                                std::vector<TargetPoll>* polls) {
  std::vector<v1::LldpNeighbor> out;
  auto report = [&](Port& port, const std::string& message) {
    if (message == port.last_error) return;  // once per failure, not per retry
    port.last_error = message;
    if (errors) errors->push_back(message);
  };
  for (auto& [ifname, port] : ports_) {
    const TargetPollTimer timer(polls, ifname, [h = &port.handle] { return *h != nullptr; });
    if (!port.handle) {
      if (now < port.retry_at) continue;
      std::string e;
      if (!open(ifname, port, &e)) {
        port.retry_at = now + options_.reopen_s;
        report(port, e);
        continue;
      }
    }
    for (size_t n = 0; n < options_.max_frames_per_poll; ++n) {
      pcap_pkthdr* header = nullptr;
      const u_char* data = nullptr;
      const int rc = pcap_next_ex(port.handle, &header, &data);
      if (rc == 0) break;  // nothing waiting
      if (rc < 0) {
        // The interface went away (deleted, moved to another namespace):
        // reopen it by name later.
        report(port, ifname + ": capture failed: " + pcap_geterr(port.handle));
        close(port);
        port.retry_at = now + options_.reopen_s;
        break;
      }
      std::string e;
      const auto info = decodeLldpFrame(data, header->caplen, &e);
      if (!info) {
        ++malformed_;
        if (errors) errors->push_back(ifname + ": malformed LLDP frame: " + e);
        continue;
      }
      ++frames_;
      const std::string neighbor = info->neighbor();
      if (info->ttl == 0) {  // the neighbour says goodbye
        if (neighbor == port.neighbor) port.neighbor.clear();
        continue;
      }
      const bool report_now = neighbor != port.neighbor || now >= port.expires_at ||
                              now - port.reported_at >= options_.refresh_s;
      port.expires_at = now + info->ttl;
      if (!report_now) continue;
      port.neighbor = neighbor;
      port.reported_at = now;
      v1::LldpNeighbor record;
      record.set_t(now);
      record.set_port(node_ + ":" + ifname);
      record.set_neighbor(neighbor);
      out.push_back(std::move(record));
    }
  }
  return out;
}

std::vector<int> LldpCapture::selectableFds() const {
  std::vector<int> fds;
  for (const auto& [name, port] : ports_)
    if (port.handle) fds.push_back(pcap_get_selectable_fd(port.handle));
  return fds;
}

size_t LldpCapture::openHandles() const {
  size_t n = 0;
  for (const auto& [name, port] : ports_) n += port.handle != nullptr;
  return n;
}

}  // namespace netdiag::collector
