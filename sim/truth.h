#pragma once

// The ground truth of a simulated run (`netdiag simulate --truth FILE`):
// every fault and trap with its kind, what it affects, onset and end. The
// scorer (formats.md §4) reads it back, so it is plain JSON:
//
// {"seed": 1, "ecmp_seed": 99, "fabric": "rail", "start": 0.0, "end": 600.0,
//  "faults": [{"id": "f1", "kind": "link_loss", "link": "X:p->Y:q",
//              "onset": 120.0, "end": 480.0, "loss": 0.01}],
//  "traps":  [{"id": "t1", "kind": "congestion", "link": "X:p->Y:q", "onset": .., "end": ..},
//             {"id": "t2", "kind": "host_unreachable", "node": "h3", "cause": "reboot", ...},
//             {"id": "t3", "kind": "miscabling", "ports": ["a:p", "b:q"], ...}]}
//
// Fault kinds: link_loss, link_corruption, link_down, link_flap,
// link_blackhole (partial), link_latency. Trap kinds: congestion,
// host_unreachable (cause "dead_responder" or "reboot"), miscabling.
// `end` is null for a fault that lasts past the end of the run.

#include <optional>
#include <string>
#include <vector>

namespace netdiag::sim {

struct TruthItem {
  std::string id;
  std::string kind;
  std::string link;                // directed link "X:p->Y:q" (faults, congestion)
  std::string node;                // host_unreachable
  std::vector<std::string> ports;  // miscabling
  std::string cause;               // host_unreachable: dead_responder | reboot
  double onset = 0;
  std::optional<double> end;
  double loss = 0;        // configured loss ratio, when it has one
  double latency_us = 0;  // link_latency
  std::string note;       // free text, e.g. the selector that chose the link

  bool isLinkFault() const { return kind.rfind("link_", 0) == 0; }
};

struct Truth {
  uint64_t seed = 0;
  uint64_t ecmp_seed = 0;
  std::string fabric;
  double start = 0;
  double end = 0;
  std::vector<TruthItem> faults;
  std::vector<TruthItem> traps;
};

std::string truthToJson(const Truth& truth);
// Parses a truth file's text; on failure returns nullopt and sets `error`.
std::optional<Truth> truthFromJson(const std::string& text, std::string& error);

}  // namespace netdiag::sim
