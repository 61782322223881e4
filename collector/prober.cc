#include "collector/prober.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <optional>
#include <queue>
#include <random>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace netdiag::collector {
namespace {

// One probe sent and not yet in a closed window.
struct Pending {
  uint32_t seq = 0;
  int64_t window = 0;     // index w of the window ending at w * window_s
  uint64_t send_ns = 0;   // wall clock, on the wire: matches the reply to its probe
  int64_t send_mono = 0;  // monotonic: RTTs
  bool answered = false;
  uint32_t received = 0;  // the responder's count echoed in the reply
  double rtt_us = 0;
};

struct Flow {
  v1::ProbeFlow spec;
  int fd = -1;
  sockaddr_in dst{};
  uint32_t next_seq = 0;
  double next_send = 0;         // monotonic
  std::deque<Pending> pending;  // consecutive seqs, oldest first
  // The last answered probe before `pending` (seq -1 / count 0 at start:
  // the responder counts a session's probes from zero).
  int64_t base_seq = -1;
  uint32_t base_received = 0;
  uint32_t last_lost = 0;
  std::optional<PathTrace> trace;
  bool trace_queued = false;
  double next_trace = 0;  // monotonic
  FlowPath path;
  bool has_path = false;
};

double percentile(std::vector<double>& v, double q) {
  // Nearest rank: the smallest value with at least q of the samples at or below it.
  const size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  const size_t i = std::min(v.size() - 1, k == 0 ? 0 : k - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

}  // namespace

std::string flowKey(const v1::ProbeFlow& f) {
  return f.src_addr() + ":" + std::to_string(f.source_port()) + "->" + f.dst_addr();
}

struct Prober::Impl {
  ProberOptions opt;
  const Clock* clock = &systemClock();
  uint32_t session = 0;
  std::vector<Flow> flows;
  int epfd = -1;
  int wakefd = -1;
  std::thread thread;
  std::atomic<bool> stopping{false};

  mutable std::mutex mu;  // guards the four below
  std::vector<v1::Probe> out;
  ProberStats stats;
  std::map<std::string, FlowPath> paths;
  std::map<std::string, PortHealth> health;  // by the flows' `src`

  // Thread-local state of the loop.
  using Due = std::pair<double, uint32_t>;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> schedule;
  std::deque<uint32_t> trace_queue;
  std::vector<uint32_t> tracing;
  int64_t next_close = 0;  // the next window to close
  double next_trace_scan = 0;

  ~Impl() {
    for (Flow& f : flows) {
      if (f.fd >= 0) ::close(f.fd);
    }
    if (epfd >= 0) ::close(epfd);
    if (wakefd >= 0) ::close(wakefd);
  }

  int64_t windowOf(uint64_t ns) const {
    return static_cast<int64_t>(std::ceil(static_cast<double>(ns) * 1e-9 / opt.window_s));
  }

  void sendDue(double now) {
    const double interval = 1.0 / opt.probes_per_second;
    while (!schedule.empty() && schedule.top().first <= now) {
      auto [at, i] = schedule.top();
      schedule.pop();
      Flow& f = flows[i];
      // Fallen behind by more than an interval (a stalled machine): skip
      // rather than burst.
      double next = at + interval;
      if (now - at > interval) {
        const double missed = std::floor((now - at) / interval);
        next = at + (missed + 1) * interval;
        std::lock_guard lock(mu);
        stats.skipped += static_cast<uint64_t>(missed);
      }
      f.next_send = next;
      if (opt.max_probes != 0 && f.next_seq >= opt.max_probes) continue;  // done: not rescheduled
      schedule.emplace(next, i);
      ProbePacket p;
      p.session = session;
      p.seq = f.next_seq;
      p.flow = f.spec.source_port();
      p.send_ns = clock->wallNs();
      const int64_t send_mono = clock->monoNs();
      const int err = sendProbe(f.fd, f.dst, encodeProbe(p));
      std::lock_guard lock(mu);
      if (err != 0) {
        ++stats.send_errors;  // not sent: the seq is reused
        ++health[f.spec.src()].errors;
        continue;
      }
      ++stats.sent;
      ++f.next_seq;
      f.pending.push_back(Pending{p.seq, windowOf(p.send_ns), p.send_ns, send_mono, false, 0, 0});
    }
  }

  // `rx_mono`: when the reply arrived, on the monotonic clock; `read_mono`:
  // when it was read, the fallback should the arrival precede the send (the
  // realtime clock stepped between arrival and read).
  void onReply(Flow& f, const ProbePacket& r, int64_t rx_mono, int64_t read_mono, double now) {
    if (r.trace()) {
      if (f.trace) f.trace->onReply(r, now);
      return;
    }
    if (f.pending.empty() || r.seq < f.pending.front().seq || r.seq > f.pending.back().seq) {
      std::lock_guard lock(mu);
      ++stats.late;
      return;
    }
    Pending& p = f.pending[r.seq - f.pending.front().seq];
    if (p.send_ns != r.send_ns) {
      std::lock_guard lock(mu);
      ++stats.malformed;
      return;
    }
    if (p.answered) {
      std::lock_guard lock(mu);
      ++stats.late;
      return;
    }
    p.answered = true;
    p.received = r.received;
    const int64_t rx = rx_mono >= p.send_mono ? rx_mono : read_mono;
    p.rtt_us = rx > p.send_mono ? static_cast<double>(rx - p.send_mono) / 1000.0 : 0.0;
  }

  void readFlow(uint32_t i, uint32_t events, double now) {
    Flow& f = flows[i];
    SockError se;
    while ((events & EPOLLERR) != 0 && readSockError(f.fd, &se)) {
      if (f.trace && !f.trace->done()) {
        f.trace->onError(se, now);
      } else {
        std::lock_guard lock(mu);
        ++stats.icmp_errors;
      }
    }
    uint8_t buf[kProbeSize + 1];
    alignas(cmsghdr) char control[128];
    for (int n = 0; n < 64; ++n) {
      iovec iov{buf, sizeof buf};
      msghdr m{};
      m.msg_iov = &iov;
      m.msg_iovlen = 1;
      m.msg_control = control;
      m.msg_controllen = sizeof control;
      const ssize_t len = ::recvmsg(f.fd, &m, MSG_DONTWAIT);
      if (len < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        // A pending ICMP error surfaces here once; its entry is in the queue.
        if (errno != ECONNREFUSED && errno != EHOSTUNREACH && errno != ENETUNREACH &&
            errno != EINTR) {
          std::lock_guard lock(mu);
          ++stats.receive_errors;
          ++health[f.spec.src()].errors;
          break;
        }
        continue;
      }
      // The kernel's receive stamp is on the realtime clock: keep only its
      // age, so a step of the wall clock cannot bias RTTs. Without a stamp,
      // or one from the future (the clock stepped back meanwhile): now.
      const int64_t read_mono = clock->monoNs();
      int64_t rx_mono = read_mono;
      for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
          timespec ts;
          std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
          const int64_t age = kernelStampAgeNs(static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
                                               static_cast<uint64_t>(ts.tv_nsec));
          if (age > 0) rx_mono -= age;
        }
      }
      ProbePacket r;
      if ((m.msg_flags & MSG_TRUNC) != 0 ||
          decodeProbe({buf, static_cast<size_t>(len)}, r) != DecodeError::kOk ||
          r.type != ProbeType::kReply || r.session != session || r.flow != f.spec.source_port()) {
        std::lock_guard lock(mu);
        ++stats.malformed;
        continue;
      }
      onReply(f, r, rx_mono, read_mono, now);
    }
  }

