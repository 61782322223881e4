#include "collector/pathfinder.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace netdiag::collector {
namespace {

constexpr uint8_t kIcmpDestUnreachable = 3;
constexpr uint8_t kIcmpPortUnreachable = 3;
constexpr uint8_t kIcmpTimeExceeded = 11;

std::string dotted(in_addr a) {
  char buf[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &a, buf, sizeof buf) ? buf : "";
}

}  // namespace

bool makeSockaddr(const std::string& addr, uint16_t port, sockaddr_in* out) {
  *out = sockaddr_in{};
  out->sin_family = AF_INET;
  out->sin_port = htons(port);
  if (addr.empty()) return true;  // INADDR_ANY
  return inet_pton(AF_INET, addr.c_str(), &out->sin_addr) == 1;
}

int openFlowSocket(const FlowTuple& t, std::string* error) {
  const std::string where = t.src_addr + ":" + std::to_string(t.source_port) + " -> " + t.dst_addr +
                            ":" + std::to_string(t.dst_port);
  auto fail = [&](const std::string& what, int fd) {
    if (error) *error = "flow " + where + ": " + what + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  };
  sockaddr_in src{}, dst{};
  if (!makeSockaddr(t.src_addr, t.source_port, &src)) {
    errno = EINVAL;
    return fail("bad source address", -1);
  }
  if (!makeSockaddr(t.dst_addr, t.dst_port, &dst) || t.dst_addr.empty()) {
    errno = EINVAL;
    return fail("bad destination address", -1);
  }
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return fail("socket", -1);
  int one = 1;
  int tos = t.dscp << 2;
  if (setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos) != 0) return fail("IP_TOS", fd);
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) != 0) {
    return fail("SO_TIMESTAMPNS", fd);
  }
  if (setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof one) != 0) return fail("IP_RECVERR", fd);
  // The plan reuses source ports across peers (flow i of every peer is port
  // first + i): the 5-tuples differ by destination, and once connected the
  // kernel hands each socket only its own peer's datagrams and ICMP errors.
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
    return fail("SO_REUSEADDR", fd);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) return fail("bind", fd);
  // Connected: the kernel keeps only the responder's datagrams for us and
  // the 5-tuple is fixed.
  if (::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) return fail("connect", fd);
  return fd;
}

int sendProbe(int fd, const sockaddr_in& dst, const ProbeBytes& bytes, int ttl) {
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))]{};
  msghdr m{};
  m.msg_name = const_cast<sockaddr_in*>(&dst);
  m.msg_namelen = sizeof dst;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (ttl > 0) {
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_TTL;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &ttl, sizeof ttl);
  }
  // A pending ICMP error on the socket fails one send and is consumed by it;
  // the datagram was not sent, so try once more.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (::sendmsg(fd, &m, MSG_DONTWAIT) >= 0) return 0;
    const int e = errno;
    if (e != ECONNREFUSED && e != EHOSTUNREACH && e != ENETUNREACH && e != EHOSTDOWN &&
        e != EINTR) {
      return e;
    }
    if (attempt == 1) return e;
  }
  return EIO;
}

bool readSockError(int fd, SockError* out) {
  uint8_t data[kProbeSize + 1];
  alignas(cmsghdr) char control[512];
  sockaddr_in name{};
  iovec iov{data, sizeof data};
  msghdr m{};
  m.msg_name = &name;
  m.msg_namelen = sizeof name;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  ssize_t n = ::recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT);
  if (n < 0) return false;
  *out = SockError{};
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != IPPROTO_IP || c->cmsg_type != IP_RECVERR) continue;
    sock_extended_err ee;
    std::memcpy(&ee, CMSG_DATA(c), sizeof ee);
    out->errnum = static_cast<int>(ee.ee_errno);
    out->origin = ee.ee_origin;
    out->icmp_type = ee.ee_type;
    out->icmp_code = ee.ee_code;
    // The offender's address follows the extended error in the cmsg.
    const size_t off = sizeof(sock_extended_err);
    if (c->cmsg_len >= CMSG_LEN(off + sizeof(sockaddr_in))) {
      sockaddr_in who;
      std::memcpy(&who, CMSG_DATA(c) + off, sizeof who);
      if (who.sin_family == AF_INET) out->offender = dotted(who.sin_addr);
    }
  }
  ProbePacket p;
  if ((m.msg_flags & MSG_TRUNC) == 0 &&
      decodeProbe({data, static_cast<size_t>(n)}, p) == DecodeError::kOk) {
    out->quoted = p;
  }
  return true;
}

