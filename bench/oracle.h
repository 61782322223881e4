#pragma once

// The oracle floor of the accuracy sweep: a localizer that already knows
// which directed link is faulty and only has to become sure of it. For each
// fault of a run it tests the probes whose KNOWN path (`path`, and
// `reply_path` where present) crosses the faulty link — one-way counts
// against one direction's background where the record has them, the round
// trip otherwise — with a binomial log-likelihood ratio against the run's
// background loss, over the same horizon (180 s) and passes (every 5 s) as
// netdiag's engine, at the bar netdiag pays to page (its false-page budget,
// analyzer::pagingBarNats, plus the ln 2 netdiag's two horizons pay).
//
// It knows every fault of the run, not only the one it tests: a probe that
// also crossed another faulty link (on its known path, while that fault
// was on) had that link's loss in its null as well, so the link under test
// is not credited with losses another fault caused. Probes across another
// link that was down, flapping or blackholing some flows tell nothing of
// it and are left out.
//
// It needs what netdiag cannot have (the truth), so it is a floor on the
// time to localize, not a method; it never names a link it was not told.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/truth.h"
#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::bench {

struct OracleConfig {
  double horizon_s = 180;
  double pass_s = 5;
  double background_loss = 1e-5;  // per directed link and packet, as the scenario has it
  // The bar netdiag pays to page (analyzer::pagingBarNats of its config),
  // which the oracle pays too: 0 leaves the oracle its own max(8, ln M + ln 2).
  double bar = 0;
};

struct OracleFault {
  std::string id;    // the truth item's
  std::string link;  // directed link "X:p->Y:q"
  double onset = 0;
  std::optional<double> end;
  double injected = 0;                 // the configured loss
  std::optional<double> localized_at;  // first pass at or after onset over the bar
  double losses = 0;                   // lost probes on it (known path) during the fault
  double probes = 0;                   // probes of known path crossing it during the fault
};

class Oracle : public telemetry::RecordSink {
 public:
  // Tests the link faults of `truth` whose kind loses packets (link_loss,
  // link_corruption, link_down, link_flap, link_blackhole).
  Oracle(const topology::Topology& topo, const sim::Truth& truth, OracleConfig config);

  void onProbe(const telemetry::ProbeRecord& r) override;
  void onPort(const telemetry::PortRecord&) override {}
  void onLldp(const telemetry::LldpRecord&) override {}

  // Runs the passes up to `end` and returns one row per tested fault.
  std::vector<OracleFault> finish(double end);
  double bar() const { return bar_; }

 private:
  struct Bucket {
    double n = 0, k = 0, e0 = 0;  // probes, losses, expected background losses
  };
  // Per loss of the other faults the probes crossed (0: none).
  using Classes = std::map<double, Bucket>;
  struct Tracked {
    OracleFault row;
    topology::DirLinkId link;
    double others_loss = 0;        // what it adds to the null of the others' tests
    bool uninformative = false;    // down, flapping or blackholing: no null for others
    std::vector<Classes> buckets;  // by pass index ceil(t / pass_s)
  };
  void add(Tracked& f, double t, double n, double k, double p0, double others);
  // The loss the faults other than `f` add on `path` at t; nullopt when one
  // of them leaves the probes nothing to tell of f.
  std::optional<double> othersOn(const Tracked& f, const std::vector<topology::DirLinkId>& path,
                                 double t, double window_s) const;

  const topology::Topology& topo_;
  OracleConfig config_;
  double bar_ = 8;
  std::vector<Tracked> faults_;
};

// The binomial log-likelihood ratio of k losses in n probes against a
// background ratio p0 (0 when k/n <= p0).
double binomialLlr(double n, double k, double p0);
// The same over classes of probes with nulls q_c (background and the other
// faults they crossed), for one added loss x on the link tested, at the
// best x: sum_c k_c ln((q_c + x (1 - q_c)) / q_c) + (n_c - k_c) ln(1 - x).
double addedLossLlr(const std::vector<std::array<double, 3>>& classes);  // {n, k, q}

}  // namespace netdiag::bench
