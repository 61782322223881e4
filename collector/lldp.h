#pragma once

// LLDP (IEEE 802.1AB): a strict decoder for frames of ethertype 0x88cc and a
// libpcap capture that reports the neighbour seen on each monitored port as
// the wire's v1::LldpNeighbor (formats.md §2, kind lldp).
//
// Neighbour naming: "<system name>:<port id>" (e.g. "leaf1:swp3"), with the
// chassis ID standing in when the frame has no system name. IDs of the
// MAC subtypes are written aa:bb:cc:dd:ee:ff, network addresses as IPv4/IPv6
// text, and the text subtypes as sent (hex bytes when not printable ASCII).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pcap/pcap.h>

#include "collector/source_stats.h"
#include "netdiag/v1/collector.pb.h"

namespace netdiag::collector {

// 802.1AB TLV types and ID subtypes used here.
enum LldpTlv : uint8_t {
  kLldpEnd = 0,
  kLldpChassisId = 1,
  kLldpPortId = 2,
  kLldpTtl = 3,
  kLldpPortDescription = 4,
  kLldpSystemName = 5,
};
enum LldpChassisSubtype : uint8_t {
  kChassisComponent = 1,
  kChassisInterfaceAlias = 2,
  kChassisPortComponent = 3,
  kChassisMac = 4,
  kChassisNetworkAddress = 5,
  kChassisInterfaceName = 6,
  kChassisLocal = 7,
};
enum LldpPortSubtype : uint8_t {
  kPortInterfaceAlias = 1,
  kPortComponent = 2,
  kPortMac = 3,
  kPortNetworkAddress = 4,
  kPortInterfaceName = 5,
  kPortAgentCircuitId = 6,
  kPortLocal = 7,
};
constexpr uint16_t kLldpEthertype = 0x88cc;

struct LldpInfo {
  uint8_t chassis_subtype = 0;
  std::string chassis_id;  // raw bytes as sent
  uint8_t port_subtype = 0;
  std::string port_id;  // raw bytes as sent
  uint16_t ttl = 0;     // seconds; 0: the neighbour is shutting LLDP down
  std::optional<std::string> system_name;
  std::optional<std::string> port_description;

  std::string chassisText() const;  // chassis_id rendered per its subtype
  std::string portText() const;     // port_id rendered per its subtype
  // "<system name or chassis id>:<port id>", the contract's `neighbor`.
  std::string neighbor() const;
};

// Decodes an LLDPDU (the bytes after the ethertype). The first three TLVs
// must be chassis ID, port ID and TTL, in that order; IDs are 1..255 bytes
// with a defined subtype; a network address must fit its family; TTL is 2
// bytes; no TLV may run past the buffer; the PDU ends at End (length 0) or
// exactly at the buffer's end. Unknown and organisationally specific TLVs
// are skipped. nullopt and *error ("TLV 5 at offset 24: length 40 runs past
// the end (30 bytes left)") when malformed.
std::optional<LldpInfo> decodeLldpdu(const uint8_t* data, size_t size, std::string* error);

// Decodes an Ethernet frame: destination, source, optional 802.1Q/802.1ad
// tags, ethertype 0x88cc, LLDPDU (Ethernet padding after End is fine).
std::optional<LldpInfo> decodeLldpFrame(const uint8_t* data, size_t size, std::string* error);

struct LldpCaptureOptions {
  // A neighbour is reported when it first appears, when it differs from the
  // one last reported on the port (recabling, also back to a former one),
  // after its TTL ran out, and again every refresh_s while its frames keep
  // coming. A TTL of 0 (LLDP shutting down) forgets it.
  double refresh_s = 60;
  // After an interface fails (missing, deleted, moved), reopen no more
  // often than this.
  double reopen_s = 2;
  size_t max_frames_per_poll = 256;  // per interface, so one busy port cannot starve the rest
};

// One non-blocking libpcap handle per monitored interface, filtered to
// `ether proto 0x88cc`, inbound only, joined to the LLDP multicast group
// 01:80:c2:00:00:0e (no promiscuous mode). Needs CAP_NET_RAW.
//
// Thread-safety: none; one capture per agent loop, polled from one thread.
class LldpCapture {
 public:
  // node: this agent's node name (ports are "<node>:<if>"); interfaces: the
  // local interface names. Interfaces that cannot be opened now are named
  // in *error (empty when all opened) and retried on later polls.
  LldpCapture(std::string node, std::vector<std::string> interfaces, std::string* error,
              LldpCaptureOptions options = {});
  ~LldpCapture();
  LldpCapture(const LldpCapture&) = delete;
  LldpCapture& operator=(const LldpCapture&) = delete;

  // The monitored set changed; handles of kept interfaces stay open.
  void setInterfaces(const std::vector<std::string>& interfaces);

  // Drains the frames waiting on every handle (never blocks) and returns the
  // neighbours to report now, stamped t = now (wall-clock Unix seconds).
  // Malformed frames and capture failures are appended to *errors (a
  // failure is reported once, not on every retry). One outcome per
  // interface to *polls: failed while it is not being captured.
  std::vector<v1::LldpNeighbor> poll(double now, std::vector<std::string>* errors = nullptr,
                                     std::vector<TargetPoll>* polls = nullptr);

  // File descriptors that become readable when frames wait, for an event
  // loop (poll(2)); -1 entries are skipped. Changes when handles reopen.
  std::vector<int> selectableFds() const;

  uint64_t frames() const { return frames_; }        // LLDP frames decoded
  uint64_t malformed() const { return malformed_; }  // frames rejected
  size_t openHandles() const;

 private:
  struct Port {
    pcap_t* handle = nullptr;
    double retry_at = 0;
    std::string last_error;
    std::string neighbor;  // last reported; empty: none (or it expired / said goodbye)
    double reported_at = 0;
    double expires_at = 0;
  };
  bool open(const std::string& ifname, Port& port, std::string* error);
  void close(Port& port);

  std::string node_;
  LldpCaptureOptions options_;
  std::map<std::string, Port> ports_;
  uint64_t frames_ = 0;
  uint64_t malformed_ = 0;
};

}  // namespace netdiag::collector
