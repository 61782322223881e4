#include "collector/responder.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <list>
#include <mutex>
#include <unordered_map>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector/probe_packet.h"

namespace netdiag::collector {
namespace {

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A map that remembers use order, so the least recently used entries can be
// dropped: idle ones on every touch, and the oldest when full.
template <class K, class V, class Hash>
class LruTable {
 public:
  struct Entry {
    K key;
    V value;
    double last = 0;
  };

  // The entry for `key`, created with `init` if new; marks it used at `now`.
  V& touch(const K& key, double now, const V& init, bool* created) {
    auto it = index_.find(key);
    *created = it == index_.end();
    if (*created) {
      order_.push_front(Entry{key, init, now});
      index_.emplace(key, order_.begin());
    } else {
      order_.splice(order_.begin(), order_, it->second);
      it->second->last = now;
    }
    return order_.front().value;
  }

  // Drops entries idle longer than `idle_s`, then the oldest beyond `max`.
  uint64_t trim(double now, double idle_s, size_t max) {
    uint64_t n = 0;
    while (!order_.empty() && (order_.size() > max || now - order_.back().last > idle_s)) {
      index_.erase(order_.back().key);
      order_.pop_back();
      ++n;
    }
    return n;
  }

  size_t size() const { return order_.size(); }

 private:
  std::list<Entry> order_;
  std::unordered_map<K, typename std::list<Entry>::iterator, Hash> index_;
};

struct FlowKey {
  uint32_t addr;
  uint16_t port;
  uint32_t session;
  uint64_t flow;
  bool operator==(const FlowKey&) const = default;
};
struct FlowKeyHash {
  size_t operator()(const FlowKey& k) const {
    uint64_t h = (uint64_t{k.addr} << 32) ^ (uint64_t{k.port} << 16) ^ k.session;
    h ^= k.flow * 0x9E3779B97F4A7C15ull;
    return std::hash<uint64_t>{}(h ^ (h >> 29));
  }
};

struct Bucket {
  double tokens = 0;
  double at = 0;
};

// Refills `b` at `rate` per second up to `burst`; true if it holds a token.
bool hasToken(Bucket& b, double now, double rate, double burst) {
  b.tokens = std::min(burst, b.tokens + (now - b.at) * rate);
  b.at = now;
  return b.tokens >= 1;
}

constexpr double kForever = std::numeric_limits<double>::infinity();

}  // namespace

struct Responder::State {
  mutable std::mutex mu;  // guards stats, the allow-list and the global bucket
  ResponderStats stats;
  // Who is answered: everyone, or the addresses of `allowed` until their
  // time (kForever: in the current list), plus everyone until
  // `everyone_until` after a switch from everyone to a list.
  bool everyone = true;
  bool everyone_set = false;  // by allowEveryone(), not just the start
  double everyone_until = 0;
  std::unordered_map<uint32_t, double> allowed;
  Bucket global;
  double global_rate = 0, global_burst = 0;

  bool admitted(uint32_t addr, double now) const {
    if (everyone || now < everyone_until) return true;
    auto it = allowed.find(addr);
    return it != allowed.end() && now < it->second;
  }
  uint64_t allowedNow(double now) const {
    uint64_t n = 0;
    for (const auto& [a, until] : allowed) n += now < until ? 1 : 0;
    return n;
  }