  // Closes window w of flow f: one record, or none if nothing was sent.
  void closeWindow(Flow& f, int64_t w, double now) {
    size_t end = 0;
    while (end < f.pending.size() && f.pending[end].window <= w) ++end;
    if (end == 0) return;
    uint32_t sent = 0, lost = 0, fwd = 0, rev = 0;
    bool split_known = true;
    std::vector<double> rtts;
    int64_t prev_seq = f.base_seq;
    uint32_t prev_count = f.base_received;
    for (size_t k = 0; k < end; ++k) {
      const Pending& p = f.pending[k];
      ++sent;
      if (p.answered) {
        rtts.push_back(p.rtt_us);
        prev_seq = p.seq;
        prev_count = p.received;
        continue;
      }
      ++lost;
      // The gap of unanswered probes between two answered ones: the
      // responder's counts at its ends say how many of the gap reached it
      // (lost on the way back); the rest were lost on the way out. Which
      // ones is unknown, so the gap's return losses are spread evenly.
      size_t j = k + 1;
      while (j < f.pending.size() && !f.pending[j].answered) ++j;
      if (j == f.pending.size()) {
        split_known = false;  // no later answer yet: cannot tell
        continue;
      }
      const int64_t gap = static_cast<int64_t>(f.pending[j].seq) - prev_seq - 1;
      const int64_t reached = std::clamp<int64_t>(
          static_cast<int64_t>(f.pending[j].received) - static_cast<int64_t>(prev_count) - 1, 0,
          gap);
      const int64_t pos = static_cast<int64_t>(p.seq) - prev_seq - 1;
      if ((pos + 1) * reached / gap > pos * reached / gap) {
        ++rev;
      } else {
        ++fwd;
      }
    }
    v1::Probe rec;
    rec.set_t(static_cast<double>(w) * opt.window_s);
    rec.set_src(f.spec.src());
    rec.set_dst(f.spec.dst());
    rec.set_flow(f.spec.source_port());
    rec.set_window_s(opt.window_s);
    rec.set_sent(sent);
    rec.set_lost(lost);
    if (split_known) {
      rec.set_lost_fwd(fwd);
      rec.set_lost_rev(rev);
    }
    if (!rtts.empty()) {
      rec.set_rtt_us_p50(percentile(rtts, 0.5));
      rec.set_rtt_us_p99(percentile(rtts, 0.99));
    }
    if (f.has_path) {
      for (const std::string& h : f.path.path.hops) rec.add_path_addrs(h);
      rec.set_path_partial(!f.path.path.complete);
    }
    // The last answered probe of the window anchors the next window's gaps.
    for (size_t k = end; k-- > 0;) {
      if (f.pending[k].answered) {
        f.base_seq = f.pending[k].seq;
        f.base_received = f.pending[k].received;
        break;
      }
    }
    f.pending.erase(f.pending.begin(), f.pending.begin() + static_cast<std::ptrdiff_t>(end));
    // A flow that starts losing gets its path rediscovered at once.
    if (lost > 0 && f.last_lost == 0 && opt.discover_paths) f.next_trace = now;
    f.last_lost = lost;
    std::lock_guard lock(mu);
    stats.answered += sent - lost;
    stats.lost += lost;
    ++stats.records;
    out.push_back(std::move(rec));
  }

