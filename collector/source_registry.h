#pragma once

// Sources by name: each source registers a factory once, and the process
// hosting them (the agent; later `netdiag poll snmp`) creates the ones it
// runs. `Context` is what that host hands its factories (the agent's is
// AgentSourceContext, collector/agent_sources.h). Registration is explicit,
// one line per source, not static initialisers: a static library drops
// objects nothing references.
//
// Thread-safety: fill it, then read it from any thread.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collector/source.h"

namespace netdiag::collector {

template <typename Context>
class SourceRegistry {
 public:
  // A source, or nullptr with *error saying why (bad configuration).
  using Factory = std::function<std::unique_ptr<Source>(const Context&, std::string* error)>;

  // false when `name` is taken (two sources would share metrics labels).
  bool add(std::string name, Factory factory) {
    if (find(name) != nullptr) return false;
    entries_.emplace_back(std::move(name), std::move(factory));
    return true;
  }
  const Factory* find(const std::string& name) const {
    for (const auto& [n, f] : entries_) {
      if (n == name) return &f;
    }
    return nullptr;
  }
  // In registration order, which is the order the host runs them in.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : entries_) out.push_back(e.first);
    return out;
  }

 private:
  std::vector<std::pair<std::string, Factory>> entries_;
};

}  // namespace netdiag::collector
