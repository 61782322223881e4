#include "fake_agent.h"

#include <optional>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace netdiag::collector::snmp::testing {
namespace {

// BER, only the forms SNMP uses here.
std::string len(size_t n) {
  if (n < 128) return std::string(1, static_cast<char>(n));
  if (n < 256) return std::string("\x81") + static_cast<char>(n);
  return std::string("\x82") + static_cast<char>(n >> 8) + static_cast<char>(n & 0xff);
}
std::string tlv(uint8_t tag, const std::string& body) {
  return std::string(1, static_cast<char>(tag)) + len(body.size()) + body;
}
std::string uintBody(uint64_t v) {
  std::string b;
  do {
    b.insert(b.begin(), static_cast<char>(v & 0xff));
    v >>= 8;
  } while (v);
  if (static_cast<uint8_t>(b[0]) & 0x80) b.insert(b.begin(), '\0');
  return b;
}
std::string intBody(int64_t v) {
  if (v >= 0) return uintBody(static_cast<uint64_t>(v));
  std::string b;
  for (int i = 0; i < 8; ++i) b.insert(b.begin(), static_cast<char>((v >> (8 * i)) & 0xff));
  return b;
}
std::string oidBody(const Oid& o) {
  std::string b(1, static_cast<char>(o.size() >= 2 ? o[0] * 40 + o[1] : 0));
  for (size_t i = 2; i < o.size(); ++i) {
    std::string s;
    uint32_t v = o[i];
    s.insert(s.begin(), static_cast<char>(v & 0x7f));
    while (v >>= 7) s.insert(s.begin(), static_cast<char>(0x80 | (v & 0x7f)));
    b += s;
  }
  return b;
}
std::string value(const Varbind& v) {
  switch (v.type) {
    case Varbind::Type::kInteger:
      return tlv(0x02, intBody(v.integer));
    case Varbind::Type::kOctets:
      return tlv(0x04, v.bytes);
    case Varbind::Type::kCounter32:
      return tlv(0x41, uintBody(v.number));
    case Varbind::Type::kGauge32:
      return tlv(0x42, uintBody(v.number));
    case Varbind::Type::kTimeTicks:
      return tlv(0x43, uintBody(v.number));
    case Varbind::Type::kCounter64:
      return tlv(0x46, uintBody(v.number));
    case Varbind::Type::kEndOfMibView:
      return tlv(0x82, "");
    case Varbind::Type::kNoSuchInstance:
      return tlv(0x81, "");
    default:
      return tlv(0x05, "");
  }
}

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  // One TLV: its tag and body; nullopt when malformed.
  std::optional<std::pair<uint8_t, Reader>> next() {
    if (end - p < 2) return std::nullopt;
    const uint8_t tag = *p++;
    size_t n = *p++;
    if (n & 0x80) {
      const size_t k = n & 0x7f;
      if (k > 2 || static_cast<size_t>(end - p) < k) return std::nullopt;
      n = 0;
      for (size_t i = 0; i < k; ++i) n = n << 8 | *p++;
    }
    if (static_cast<size_t>(end - p) < n) return std::nullopt;
    Reader body{p, p + n};
    p += n;
    return std::make_pair(tag, body);
  }
  int64_t integer() const {
    int64_t v = (p < end && (*p & 0x80)) ? -1 : 0;
    for (const uint8_t* q = p; q < end; ++q)
      v = static_cast<int64_t>(static_cast<uint64_t>(v) << 8 | *q);
    return v;
  }
  Oid oid() const {
    Oid o;
    if (p == end) return o;
    o.push_back(*p / 40);
    o.push_back(*p % 40);
    uint32_t v = 0;
    for (const uint8_t* q = p + 1; q < end; ++q) {
      v = v << 7 | (*q & 0x7f);
      if (!(*q & 0x80)) {
        o.push_back(v);
        v = 0;
      }
    }
    return o;
  }
};

std::optional<BulkRequest> decode(const uint8_t* data, size_t n, std::string* community) {
  Reader r{data, data + n};
  auto msg = r.next();
  if (!msg || msg->first != 0x30) return std::nullopt;
  auto version = msg->second.next();
  auto comm = msg->second.next();
  auto pdu = msg->second.next();
  if (!version || !comm || !pdu || pdu->first != 0xa5) return std::nullopt;
  *community = std::string(comm->second.p, comm->second.end);
  BulkRequest req;
  auto id = pdu->second.next(), nr = pdu->second.next(), mr = pdu->second.next(),
       list = pdu->second.next();
  if (!id || !nr || !mr || !list) return std::nullopt;
  req.request_id = id->second.integer();
  req.non_repeaters = nr->second.integer();
  req.max_repetitions = mr->second.integer();
  while (auto vb = list->second.next()) {
    auto name = vb->second.next();
    if (!name) return std::nullopt;
    req.oids.push_back(name->second.oid());
  }
  return req;
}

std::string encode(const std::string& community, int64_t request_id,
                   const std::vector<Varbind>& vbs) {
  std::string list;
  for (const Varbind& v : vbs) list += tlv(0x30, tlv(0x06, oidBody(v.oid)) + value(v));
  const std::string pdu = tlv(0x02, intBody(request_id)) + tlv(0x02, intBody(0)) +
                          tlv(0x02, intBody(0)) + tlv(0x30, list);
  return tlv(0x30, tlv(0x02, intBody(1)) + tlv(0x04, community) + tlv(0xa2, pdu));
}

}  // namespace

FakeAgent::FakeAgent(Handler handler) : handler_(std::move(handler)) {
  fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t l = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &l);
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] {
    std::vector<uint8_t> buf(65536);
    while (!stop_.load()) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      sockaddr_in from{};
      socklen_t fl = sizeof from;
      const ssize_t n =
          ::recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
      if (n <= 0) continue;
      ++requests_;
      std::string community;
      const auto req = decode(buf.data(), static_cast<size_t>(n), &community);
      if (!req) continue;
      std::vector<Varbind> out;
      std::string raw;
      if (!handler_(*req, &out, &raw)) continue;
      const std::string reply = raw.empty() ? encode(community, req->request_id, out) : raw;
      ::sendto(fd_, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), fl);
    }
  });
}

FakeAgent::~FakeAgent() {
  stop_.store(true);
  thread_.join();
  ::close(fd_);
}

}  // namespace netdiag::collector::snmp::testing
