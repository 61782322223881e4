#pragma once

// Path discovery on the very 5-tuple of a probe flow, Paris-traceroute style:
// probes with growing IP TTL leave from the flow's own UDP socket (same
// source address and port, same destination and port, same TOS), so every
// hop hashes them onto the path the flow's probes take. Routers answer with
// ICMP time-exceeded, read from the socket's error queue (IP_RECVERR), so no
// raw socket and no privilege is needed. With
// net.ipv4.icmp_errors_use_inbound_ifaddr=1 each hop answers from the
// address of the link the probe came in on, so the hop list names links.
//
// One TTL is in flight per flow at a time, so an answer needs no id beyond
// the flow's socket (the quoted probe, when the router quotes enough, is
// checked too). The destination answers like any probe (the responder echoes
// trace probes without counting them) or with ICMP port-unreachable.
//
// Also here: the flow socket both the prober and the tracer send on.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <netinet/in.h>

#include "collector/probe_packet.h"

namespace netdiag::collector {

// One flow's 5-tuple (protocol UDP) and traffic class.
struct FlowTuple {
  std::string src_addr;  // local address to bind ("" or 0.0.0.0: any)
  uint16_t source_port = 0;
  std::string dst_addr;
  uint16_t dst_port = 0;
  uint8_t dscp = 0;
};

// A non-blocking UDP socket bound to (src_addr, source_port) and connected
// to the destination, with the DSCP set, kernel receive timestamps
// (SO_TIMESTAMPNS) and IP_RECVERR; flows to different peers may share a
// source port. -1 and *error on failure.
int openFlowSocket(const FlowTuple& tuple, std::string* error);

// Fills `out` from a dotted IPv4 address and port; false if not one.
bool makeSockaddr(const std::string& addr, uint16_t port, sockaddr_in* out);

// Sends one probe datagram; `ttl` > 0 overrides the socket's TTL for this
// datagram only. Returns 0 or the errno.
int sendProbe(int fd, const sockaddr_in& dst, const ProbeBytes& bytes, int ttl = 0);

// One entry of a socket's error queue.
struct SockError {
  int errnum = 0;      // ee_errno
  uint8_t origin = 0;  // SO_EE_ORIGIN_*
  uint8_t icmp_type = 0, icmp_code = 0;
  std::string offender;               // who sent the ICMP error, dotted ("" if none)
  std::optional<ProbePacket> quoted;  // the probe it answers, when quoted in full
};

// Reads one entry of `fd`'s error queue; false when it is empty.
bool readSockError(int fd, SockError* out);

struct PathfinderOptions {
  int max_ttl = 16;
  double hop_timeout_s = 0.5;  // wait for one TTL's answer
  int retries = 1;             // extra tries of a silent TTL before giving up
};

// What discovery found: the address answering at each TTL from 1, ending at
// the destination when complete.
struct PathResult {
  std::vector<std::string> hops;
  bool complete = false;
};

// One discovery run on one flow socket, driven by its owner's loop.
class PathTrace {
 public:
  PathTrace(PathfinderOptions options, uint32_t session, uint64_t flow, std::string dst_addr);

  // What to send now, if anything: a trace probe and its TTL. Call when
  // started and whenever deadline() passes; gives up silent TTLs.
  struct Send {
    ProbeBytes bytes;
    int ttl;
  };
  std::optional<Send> poll(double now, uint64_t wall_ns);
  // When poll() next has something to do.
  double deadline() const { return deadline_; }

  // An error-queue entry of the flow's socket.
  void onError(const SockError& e, double now);
  // A reply read on the flow's socket with the trace flag set.
  void onReply(const ProbePacket& reply, double now);

  bool done() const { return done_; }
  const PathResult& result() const { return result_; }

 private:
  bool outstanding(const ProbePacket* quoted) const;
  void finish(bool complete);

  PathfinderOptions options_;
  uint32_t session_;
  uint64_t flow_;
  std::string dst_addr_;
  int ttl_ = 0;    // TTL in flight (0: none yet)
  int tries_ = 0;  // sends of ttl_
  bool waiting_ = false;
  double deadline_ = 0;
  bool done_ = false;
  PathResult result_;
};

// Runs one discovery on its own socket bound to the tuple (which must be
// free); for tools and tests. The prober runs PathTrace on its flow sockets.
std::optional<PathResult> tracePath(const FlowTuple& tuple, const PathfinderOptions& options,
                                    std::string* error);

}  // namespace netdiag::collector
