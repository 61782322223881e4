#pragma once

// Baseline: NetBouncer's link inference (Tan et al., "NetBouncer: Active
// Device and Link Failure Localization in Data Center Networks", NSDI'19).
//
// Each pass sums, per exact path, the probes of the window's observations,
// giving each path an observed success ratio y_p = 1 - lost / sent. It then
// fits a success rate x_l in [0,1] for every directed link on those paths,
// minimizing
//     sum_p (y_p - prod_{l in p} x_l)^2  +  lambda * sum_l x_l (1 - x_l)
// (the paper's objective; the regularizer pushes each x_l towards 0 or 1)
// by coordinate descent: with the other links fixed, the objective is a
// quadratic a x^2 - (2 s1 - lambda) x + c in x_l (s1 = sum t_p y_p,
// s2 = sum t_p^2, a = s2 - lambda, t_p the product of the other links on p),
// minimized in closed form and clamped to [0,1] (an endpoint when a <= 0).
// Links with 1 - x_l > fail_threshold are blamed.
//
// Deviations:
// - NetBouncer's probes are IP-in-IP bounced off a chosen switch, so every
//   probe's path is explicit. Ours are traceroute-discovered: records
//   without a full `path` are skipped (NetBouncer would have no such
//   probes). Lossy flows lose their traceroute more often, which biases y_p
//   upwards on exactly the paths that matter; NetBouncer never faces that.
// - A bounced probe's loss is on its round trip, which NetBouncer knows.
//   We use the loss split and reply path as WindowConfig::use_one_way says;
//   without them, the round-trip loss is charged to the forward path.
// - The paper's first stage (finding bad devices from per-switch path
//   success) is left out: the faults compared here are link faults.
// - Paths are unweighted (as the paper); each exact path of the window is
//   one equation however many probes it carries.
// Confidence: 1 - (residual loss of the link's paths after the fit) / (their
// observed loss), i.e. how much of the loss on its paths the fit explains.

#include "bench/baselines/windowed.h"

namespace netdiag::baselines {

struct NetBouncerConfig {
  WindowConfig window;
  // The regularizer weight and failure threshold: the paper tunes them per
  // deployment; these are the values of Flock's public reimplementation
  // (netarch/FaultLocalization, regularize_const = 0.01) and a threshold
  // of 0.2 % loss, above the 1e-5-per-hop background of our fabrics.
  double lambda = 0.01;
  double fail_threshold = 0.002;
  int max_iterations = 100;      // coordinate-descent sweeps (Flock: 100)
  double tolerance = 1e-9;       // stop when no x_l moved more than this in a sweep
  uint64_t min_path_probes = 1;  // paths with fewer probes in the window are left out
};

class NetBouncerFit : public WindowedLocalizer {
 public:
  explicit NetBouncerFit(const topology::Topology& topo, NetBouncerConfig config = {});

 protected:
  void decide(std::span<const Observation> window, std::vector<Blame>& out) override;

 private:
  NetBouncerConfig cfg_;
};

}  // namespace netdiag::baselines
