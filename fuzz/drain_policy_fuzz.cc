// Drain policy files (`netdiag analyzer --drain-policy-file`, YAML) from
// untrusted bytes: the parser names the line and key of what it rejects,
// never crashes, and what it accepts is within the bounds it documents.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "drain/policy_file.h"

namespace {

void check(const netdiag::drain::Policy& p) {
  if (!(p.min_confidence >= 0.5 && p.min_confidence <= 1)) std::abort();
  if (!(p.min_width_share >= 0 && p.min_width_share <= 1)) std::abort();
  if (p.hold_passes < 0 || p.max_drained_per_scope < 0 || p.max_drains_per_hour < 0 ||
      p.max_open_incidents < 0) {
    std::abort();
  }
  if (!(p.restore_clean_s >= 0 && p.restore_clean_s <= 3600)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  auto p = netdiag::drain::parsePolicy(std::string(reinterpret_cast<const char*>(data), size),
                                       "fuzz", &error);
  if (!p) {
    if (error.rfind("fuzz:", 0) != 0) std::abort();  // every error names the file and line
    return 0;
  }
  check(p->all);
  for (const auto& [scope, sp] : p->scopes) {
    if (scope.empty()) std::abort();
    check(sp);
    (void)p->of(scope);
  }
  (void)p->acts();
  return 0;
}
