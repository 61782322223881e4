#include "bench/baselines/netbouncer.h"

#include <algorithm>
#include <cmath>

namespace netdiag::baselines {

NetBouncerFit::NetBouncerFit(const topology::Topology& topo, NetBouncerConfig config)
    : WindowedLocalizer(topo, config.window, "netbouncer"), cfg_(config) {}

void NetBouncerFit::decide(std::span<const Observation> window, std::vector<Blame>& out) {
  std::vector<PathStat> stats = aggregateByPath(window);
  // Dense local ids for the links on the window's paths, in DirLinkId order.
  std::vector<uint32_t> local(topo_.dirLinkCount(), topology::kNone);
  std::vector<DirLinkId> links;
  struct Path {
    std::vector<uint32_t> links;  // local ids
    double y = 1;
    uint64_t sent = 0, lost = 0;
  };
  std::vector<Path> paths;
  bool any_loss = false;
  for (const PathStat& s : stats) {
    if (s.sent < std::max<uint64_t>(cfg_.min_path_probes, 1) || s.links->empty()) continue;
    for (DirLinkId d : *s.links) {
      if (local[d] == topology::kNone) {
        local[d] = 0;
        links.push_back(d);
      }
    }
    any_loss = any_loss || s.lost > 0;
  }
  if (!any_loss) return;  // every x_l = 1 is the exact optimum
  std::sort(links.begin(), links.end());
  for (uint32_t i = 0; i < links.size(); ++i) local[links[i]] = i;
  std::vector<std::vector<uint32_t>> paths_of(links.size());
  for (const PathStat& s : stats) {
    if (s.sent < std::max<uint64_t>(cfg_.min_path_probes, 1) || s.links->empty()) continue;
    Path p;
    p.sent = s.sent;
    p.lost = s.lost;
    p.y = 1.0 - s.lossRatio();
    for (DirLinkId d : *s.links) p.links.push_back(local[d]);
    for (uint32_t l : p.links) paths_of[l].push_back(static_cast<uint32_t>(paths.size()));
    paths.push_back(std::move(p));
  }

  const double lambda = cfg_.lambda;
  std::vector<double> x(links.size(), 1.0);
  int sweeps = 0;
  for (; sweeps < cfg_.max_iterations; ++sweeps) {
    double moved = 0;
    for (uint32_t l = 0; l < links.size(); ++l) {
      double s1 = 0, s2 = 0;
      for (uint32_t pi : paths_of[l]) {
        const Path& p = paths[pi];
        double t = 1;
        bool self_seen = false;
        for (uint32_t k : p.links) {
          // A path may cross a link twice only in a round trip; count the
          // variable once and keep the other factor.
          if (k == l && !self_seen) {
            self_seen = true;
            continue;
          }
          t *= x[k];
        }
        s1 += t * p.y;
        s2 += t * t;
      }
      const double a = s2 - lambda;
      double v;
      if (a > 0) {
        v = std::clamp((2 * s1 - lambda) / (2 * a), 0.0, 1.0);
      } else {
        // Concave (or linear): the minimum is at an endpoint; f(0) = 0 and
        // f(1) = a - (2 s1 - lambda) = s2 - 2 s1.
        v = s2 - 2 * s1 < 0 ? 1.0 : 0.0;
      }
      moved = std::max(moved, std::abs(v - x[l]));
      x[l] = v;
    }
    if (moved <= cfg_.tolerance) {
      ++sweeps;
      break;
    }
  }

  for (uint32_t l = 0; l < links.size(); ++l) {
    const double loss = 1.0 - x[l];
    if (loss <= cfg_.fail_threshold) continue;
    uint64_t sent = 0, lost = 0;
    double observed = 0, residual = 0;
    for (uint32_t pi : paths_of[l]) {
      const Path& p = paths[pi];
      sent += p.sent;
      lost += p.lost;
      double fit = 1;
      for (uint32_t k : p.links) fit *= x[k];
      observed += 1.0 - p.y;
      residual += std::abs(fit - p.y);
    }
    Blame b;
    b.link = links[l];
    b.loss_ratio = loss;
    b.confidence = observed > 0 ? std::clamp(1.0 - residual / observed, 0.0, 1.0) : 0.0;
    b.evidence = {{"success_rate", x[l]},  {"paths_through", paths_of[l].size()},
                  {"paths", paths.size()}, {"links_fitted", links.size()},
                  {"sweeps", sweeps},      {"probes_sent", sent},
                  {"probes_lost", lost}};
    out.push_back(std::move(b));
  }
}

}  // namespace netdiag::baselines