  void closeWindows(double now) {
    const double wall = static_cast<double>(clock->wallNs()) * 1e-9;
    while (wall >= static_cast<double>(next_close) * opt.window_s + opt.timeout_s) {
      for (Flow& f : flows) closeWindow(f, next_close, now);
      ++next_close;
    }
  }

  void runTraces(double now) {
    if (!opt.discover_paths) return;
    if (now >= next_trace_scan) {
      next_trace_scan = now + 0.1;
      for (uint32_t i = 0; i < flows.size(); ++i) {
        Flow& f = flows[i];
        if (!f.trace_queued && !f.trace && f.next_trace <= now) {
          f.trace_queued = true;
          trace_queue.push_back(i);
        }
      }
    }
    while (tracing.size() < opt.max_concurrent_traces && !trace_queue.empty()) {
      const uint32_t i = trace_queue.front();
      trace_queue.pop_front();
      flows[i].trace_queued = false;
      flows[i].trace.emplace(opt.path, session, flows[i].spec.source_port(),
                             flows[i].spec.dst_addr());
      tracing.push_back(i);
    }
    for (size_t k = 0; k < tracing.size();) {
      Flow& f = flows[tracing[k]];
      if (auto s = f.trace->poll(now, clock->wallNs())) {
        if (sendProbe(f.fd, f.dst, s->bytes, s->ttl) != 0) {
          std::lock_guard lock(mu);
          ++stats.send_errors;
          ++health[f.spec.src()].errors;
        }
      }
      if (!f.trace->done()) {
        ++k;
        continue;
      }
      f.path = FlowPath{f.trace->result(), static_cast<double>(clock->wallNs()) * 1e-9};
      f.has_path = true;
      f.trace.reset();
      // Refresh later, jittered so traces of many flows do not bunch up.
      f.next_trace = opt.path_refresh_s > 0
                         ? now + opt.path_refresh_s * (0.9 + 0.2 * (tracing[k] % 97) / 97.0)
                         : 1e300;
      {
        std::lock_guard lock(mu);
        ++stats.traces;
        paths[flowKey(f.spec)] = f.path;
      }
      tracing[k] = tracing.back();
      tracing.pop_back();
    }
  }

  double nextWake(double now) const {
    double t = now + 0.1;
    if (!schedule.empty()) t = std::min(t, schedule.top().first);
    for (uint32_t i : tracing) t = std::min(t, flows[i].trace->deadline());
    if (!trace_queue.empty() && tracing.size() < opt.max_concurrent_traces) t = now;
    return t;
  }

  void loop() {
    epoll_event events[64];
    while (!stopping.load(std::memory_order_relaxed)) {
      double now = clock->monoSeconds();
      sendDue(now);
      runTraces(now);
      closeWindows(now);
      const double wake = nextWake(clock->monoSeconds());
      const int wait_ms =
          std::max(0, static_cast<int>(std::ceil((wake - clock->monoSeconds()) * 1000.0)));
      const int n = epoll_wait(epfd, events, 64, wait_ms);
      now = clock->monoSeconds();
      for (int k = 0; k < n; ++k) {
        if (events[k].data.u32 == UINT32_MAX) return;  // wake-up: stop
        readFlow(events[k].data.u32, events[k].events, now);
      }
    }
  }
};

