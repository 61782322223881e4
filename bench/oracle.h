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
// It needs what netdiag cannot have (the truth), so it is a floor on the
// time to localize, not a method; it never names a link it was not told.

#include <cstdint>
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
  struct Tracked {
    OracleFault row;
    topology::DirLinkId link;
    std::vector<Bucket> buckets;  // by pass index ceil(t / pass_s)
  };
  void add(Tracked& f, double t, double n, double k, double p0);

  const topology::Topology& topo_;
  OracleConfig config_;
  double bar_ = 8;
  std::vector<Tracked> faults_;
};

// The binomial log-likelihood ratio of k losses in n probes against a
// background ratio p0 (0 when k/n <= p0).
double binomialLlr(double n, double k, double p0);

}  // namespace netdiag::bench