PathTrace::PathTrace(PathfinderOptions options, uint32_t session, uint64_t flow,
                     std::string dst_addr)
    : options_(options), session_(session), flow_(flow), dst_addr_(std::move(dst_addr)) {}

std::optional<PathTrace::Send> PathTrace::poll(double now, uint64_t wall_ns) {
  if (done_) return std::nullopt;
  if (waiting_) {
    if (now < deadline_) return std::nullopt;
    if (tries_ > options_.retries) {
      // A silent hop: the path is known only up to here.
      finish(false);
      return std::nullopt;
    }
  } else {
    ++ttl_;
    tries_ = 0;
    if (ttl_ > options_.max_ttl) {
      finish(false);
      return std::nullopt;
    }
  }
  ++tries_;
  waiting_ = true;
  deadline_ = now + options_.hop_timeout_s;
  ProbePacket p;
  p.type = ProbeType::kProbe;
  p.flags = kProbeFlagTrace;
  p.session = session_;
  p.seq = static_cast<uint32_t>(tries_ << 8 | ttl_);
  p.flow = flow_;
  p.send_ns = wall_ns == 0 ? 1 : wall_ns;
  return Send{encodeProbe(p), ttl_};
}

bool PathTrace::outstanding(const ProbePacket* q) const {
  if (done_ || !waiting_) return false;
  if (q == nullptr) return true;  // not quoted: the one TTL in flight
  return q->trace() && q->session == session_ && q->flow == flow_ &&
         static_cast<int>(q->seq & 0xff) == ttl_;
}

void PathTrace::onError(const SockError& e, double now) {
  if (e.origin != SO_EE_ORIGIN_ICMP) return;
  if (!outstanding(e.quoted ? &*e.quoted : nullptr)) return;
  if (e.offender.empty()) return;
  if (e.icmp_type == kIcmpTimeExceeded) {
    result_.hops.push_back(e.offender);
    waiting_ = false;
    deadline_ = now;  // next TTL at once
    if (e.offender == dst_addr_) finish(true);
  } else if (e.icmp_type == kIcmpDestUnreachable) {
    // The destination itself refusing the port is still the destination;
    // anything else unreachable ends the path where it was said.
    result_.hops.push_back(e.offender);
    finish(e.offender == dst_addr_ && e.icmp_code == kIcmpPortUnreachable);
  }
}

void PathTrace::onReply(const ProbePacket& r, double) {
  if (!outstanding(nullptr)) return;
  if (!r.trace() || r.session != session_ || r.flow != flow_ ||
      static_cast<int>(r.seq & 0xff) != ttl_) {
    return;
  }
  result_.hops.push_back(dst_addr_);
  finish(true);
}

void PathTrace::finish(bool complete) {
  done_ = true;
  waiting_ = false;
  result_.complete = complete;
}

std::optional<PathResult> tracePath(const FlowTuple& tuple, const PathfinderOptions& options,
                                    std::string* error) {
  int fd = openFlowSocket(tuple, error);
  if (fd < 0) return std::nullopt;
  sockaddr_in dst{};
  makeSockaddr(tuple.dst_addr, tuple.dst_port, &dst);
  auto mono = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  auto wall = [] {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  };
  PathTrace trace(options, static_cast<uint32_t>(wall()), tuple.source_port, tuple.dst_addr);
  while (!trace.done()) {
    if (auto s = trace.poll(mono(), wall())) {
      if (int e = sendProbe(fd, dst, s->bytes, s->ttl); e != 0) {
        if (error) *error = std::string("send: ") + std::strerror(e);
        ::close(fd);
        return std::nullopt;
      }
    }
    if (trace.done()) break;
    const int wait_ms = std::max(0, static_cast<int>((trace.deadline() - mono()) * 1000) + 1);
    pollfd pfd{fd, POLLIN, 0};
    ::poll(&pfd, 1, wait_ms);
    SockError se;
    while (readSockError(fd, &se)) trace.onError(se, mono());
    uint8_t buf[kProbeSize + 1];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT)) >= 0 || errno == ECONNREFUSED) {
      if (n < 0) continue;  // a pending error consumed; its entry is in the queue
      ProbePacket p;
      if (decodeProbe({buf, static_cast<size_t>(n)}, p) == DecodeError::kOk &&
          p.type == ProbeType::kReply) {
        trace.onReply(p, mono());
      }
    }
  }
  ::close(fd);
  return trace.result();
}

}  // namespace netdiag::collector