std::unique_ptr<Prober> Prober::start(const ProberOptions& options,
                                      const std::vector<v1::ProbeFlow>& flows,
                                      std::map<std::string, FlowPath> known_paths,
                                      std::vector<std::string>* errors) {
  auto impl = std::make_unique<Impl>();
  impl->opt = options;
  if (options.clock) impl->clock = options.clock;
  if (!(impl->opt.window_s > 0)) impl->opt.window_s = 5;
  if (!(impl->opt.probes_per_second > 0)) impl->opt.probes_per_second = 1;
  std::random_device rd;
  impl->session = rd() | 1u;
  impl->epfd = epoll_create1(EPOLL_CLOEXEC);
  impl->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl->epfd < 0 || impl->wakefd < 0) {
    if (errors) errors->push_back(std::string("prober: epoll/eventfd: ") + std::strerror(errno));
    return nullptr;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = UINT32_MAX;
  if (epoll_ctl(impl->epfd, EPOLL_CTL_ADD, impl->wakefd, &ev) != 0) {
    if (errors) errors->push_back(std::string("prober: epoll_ctl: ") + std::strerror(errno));
    return nullptr;
  }

  const double now = impl->clock->monoSeconds();
  const double interval = 1.0 / impl->opt.probes_per_second;
  for (const v1::ProbeFlow& spec : flows) {
    FlowTuple t{spec.src_addr(), static_cast<uint16_t>(spec.source_port()), spec.dst_addr(),
                options.responder_port, options.dscp};
    PortHealth& health = impl->health[spec.src()];
    // A flow that cannot be set up is skipped, said and counted: probing it
    // anyway would read as 100 % loss.
    auto skip = [&](const std::string& why) {
      if (errors) errors->push_back(why);
      ++health.failed_flows;
      ++impl->stats.setup_errors;
    };
    std::string err;
    if (spec.source_port() == 0 || spec.source_port() > 65535) {
      skip("flow " + flowKey(spec) + ": source port out of range");
      continue;
    }
    const int fd = openFlowSocket(t, &err);
    if (fd < 0) {
      skip(err);
      continue;
    }
    // Replies are read only for sockets in the epoll set.
    epoll_event fev{};
    fev.events = EPOLLIN;
    fev.data.u32 = static_cast<uint32_t>(impl->flows.size());
    if (epoll_ctl(impl->epfd, EPOLL_CTL_ADD, fd, &fev) != 0) {
      skip("flow " + flowKey(spec) + ": epoll_ctl: " + std::strerror(errno));
      ::close(fd);
      continue;
    }
    ++health.flows;
    Flow f;
    f.spec = spec;
    f.fd = fd;
    makeSockaddr(t.dst_addr, t.dst_port, &f.dst);
    if (auto it = known_paths.find(flowKey(spec)); it != known_paths.end()) {
      f.path = it->second;
      f.has_path = true;
      f.next_trace = now + options.path_refresh_s;
      impl->paths[it->first] = it->second;
    }
    impl->flows.push_back(std::move(f));
  }
  // Spread the flows' first probes over one interval so sends do not bunch.
  const size_t n = impl->flows.size();
  for (uint32_t i = 0; i < n; ++i) {
    Flow& f = impl->flows[i];
    const double start_at =
        impl->opt.held.count(flowKey(f.spec)) != 0 ? now + impl->opt.hold_s : now;
    f.next_send = start_at + interval * static_cast<double>(i) / static_cast<double>(n);
    f.next_trace = std::max(f.next_trace, start_at);
    impl->schedule.emplace(f.next_send, i);
  }
  impl->next_close = impl->windowOf(impl->clock->wallNs());
  impl->stats.flows = n;
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->loop(); });
  return std::unique_ptr<Prober>(new Prober(std::move(impl)));
}

Prober::Prober(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Prober::~Prober() { stop(); }

void Prober::stop() {
  if (impl_->stopping.exchange(true)) return;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(impl_->wakefd, &one, sizeof one);
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::vector<v1::Probe> Prober::drain() {
  std::lock_guard lock(impl_->mu);
  std::vector<v1::Probe> out;
  out.swap(impl_->out);
  return out;
}

ProberStats Prober::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

std::map<std::string, PortHealth> Prober::health() const {
  std::lock_guard lock(impl_->mu);
  return impl_->health;
}

std::map<std::string, FlowPath> Prober::paths() const {
  std::lock_guard lock(impl_->mu);
  return impl_->paths;
}

}  // namespace netdiag::collector