  LruTable<FlowKey, uint32_t, FlowKeyHash> flows;
  LruTable<uint32_t, Bucket, std::hash<uint32_t>> buckets;
  uint64_t counted = 0;  // valid counted probes seen, for the test hooks
};

std::unique_ptr<Responder> Responder::start(const ResponderOptions& options, std::string* error) {
  auto fail = [&](const std::string& what, int fd) -> std::unique_ptr<Responder> {
    if (error)
      *error = "responder " + options.address + ":" + std::to_string(options.port) + ": " + what +
               ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return nullptr;
  };
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(options.port);
  if (inet_pton(AF_INET, options.address.c_str(), &sa.sin_addr) != 1) {
    errno = EINVAL;
    return fail("not an IPv4 address", -1);
  }
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return fail("socket", -1);
  int one = 1;
  // Where the probe was sent (to reply from that address) and its TOS.
  if (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one) != 0) return fail("IP_PKTINFO", fd);
  if (setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one) != 0) return fail("IP_RECVTOS", fd);
  int rcvbuf = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);  // best effort
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return fail("bind", fd);
  socklen_t len = sizeof sa;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return fail("getsockname", fd);
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return fail("eventfd", fd);
  std::unique_ptr<Responder> r(new Responder(options, fd, wake, ntohs(sa.sin_port)));
  if (options.allow_only) r->allowOnly(*options.allow_only, 0);  // what is not IPv4: ignored
  r->thread_ = std::thread([p = r.get()] { p->loop(); });
  return r;
}

Responder::Responder(ResponderOptions options, int fd, int wake_fd, uint16_t port)
    : options_(std::move(options)),
      fd_(fd),
      wake_fd_(wake_fd),
      port_(port),
      state_(std::make_unique<State>()) {
  state_->global_rate = options_.global_rate;
  state_->global_burst = options_.global_burst;
  state_->global = Bucket{options_.global_burst, nowSeconds()};
}

Responder::~Responder() {
  stop();
  ::close(fd_);
  ::close(wake_fd_);
}

