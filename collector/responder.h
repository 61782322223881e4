#pragma once

// The probe responder: a UDP socket on the plan's responder port that answers
// well-formed probes (collector/probe_packet.h) with a reply of the same size,
// counting the probes of every (source address, source port, session, flow)
// so the prober can tell losses on the way out from losses on the way back.
// Replies leave from the address the probe was sent to, with the probe's TOS,
// so they stay on the flow's traffic class.
//
// Protection (docs/security.md): a probe is answered only when its source
// address may probe this agent (allowOnly(): the plan's probed_by_addrs, and
// for a grace period the list it replaced; until then, or after
// allowEveryone(), every source), within its source's rate (a token bucket
// per address) and within the global rate (one token bucket for all
// sources), so spoofed sources get no replies from a planned agent and
// never more than the global rate from any. It never amplifies: a reply
// is never larger than its probe. Flow counts and buckets live in bounded
// tables that forget idle entries first, so a scan of spoofed sources
// costs bounded memory; a refused datagram makes no state at all.
//
// Thread-safety: start() runs one receive thread; stats(), stop(),
// allowOnly(), allowEveryone() and setGlobalRate() may be called from any
// thread.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace netdiag::collector {

struct ResponderOptions {
  std::string address = "0.0.0.0";
  uint16_t port = 7601;            // 0 picks a free port (tests)
  double rate_per_source = 20000;  // replies per second per source address
  double burst_per_source = 2000;  // bucket depth
  size_t max_sources = 4096;       // token buckets kept
  size_t max_flows = 1u << 16;     // flow counts kept
  double flow_idle_s = 300;        // a flow unseen this long is forgotten
  // All sources together (setGlobalRate() changes them); rate <= 0: none.
  double global_rate = 20000;  // replies per second
  double global_burst = 2000;
  // Set: the sources answered from the first datagram on (allowOnly()
  // before the receive thread starts; what is not IPv4 is ignored), so a
  // responder started for a plan with a list never answers anyone else,
  // not even for a moment.
  std::optional<std::vector<std::string>> allow_only;
  // Test hooks on the real path (0 = off): ignore every Nth valid counted
  // probe as if it never arrived (a loss on the way out), or count every Nth
  // but send no reply (a loss on the way back).
  uint32_t drop_every_nth = 0;
  uint32_t mute_every_nth = 0;
};

struct ResponderStats {
  uint64_t received = 0;  // datagrams read
  uint64_t replied = 0;
  uint64_t malformed = 0;            // not a well-formed probe: no reply
  uint64_t not_in_plan = 0;          // well-formed, but its source may not probe us: no reply
  uint64_t rate_limited = 0;         // well-formed, but over the source's rate: no reply
  uint64_t global_rate_limited = 0;  // within the source's rate, over the global one
  uint64_t hook_dropped = 0;
  uint64_t hook_muted = 0;
  uint64_t send_errors = 0;
  uint64_t flows = 0;          // flow counts held now
  uint64_t flows_evicted = 0;  // forgotten (idle or table full)
  bool everyone = true;        // every source answered (no list, or a replaced one's grace)
  uint64_t allowed = 0;        // addresses answered now (list and grace), when not everyone
};

class Responder {
 public:
  // Binds and starts the receive thread; nullptr and *error on failure.
  static std::unique_ptr<Responder> start(const ResponderOptions& options, std::string* error);
  ~Responder();
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  uint16_t port() const { return port_; }
  ResponderStats stats() const;

  // Answers only sources in `addrs` (IPv4 addresses; the others are
  // returned, and ignored). The sources answered until now stay answered
  // for `grace_s` more seconds when not in `addrs` (all of them, when that
  // was every source after allowEveryone()), so probers still running the
  // plan this one replaces are not refused while they fetch the new one.
  // A responder just started has answered nobody: its first list is in
  // force at once.
  std::vector<std::string> allowOnly(const std::vector<std::string>& addrs, double grace_s);
  // Answers every source (the state after start() without allow_only).
  void allowEveryone();
  void setGlobalRate(double rate, double burst);
  void stop();

 private:
  struct State;
  Responder(ResponderOptions options, int fd, int wake_fd, uint16_t port);
  void loop();

  ResponderOptions options_;
  int fd_ = -1;
  int wake_fd_ = -1;
  uint16_t port_ = 0;
  std::unique_ptr<State> state_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace netdiag::collector
