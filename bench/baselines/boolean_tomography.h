#pragma once

// Baseline: Boolean network tomography (Duffield, "Network Tomography of
// Binary Network Performance Characteristics", IEEE Trans. Inf. Theory 2006;
// Nguyen & Thiran's and Kompella et al.'s greedy "smallest consistent
// failure set"), as commonly applied to data-center probing.
//
// Each pass sums, per exact path, the probes of the window's observations.
// A path is good when its loss ratio is at most `good_max_loss_ratio`
// (classically 0: no probe lost) and bad when above `bad_min_loss_ratio`.
// Every link of a good path is exonerated. Then greedy set cover: blame the
// non-exonerated link that lies on the most still-unexplained bad paths,
// mark those explained, repeat until every bad path is explained or no
// non-exonerated link is left on the rest (those stay unexplained: noise, or
// a fault the exoneration rule hid).
//
// Deviations and choices:
// - Boolean tomography assumes known paths. Records without a full `path`
//   are skipped; we do not spread them over the ECMP candidates, because a
//   good path can only exonerate the links it actually crossed and a bad
//   one would then "cover" every candidate, which is not the method.
// - Reverse paths: as WindowConfig::use_one_way (forward path with lost_fwd
//   when the record splits the loss; otherwise the round-trip loss on the
//   forward path, or on forward + reply path when reply_path is known).
// - Known limitation (kept on purpose, it is the method): one clean path
//   through a gray link exonerates it. With few probes per path per window a
//   link losing a few percent is crossed by some clean paths.
//   `exonerate_min_good_paths` > 1 relaxes this; the default is the method's 1.
// Confidence: the share of the pass's bad paths the link explained.

#include "bench/baselines/windowed.h"

namespace netdiag::baselines {

struct BooleanTomographyConfig {
  WindowConfig window;
  double good_max_loss_ratio = 0.0;  // good path: loss ratio <= this
  double bad_min_loss_ratio = 0.0;   // bad path: loss ratio > this (>= good_max_loss_ratio)
  int exonerate_min_good_paths = 1;  // good paths needed to exonerate a link
  int min_bad_paths = 1;             // a blamed link must explain at least this many
  int max_blamed_per_pass = 64;
};

class BooleanTomography : public WindowedLocalizer {
 public:
  explicit BooleanTomography(const topology::Topology& topo, BooleanTomographyConfig config = {});

 protected:
  void decide(std::span<const Observation> window, std::vector<Blame>& out) override;

 private:
  BooleanTomographyConfig cfg_;
};

}  // namespace netdiag::baselines
