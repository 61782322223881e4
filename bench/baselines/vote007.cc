#include "bench/baselines/vote007.h"

#include <algorithm>
#include <unordered_set>

namespace netdiag::baselines {

Vote007::Vote007(const topology::Topology& topo, Vote007Config config)
    : WindowedLocalizer(topo, config.window, "007"), cfg_(config) {}

void Vote007::decide(std::span<const Observation> window, std::vector<Blame>& out) {
  std::vector<const Observation*> lossy;
  for (const Observation& o : window) {
    if (o.lost > 0 && !o.links.empty()) lossy.push_back(&o);
  }
  if (lossy.empty()) return;
  std::vector<LinkLoad> loads = linkLoads(window);

  std::vector<double> votes(topo_.dirLinkCount(), 0.0);
  std::vector<bool> removed(lossy.size(), false);
  std::vector<DirLinkId> touched;
  for (int round = 0; round < cfg_.max_blamed_per_pass; ++round) {
    for (DirLinkId d : touched) votes[d] = 0;
    touched.clear();
    double total = 0;
    for (size_t i = 0; i < lossy.size(); ++i) {
      if (removed[i]) continue;
      const double v = 1.0 / static_cast<double>(lossy[i]->links.size());
      for (DirLinkId d : lossy[i]->links) {
        if (votes[d] == 0) touched.push_back(d);
        votes[d] += v;
        total += v;
      }
    }
    if (touched.empty()) break;
    // Most votes; ties to the lowest id so runs are reproducible.
    std::sort(touched.begin(), touched.end());
    DirLinkId best = touched.front();
    for (DirLinkId d : touched) {
      if (votes[d] > votes[best]) best = d;
    }
    if (votes[best] < cfg_.vote_share * total) break;
    std::unordered_set<uint64_t> flows;
    size_t records = 0;
    for (size_t i = 0; i < lossy.size(); ++i) {
      if (removed[i]) continue;
      const auto& l = lossy[i]->links;
      if (std::find(l.begin(), l.end(), best) == l.end()) continue;
      flows.insert(lossy[i]->flow_key);
      ++records;
    }
    if (flows.size() < static_cast<size_t>(cfg_.min_flows)) break;

    Blame b;
    b.link = best;
    b.confidence = votes[best] / total;
    b.loss_ratio = loads[best].ratio();
    b.evidence = {{"votes", votes[best]},
                  {"total_votes", total},
                  {"lossy_flows", flows.size()},
                  {"lossy_records", records},
                  {"probes_sent", loads[best].sent},
                  {"probes_lost", loads[best].lost}};
    out.push_back(std::move(b));
    for (size_t i = 0; i < lossy.size(); ++i) {
      const auto& l = lossy[i]->links;
      if (std::find(l.begin(), l.end(), best) != l.end()) removed[i] = true;
    }
  }
}

}  // namespace netdiag::baselines
