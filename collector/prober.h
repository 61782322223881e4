#pragma once

// The prober: for every flow of the plan, a UDP socket bound to the flow's
// (source address, source port) and connected to the peer's responder, so
// the 5-tuple and hence the ECMP path stay fixed; probes leave at the plan's
// rate with the plan's DSCP, replies are timed with kernel receive
// timestamps. Windows are aligned to the wall clock: a window ending at t
// holds the probes sent in (t - window_s, t] and is closed at t + timeout,
// when every probe not answered is lost. Per flow and window it produces one
// telemetry probe record (v1::Probe): sent, lost, RTT p50/p99 and, from the
// responder's echoed counts, the losses on the way out and back.
//
// The same sockets carry path discovery (collector/pathfinder.h): each flow's
// path is traced at start, every path_refresh_s, and at once when the flow
// starts losing; records carry the last path found.
//
// Thread-safety: one internal thread does all socket work; drain(), stats()
// and paths() may be called from any thread.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collector/clock.h"
#include "collector/pathfinder.h"
#include "netdiag/v1/collector.pb.h"

namespace netdiag::collector {

struct ProberOptions {
  double window_s = 5;
  double probes_per_second = 10;  // per flow
  uint16_t responder_port = 7601;
  uint8_t dscp = 0;
  double timeout_s = 1;  // grace after a window's end for late replies
  bool discover_paths = true;
  double path_refresh_s = 60;  // 0: trace once only
  size_t max_concurrent_traces = 32;
  PathfinderOptions path;
  uint64_t max_probes = 0;  // per flow, then stop sending (tests, one-shot runs); 0: no limit
  // Flows (by flowKey()) that start probing, and path discovery, only
  // hold_s seconds after start: those a re-plan adds towards a peer this
  // source did not probe before, whose responder may not have the plan
  // that admits it yet (docs/security.md).
  std::set<std::string> held;
  double hold_s = 0;
  const Clock* clock = nullptr;  // nullptr: systemClock(); must outlive the prober
};

struct ProberStats {
  uint64_t flows = 0;     // flows probing now
  uint64_t sent = 0;      // probes sent
  uint64_t answered = 0;  // probes answered within their window's timeout
  uint64_t lost = 0;      // probes in closed windows without a reply
  uint64_t send_errors = 0;
  uint64_t receive_errors = 0;
  uint64_t malformed = 0;     // datagrams on a flow socket that are no valid reply of it
  uint64_t late = 0;          // replies after their window closed, or duplicates
  uint64_t icmp_errors = 0;   // error-queue entries not used by path discovery
  uint64_t skipped = 0;       // sends skipped because the loop fell behind
  uint64_t traces = 0;        // path discoveries finished
  uint64_t records = 0;       // records produced
  uint64_t setup_errors = 0;  // flows of the plan skipped: no socket, bind or epoll registration
};

// One local port's flows (keyed by the flows' `src`, "node:if").
struct PortHealth {
  uint32_t flows = 0;         // probing
  uint32_t failed_flows = 0;  // could not be set up (also in *errors of start())
  uint64_t errors = 0;        // send and receive errors so far
};

// The path last found for a flow.
struct FlowPath {
  PathResult path;
  double found_at = 0;  // wall clock, Unix seconds
};

// "src_addr:source_port->dst_addr", how paths are keyed across prober restarts.
std::string flowKey(const v1::ProbeFlow& f);

class Prober {
 public:
  // Opens every flow's socket and starts probing. A flow whose socket cannot
  // be opened or watched is skipped with a message in *errors and counted
  // (setup_errors, PortHealth::failed_flows). `known_paths` seeds the
  // path cache (e.g. from the prober this one replaces).
  static std::unique_ptr<Prober> start(const ProberOptions& options,
                                       const std::vector<v1::ProbeFlow>& flows,
                                       std::map<std::string, FlowPath> known_paths,
                                       std::vector<std::string>* errors);
  ~Prober();
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

  // Records of the windows closed since the last call.
  std::vector<v1::Probe> drain();
  ProberStats stats() const;
  std::map<std::string, PortHealth> health() const;
  std::map<std::string, FlowPath> paths() const;
  // Stops probing; windows not yet closed are dropped.
  void stop();

  struct Impl;

 private:
  explicit Prober(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace netdiag::collector
