#pragma once

// The probe responder: a UDP socket on the plan's responder port that answers
// well-formed probes (collector/probe_packet.h) with a reply of the same size,
// counting the probes of every (source address, source port, session, flow)
// so the prober can tell losses on the way out from losses on the way back.
// Replies leave from the address the probe was sent to, with the probe's TOS,
// so they stay on the flow's traffic class.
//
// Protection: replies are rate-limited per source address (token bucket);
// flow counts and buckets live in bounded tables that forget idle entries
// first, so a scan of spoofed sources costs bounded memory.
//
// Thread-safety: start() runs one receive thread; stats() and stop() may be
// called from any thread.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace netdiag::collector {

struct ResponderOptions {
  std::string address = "0.0.0.0";
  uint16_t port = 7601;            // 0 picks a free port (tests)
  double rate_per_source = 20000;  // replies per second per source address
  double burst_per_source = 2000;  // bucket depth
  size_t max_sources = 4096;       // token buckets kept
  size_t max_flows = 1u << 16;     // flow counts kept
  double flow_idle_s = 300;        // a flow unseen this long is forgotten
  // Test hooks on the real path (0 = off): ignore every Nth valid counted
  // probe as if it never arrived (a loss on the way out), or count every Nth
  // but send no reply (a loss on the way back).
  uint32_t drop_every_nth = 0;
  uint32_t mute_every_nth = 0;
};

struct ResponderStats {
  uint64_t received = 0;  // datagrams read
  uint64_t replied = 0;
  uint64_t malformed = 0;     // not a well-formed probe: no reply
  uint64_t rate_limited = 0;  // well-formed, but over the source's rate: no reply
  uint64_t hook_dropped = 0;
  uint64_t hook_muted = 0;
  uint64_t send_errors = 0;
  uint64_t flows = 0;          // flow counts held now
  uint64_t flows_evicted = 0;  // forgotten (idle or table full)
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
