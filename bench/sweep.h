#pragma once

// The accuracy sweep (`accuracy --sweep ci|full`): a fixed set of seeded
// draws over the conditions a deployment varies — fabric shape, plan
// density and peer re-draws, per-flow path knowledge, reply paths, one-way
// counts, background loss, missing and late records, the ECMP hash family,
// and what happens (nothing, a busy host, congestion, one lossy link at
// 0.1 %..100 %, up to 8 faults with access links). Each run is named by
// its condition; results are pooled per cell (one level of one axis), and
// the worst cell is reported beside the totals, with an oracle floor, the
// calibration of confidence and the honesty of loss estimates.
// docs/benchmarks.md ("Sweep") has the command and the figures.

#include <string>

namespace netdiag::bench {

struct SweepOptions {
  std::string mode = "ci";  // ci | full
  unsigned threads = 2;
  int draws = 0;                  // 0: the mode's count
  int only = -1;                  // >= 0: just that draw
  double require_precision = -1;  // < 0: report only
  double require_recall = -1;     // over oracle-localized faults with loss >= 0.5 %
  std::string json_out;           // cells and summary
  std::string runs_out;           // one JSON line per run
  bool quiet = false;             // no per-run progress on stderr
  // How long each run lasts (faults begin 60-130 s in). 300 s keeps the
  // sweeps within their time; longer runs show faults that only time can
  // tell apart, as a one-NIC host's cable from the host busy for minutes.
  double duration_s = 300;
  // The closed loop: after every pass the engine's unsettled links
  // (analyzer/unsettled.h) get flows (planner::focusPlan), which the
  // simulated agents run from the next window on, as agents fetch the
  // analyzer's plan.
  bool adapt = false;
  // With `only`: every pass's open incidents on stderr, one line each (to
  // see when and why a run paged or did not).
  bool trace = false;
};

// Prints the tables to stdout; returns 0, or 1 when a --require-* bar is
// missed (or a clean or trap run paged while a bar is set).
int runSweep(const SweepOptions& options);

}  // namespace netdiag::bench
