#pragma once

// What the three baseline localizers (007, Boolean tomography, NetBouncer)
// share: turning probe records into per-path observations, the windowed
// decision pass every few seconds of telemetry time, and the incident
// lifecycle (open when a link is first blamed, resolve after a quiet spell).
// Each baseline only supplies decide(): which links one pass blames.
//
// The lifecycle follows netdiag's analyzer (analyzer/engine.h) so the
// reports compare side by side: a pass runs when telemetry time moves past
// the previous pass + pass_interval_s, is labeled with the newest `t`
// ingested so far, and sees only records ingested so far (no look-ahead).
//
// Thread-safety: none; feed it from one thread.

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/incident.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::baselines {

using topology::DirLinkId;

struct WindowConfig {
  double window_s = 60;         // a pass sees records with t in (now - window_s, now]
  double pass_interval_s = 5;   // as netdiag's analyzer
  double resolve_after_s = 60;  // an incident resolves after this long without blame
  // Use lost_fwd / lost_rev when a record carries them: the forward path is
  // charged lost_fwd only, the reply path (when known) lost_rev. Without the
  // split, a round-trip loss is charged to the forward path alone (or to
  // forward + reply path when reply_path is known). The papers each see one
  // path per loss signal (007: the data path of a retransmitting flow;
  // NetBouncer: the bounced probe's explicit round trip), so this is the
  // closest reading of our round-trip probes.
  bool use_one_way = true;
};

// One loss measurement over one known path: `lost` of `sent` probes.
struct Observation {
  double t = 0;
  uint64_t flow_key = 0;  // (src, dst, flow, direction) hashed, for distinct-flow counts
  uint32_t sent = 0;
  uint32_t lost = 0;
  std::vector<DirLinkId> links;
};

// Observations over one exact path, summed over a window.
struct PathStat {
  const std::vector<DirLinkId>* links = nullptr;  // points into the window
  uint64_t sent = 0;
  uint64_t lost = 0;
  uint32_t records = 0;
  double lossRatio() const {
    return sent == 0 ? 0.0 : static_cast<double>(lost) / static_cast<double>(sent);
  }
};
std::vector<PathStat> aggregateByPath(std::span<const Observation> window);

struct BaselineStats {
  uint64_t probes = 0;           // probe records ingested
  uint64_t observations = 0;     // observations made from them
  uint64_t skipped_no_path = 0;  // records (or their lossy part) without a usable path
  uint64_t partial_paths = 0;    // records whose path was a prefix (treated as unknown)
  uint64_t passes = 0;
};

class WindowedLocalizer : public telemetry::RecordSink {
 public:
  WindowedLocalizer(const topology::Topology& topo, WindowConfig config, std::string method);
  ~WindowedLocalizer() override;

  void onProbe(const telemetry::ProbeRecord& r) override;
  // Counters and LLDP are not evidence for these methods; they only move the clock.
  void onPort(const telemetry::PortRecord& r) override;
  void onLldp(const telemetry::LldpRecord& r) override;

  // Runs a last pass over what has been ingested when the previous pass did
  // not already cover the newest record (call at the end of a replay).
  void finish();

  // Every incident opened so far, resolved ones too.
  analyzer::Report report() const;
  const BaselineStats& stats() const { return stats_; }
  const std::string& method() const { return method_; }

 protected:
  struct Blame {
    DirLinkId link = topology::kNone;
    double confidence = 0;  // a score in [0,1]; each baseline says what it means
    double loss_ratio = 0;
    nlohmann::json evidence = nlohmann::json::object();
  };
  // One decision pass over the window's observations (in ingest order).
  virtual void decide(std::span<const Observation> window, std::vector<Blame>& out) = 0;

  // Sum of sent and lost over every observation of the window crossing each
  // link (indexed by DirLinkId); a loss-ratio estimate for the evidence.
  struct LinkLoad {
    uint64_t sent = 0, lost = 0;
    double ratio() const {
      return sent == 0 ? 0.0 : static_cast<double>(lost) / static_cast<double>(sent);
    }
  };
  std::vector<LinkLoad> linkLoads(std::span<const Observation> window) const;

  const topology::Topology& topo_;
  const WindowConfig config_;

 private:
  void advance(double t);
  void runPass();
  void add(const telemetry::ProbeRecord& r, const std::vector<DirLinkId>& links, uint32_t sent,
           uint32_t lost, uint64_t direction);

  std::string method_;
  std::vector<Observation> window_;
  double newest_t_ = 0;
  bool have_t_ = false;
  double next_pass_t_ = 0;
  double last_pass_t_ = 0;
  bool passed_ = false;
  BaselineStats stats_;

  struct Open {
    size_t incident = 0;
    double last_blamed = 0;
  };
  std::vector<analyzer::Incident> incidents_;
  std::unordered_map<DirLinkId, Open> open_;
  uint64_t next_id_ = 1;
};

}  // namespace netdiag::baselines
