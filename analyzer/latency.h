#pragma once

// Latency-only degradation: a directed link that adds delay without losing
// probes. Each record's median RTT is compared with the running median RTT
// of records whose paths have the same number of hops; the excess is
// credited to every link the record certainly crossed. A slow link lifts the
// excess of all its flows; explaining away (as for loss) removes the slow
// records of an accepted link from its neighbours' evidence. A busy host's
// stack lifts every flow of its own alike, on all its ports: a host is an
// explanation too, and the flow between two busy hosts carries both.

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "analyzer/evidence.h"
#include "topology/model.h"

namespace netdiag::analyzer {

struct SlowLink {
  DirLinkId link = topology::kNone;
  // Or a host whose own flows are all slow (its stack answering late): an
  // explanation, never an incident of its own.
  NodeId host = topology::kNone;
  double added_us = 0;  // mean excess RTT of flows crossing it
  double z = 0;         // standard scores of that mean
  double records = 0;
};

class LatencyEvidence {
 public:
  LatencyEvidence(size_t dir_links, size_t buckets, double width_s);

  // A record's p50 RTT over `hops` hops (forward + reverse), crossing
  // `links` for certain, and its return over the unseen stretch `back`.
  void add(double t, double rtt_us, size_t hops, const std::vector<DirLinkId>& links, Middle back);
  void advanceTo(double now, double horizon_s);

  // Links whose flows are slower than their peers by at least `min_added_us`
  // and `min_z` standard scores, and hosts whose own flows are slower by
  // `min_z`, strongest first, after explaining away: an accepted link takes
  // out the slow records that crossed it, or may have on their unseen
  // return (`share` > 0 there); an accepted host takes its mean excess out
  // of each slow record of its own.
  using ShareFn = std::function<double(NodeId from, NodeId to, DirLinkId d)>;
  std::vector<SlowLink> slowLinks(double min_added_us, double min_z, const ShareFn& share,
                                  const topology::Topology& topo) const;
  // What the records that crossed `d` for certain carry, before explaining
  // away: n = records, k = their summed excess (us).
  Tally excessOf(DirLinkId d) const;
  // The spread of one record's excess (us): the scale of every z above.
  double sigma() const;

 private:
  struct Slow {
    double t, excess;
    std::vector<DirLinkId> links;
    Middle back;
  };
  BucketedTallies excess_;  // per link: n = records, k = sum of excess (fixed point, latency.cc)
  BucketedTallies spread_;  // key 0: n = records, k = sum of squared excess
  std::vector<double> median_by_hops_;
  std::deque<Slow> slow_;  // records well above their median, kept one by one
};

}  // namespace netdiag::analyzer
