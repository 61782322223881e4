#include "bench/baselines/boolean_tomography.h"

#include <algorithm>

namespace netdiag::baselines {

BooleanTomography::BooleanTomography(const topology::Topology& topo, BooleanTomographyConfig config)
    : WindowedLocalizer(topo, config.window, "boolean_tomography"), cfg_(config) {
  cfg_.bad_min_loss_ratio = std::max(cfg_.bad_min_loss_ratio, cfg_.good_max_loss_ratio);
}

void BooleanTomography::decide(std::span<const Observation> window, std::vector<Blame>& out) {
  std::vector<PathStat> paths = aggregateByPath(window);
  std::vector<uint32_t> good_on(topo_.dirLinkCount(), 0);
  std::vector<const PathStat*> bad;
  for (const PathStat& p : paths) {
    if (p.sent == 0 || p.links->empty()) continue;
    const double ratio = p.lossRatio();
    if (ratio <= cfg_.good_max_loss_ratio) {
      for (DirLinkId d : *p.links) ++good_on[d];
    } else if (ratio > cfg_.bad_min_loss_ratio) {
      bad.push_back(&p);
    }
  }
  if (bad.empty()) return;
  const auto exonerated = [&](DirLinkId d) {
    return good_on[d] >= static_cast<uint32_t>(cfg_.exonerate_min_good_paths);
  };

  std::vector<bool> covered(bad.size(), false);
  std::vector<uint32_t> cover(topo_.dirLinkCount(), 0);
  std::vector<DirLinkId> touched;
  for (int round = 0; round < cfg_.max_blamed_per_pass; ++round) {
    for (DirLinkId d : touched) cover[d] = 0;
    touched.clear();
    for (size_t i = 0; i < bad.size(); ++i) {
      if (covered[i]) continue;
      for (DirLinkId d : *bad[i]->links) {
        if (exonerated(d)) continue;
        if (cover[d] == 0) touched.push_back(d);
        ++cover[d];
      }
    }
    if (touched.empty()) break;
    std::sort(touched.begin(), touched.end());
    DirLinkId best = touched.front();
    for (DirLinkId d : touched) {
      if (cover[d] > cover[best]) best = d;
    }
    if (cover[best] < static_cast<uint32_t>(cfg_.min_bad_paths)) break;
    uint64_t sent = 0, lost = 0;
    for (size_t i = 0; i < bad.size(); ++i) {
      if (covered[i]) continue;
      const auto& l = *bad[i]->links;
      if (std::find(l.begin(), l.end(), best) == l.end()) continue;
      covered[i] = true;
      sent += bad[i]->sent;
      lost += bad[i]->lost;
    }
    Blame b;
    b.link = best;
    b.confidence = static_cast<double>(cover[best]) / static_cast<double>(bad.size());
    // Loss over the bad paths it explains: an upper estimate (good paths
    // through it, when exoneration needs more than one, are left out).
    b.loss_ratio = sent == 0 ? 0.0 : static_cast<double>(lost) / static_cast<double>(sent);
    b.evidence = {{"bad_paths_explained", cover[best]},
                  {"bad_paths", bad.size()},
                  {"good_paths_through", good_on[best]},
                  {"paths", paths.size()},
                  {"probes_sent", sent},
                  {"probes_lost", lost}};
    out.push_back(std::move(b));
  }
}

}  // namespace netdiag::baselines
