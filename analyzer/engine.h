#pragma once

// The localization engine: consumes telemetry records (formats.md §2) in
// time order, keeps per-directed-link evidence over sliding windows, and
// turns it into incidents with a stated confidence. docs/localization.md
// describes the method.
//
// Time is the log's own clock: decisions run in passes at every multiple of
// `pass_interval_s` of telemetry time, each labeled with that time and made
// from the records up to it, so replaying a prefix of a log reproduces the
// same decisions up to its end (no look-ahead).
//
// Thread-safety: none; feed it from one thread.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "analyzer/drain_state.h"
#include "analyzer/incident.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::analyzer {

struct EngineConfig {
  double bucket_s = 5;            // evidence is kept in buckets of this width
  double horizon_s = 180;         // how far back evidence counts (the long horizon)
  double short_horizon_s = 30;    // the fast one, for faults that just began
  double pass_interval_s = 5;     // decisions every this many seconds of log time
  double late_tolerance_s = 30;   // records this late still count as in order
  double page_confidence = 0.99;  // localize (page) at or above this posterior
  // The false-page budget: expected false pages per directed link and hour
  // of a healthy fabric. A page needs the log-likelihood ratio of
  // pagingBarNats(), which this budget sets: 1e-8 is under one false page a
  // week on a fabric of 500,000 directed links (docs/localization.md §8).
  double false_pages_per_link_hour = 1e-8;
  double min_loss = 3e-4;       // smallest loss ratio worth a link incident
  double resolve_after_s = 60;  // clean this long before an incident resolves
  // How long a busy host (its stack dropping or answering late on every
  // flow) lasts at most: the host-side noise of docs/formats.md. A host's
  // loss that lasts longer is its cable's (docs/localization.md step 6).
  double busy_host_max_s = 300;
  size_t expected_flows = 0;  // sizes the path memory up front (0: grow as seen)
};

// What is wrong with a configuration, one line each (empty: usable).
std::vector<std::string> validate(const EngineConfig& config);

// The log-likelihood ratio (nats) a hypothesis needs to page: ln(passes per
// hour / budget). With no fault, a directed link's ratio reaches t in a
// pass with probability at most e^-t (Chernoff; the two horizons and the
// scan over short windows are paid for inside the ratio), so over an
// hour's passes each link pages falsely at most `false_pages_per_link_hour`
// times, however long the run and however large the fabric.
double pagingBarNats(const EngineConfig& config);

struct IngestStats {
  uint64_t probes = 0, ports = 0, lldp = 0;
  uint64_t late = 0;      // older than the newest t but within tolerance
  uint64_t too_late = 0;  // older than the tolerance: stored, not used for past decisions
  uint64_t passes = 0;
  // Wall time the passes took (not the log's clock): what a pass costs live.
  double pass_seconds = 0;       // all passes
  double last_pass_seconds = 0;  // the newest
  double last_pass_started = 0;  // Unix time (system clock) the newest began
  // Passes by wall time: pass_buckets[i] counts those in (bound i-1, bound
  // i], the last those over every bound. Every pass counts, also the ones a
  // catch-up runs between two looks at these stats.
  static constexpr std::array<double, 8> kPassBounds{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  std::array<uint64_t, kPassBounds.size() + 1> pass_buckets{};
};

// Probes whose known path crossed a directed link, over the horizon.
struct LinkEvidence {
  double probes = 0;
  double lost = 0;
  double background = 0;  // the loss ratio these probes have with no fault
};

// A link's port counters at both ends over a recent window: whether its
// errors and carrier are quiet (a drained link's, before it is restored).
struct LinkCounters {
  bool reported = false;       // a record from either end within the window
  double rx_errors = 0;        // at both ends (CRC errors where reported)
  double carrier_changes = 0;  // at both ends
  double window_s = 0;         // the window (whole buckets)
};

class Engine : public telemetry::RecordSink {
 public:
  explicit Engine(const topology::Topology& topo, EngineConfig config = {});
  ~Engine() override;

  void onProbe(const telemetry::ProbeRecord& r) override;
  void onPort(const telemetry::PortRecord& r) override;
  void onLldp(const telemetry::LldpRecord& r) override;
  // A hint that `r` comes soon: starts loading what its onProbe will touch
  // first (its flow's cached paths), so a caller that knows the records
  // ahead overlaps their cache misses. Changes nothing.
  void prefetch(const telemetry::ProbeRecord& r) const;

  // Moves the clock to `t` without a record and runs the pass due before it,
  // as a record at `t` would. The live daemon calls it with the wall clock
  // minus the agents' delivery delay, so decisions go on when the fabric is
  // silent (a dead fabric is news too).
  void advanceTo(double t);

  // At the end of the input: runs the pass due at the newest time when that
  // time is a pass boundary (a longer log would run it too). Idempotent.
  void finish();

  // Every incident opened so far (resolved ones too); generated_at is the
  // newest telemetry time ingested.
  Report report() const;
  const IngestStats& stats() const;

  LinkEvidence linkEvidence(topology::DirLinkId d) const;
  // The link's counters over the newest `seconds` (rounded up to whole
  // buckets, at most the horizon).
  LinkCounters linkCounters(topology::LinkId link, double seconds) const;
  // The fabric-wide round-trip loss ratio of a probe with no fault (last
  // pass); one-way counts are held to one direction's, about half of it.
  double backgroundLoss() const;

  // Called whenever an incident opens or changes state (for persistence).
  void onIncidentChange(std::function<void(const Incident&)> callback);

  // What netdiag's drains did (DrainState): the links they hold out of
  // service leave the ECMP graph the evidence is weighed on (formats.md §1:
  // a link known to be down leaves the graph) and their incidents do not
  // resolve while out; mitigated ones get mitigated_at; the routing changes
  // explain the loss of the probe windows they touched.
  void setDrained(const DrainState& drains);

  // Continues from incidents an earlier run persisted: open ones are tracked
  // again (they can still localize and resolve), closed ones stay in the
  // history, and new ids continue after the highest. Call before ingesting.
  // `evidence_replayed`: the evidence behind them is replayed into this
  // engine next (the bus), not lost (IncidentTracker::restore).
  void restore(const std::vector<Incident>& incidents, bool evidence_replayed = false);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace netdiag::analyzer