void Responder::stop() {
  if (stopped_.exchange(true)) return;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

ResponderStats Responder::stats() const {
  const double now = nowSeconds();
  std::lock_guard lock(state_->mu);
  ResponderStats s = state_->stats;
  s.everyone = state_->everyone || now < state_->everyone_until;
  s.allowed = s.everyone ? 0 : state_->allowedNow(now);
  return s;
}

std::vector<std::string> Responder::allowOnly(const std::vector<std::string>& addrs,
                                              double grace_s) {
  std::vector<std::string> bad;
  std::vector<uint32_t> next;
  next.reserve(addrs.size());
  for (const std::string& a : addrs) {
    in_addr ia{};
    if (inet_pton(AF_INET, a.c_str(), &ia) == 1) {
      next.push_back(ia.s_addr);
    } else {
      bad.push_back(a);
    }
  }
  const double now = nowSeconds();
  const double until = now + std::max(0.0, grace_s);
  State& st = *state_;
  std::lock_guard lock(st.mu);
  if (st.everyone && st.everyone_set) st.everyone_until = std::max(st.everyone_until, until);
  st.everyone = false;
  // The current list's addresses keep their replies for the grace period...
  for (auto& [addr, t] : st.allowed) {
    if (t == kForever) t = until;
  }
  // ...unless the new list has them again; then what ran out goes.
  for (uint32_t a : next) st.allowed[a] = kForever;
  std::erase_if(st.allowed, [now](const auto& e) { return e.second <= now; });
  return bad;
}

void Responder::allowEveryone() {
  std::lock_guard lock(state_->mu);
  state_->everyone = true;
  state_->everyone_set = true;
  state_->everyone_until = 0;
  state_->allowed.clear();
}

void Responder::setGlobalRate(double rate, double burst) {
  std::lock_guard lock(state_->mu);
  state_->global_rate = rate;
  state_->global_burst = burst;
  state_->global.tokens = std::min(state_->global.tokens, burst);
}

void Responder::loop() {
  State& st = *state_;
  // One byte more than a probe, so a longer datagram is seen as too long
  // rather than silently truncated to a valid one.
  uint8_t buf[kProbeSize + 1];
  alignas(cmsghdr) char control[256];
  while (true) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) break;
    // Drain what is queued, then poll again.
    for (int burst = 0; burst < 256; ++burst) {
      sockaddr_in from{};
      iovec iov{buf, sizeof buf};
      msghdr msg{};
      msg.msg_name = &from;
      msg.msg_namelen = sizeof from;
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      ssize_t n = ::recvmsg(fd_, &msg, MSG_DONTWAIT);
      if (n < 0) break;
      const double now = nowSeconds();
      ProbePacket p;
      const bool valid = (msg.msg_flags & MSG_TRUNC) == 0 &&
                         decodeProbe({buf, static_cast<size_t>(n)}, p) == DecodeError::kOk &&
                         p.type == ProbeType::kProbe;
      std::lock_guard lock(st.mu);
      ++st.stats.received;
      if (!valid) {
        ++st.stats.malformed;
        continue;
      }
      // Only sources that may probe us, before any state is made for them.
      if (!st.admitted(from.sin_addr.s_addr, now)) {
        ++st.stats.not_in_plan;
        continue;
      }
      // Rate limit per source address, then for all sources together,
      // before any per-flow state is made; a token is taken from both or
      // neither.
      bool created = false;
      Bucket& b = st.buckets.touch(from.sin_addr.s_addr, now,
                                   Bucket{options_.burst_per_source, now}, &created);
      const bool source_ok = hasToken(b, now, options_.rate_per_source, options_.burst_per_source);
      // A bucket idle for a second or more is full again: forgetting it is exact.
      st.buckets.trim(now, std::max(1.0, options_.burst_per_source / options_.rate_per_source),
                      options_.max_sources);
      if (!source_ok) {
        ++st.stats.rate_limited;
        continue;
      }
      if (st.global_rate > 0) {
        if (!hasToken(st.global, now, st.global_rate, st.global_burst)) {
          ++st.stats.global_rate_limited;
          continue;
        }
        st.global.tokens -= 1;
      }
      b.tokens -= 1;
      uint32_t count = 0;
      if (!p.trace()) {
        ++st.counted;
        if (options_.drop_every_nth != 0 && st.counted % options_.drop_every_nth == 0) {
          ++st.stats.hook_dropped;
          continue;
        }
        FlowKey key{from.sin_addr.s_addr, from.sin_port, p.session, p.flow};
        uint32_t& c = st.flows.touch(key, now, 0, &created);
        count = ++c;
        st.stats.flows_evicted += st.flows.trim(now, options_.flow_idle_s, options_.max_flows);
        st.stats.flows = st.flows.size();
        if (options_.mute_every_nth != 0 && st.counted % options_.mute_every_nth == 0) {
          ++st.stats.hook_muted;
          continue;
        }
      }
      // Reply from the address the probe was sent to, with its TOS.
      in_addr local{};
      int tos = 0;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != IPPROTO_IP) continue;
        if (c->cmsg_type == IP_PKTINFO) {
          in_pktinfo pi;
          std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
          local = pi.ipi_addr;
        } else if (c->cmsg_type == IP_TOS) {
          tos = *CMSG_DATA(c);
        }
      }
      const ProbeBytes out = encodeProbe(makeReply(p, count));
      alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(in_pktinfo)) + CMSG_SPACE(sizeof(int))]{};
      iovec oiov{const_cast<uint8_t*>(out.data()), std::min<size_t>(out.size(), n)};
      msghdr om{};
      om.msg_name = &from;
      om.msg_namelen = sizeof from;
      om.msg_iov = &oiov;
      om.msg_iovlen = 1;
      om.msg_control = ctl;
      om.msg_controllen = sizeof ctl;
      cmsghdr* c = CMSG_FIRSTHDR(&om);
      c->cmsg_level = IPPROTO_IP;
      c->cmsg_type = IP_PKTINFO;
      c->cmsg_len = CMSG_LEN(sizeof(in_pktinfo));
      in_pktinfo pi{};
      pi.ipi_spec_dst = local;
      std::memcpy(CMSG_DATA(c), &pi, sizeof pi);
      c = CMSG_NXTHDR(&om, c);
      c->cmsg_level = IPPROTO_IP;
      c->cmsg_type = IP_TOS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &tos, sizeof tos);
      if (::sendmsg(fd_, &om, MSG_DONTWAIT) < 0) {
        ++st.stats.send_errors;
      } else {
        ++st.stats.replied;
      }
    }
  }
}

}  // namespace netdiag::collector
