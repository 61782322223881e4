#include "analyzer/unsettled.h"

#include <algorithm>

namespace netdiag::analyzer {

std::vector<DirLinkId> unsettledLinks(const std::vector<Incident>& incidents, size_t max_links) {
  std::vector<const Incident*> open;
  for (const Incident& i : incidents) {
    if (i.resolved_at || i.localized_at) continue;
    if (!i.isLinkFault() && i.candidates.empty()) continue;
    open.push_back(&i);
  }
  std::stable_sort(open.begin(), open.end(), [](const Incident* a, const Incident* b) {
    return a->confidence > b->confidence;
  });
  std::vector<DirLinkId> out;
  auto add = [&](DirLinkId d, bool both) {
    for (DirLinkId x : {d, both ? topology::Topology::reverse(d) : topology::kNone}) {
      if (x == topology::kNone || out.size() >= max_links) continue;
      if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
    }
  };
  for (const Incident* i : open) {
    if (i->link != topology::kNone) add(i->link, i->both_directions);
    for (const Suspect& s : i->candidates) {
      if (s.link != topology::kNone) add(s.link, i->both_directions);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace netdiag::analyzer
