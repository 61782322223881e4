#include "bench/localizers.h"

#include "analyzer/engine.h"
#include "bench/baselines/boolean_tomography.h"
#include "bench/baselines/netbouncer.h"
#include "bench/baselines/vote007.h"

namespace netdiag::bench {
namespace {

template <typename T>
Localizer wrap(const std::string& name, std::unique_ptr<T> baseline) {
  auto* raw = baseline.get();
  return {name, std::move(baseline), [raw] { return raw->report(); }};
}

}  // namespace

std::vector<Localizer> makeLocalizers(const topology::Topology& topo,
                                      const std::vector<std::string>& names) {
  std::vector<Localizer> out;
  for (const std::string& name : names) {
    if (name == "netdiag") {
      auto engine = std::make_unique<analyzer::Engine>(topo);
      auto* raw = engine.get();
      out.push_back({name, std::move(engine), [raw] { return raw->report(); }});
    } else if (name == "007") {
      out.push_back(wrap(name, std::make_unique<baselines::Vote007>(topo)));
    } else if (name == "boolean") {
      out.push_back(wrap(name, std::make_unique<baselines::BooleanTomography>(topo)));
    } else if (name == "netbouncer") {
      out.push_back(wrap(name, std::make_unique<baselines::NetBouncerFit>(topo)));
    }
  }
  return out;
}

}  // namespace netdiag::bench
