#include "cli/plan_sizing.h"

#include <sstream>

#include "cli/output.h"

namespace netdiag::cli {
namespace {

std::string rate(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

std::vector<std::string> sizingLines(const planner::Sizing& s, const std::string& cap_flag) {
  std::vector<std::string> lines;
  const std::string per_port = " probes/s per host port";
  if (s.below_at_base == 0) {
    lines.push_back("coverage target met on all " + withCommas(s.links) + " directed links at " +
                    rate(s.base_probes_per_second) + per_port);
    return lines;
  }
  std::string l = "coverage target missed on " + withCommas(s.below_at_base) + " of " +
                  withCommas(s.links) + " directed links at " + rate(s.base_probes_per_second) +
                  per_port;
  if (s.needed_probes_per_second > s.base_probes_per_second) {
    l += "; the probe target needs " + rate(s.needed_probes_per_second);
    if (s.raised()) {
      l += ": serving " + rate(s.served_probes_per_second) + per_port;
      l += s.capped() ? ", the cap (" + cap_flag + ")"
                      : " (cap " + rate(s.cap_probes_per_second) + ", " + cap_flag + ")";
    } else {
      l += ", not raised: the cap (" + cap_flag + " " + rate(s.cap_probes_per_second) +
           ") is not above the rate";
    }
  }
  lines.push_back(l);
  if (s.short_of_flows > 0) {
    lines.push_back(withCommas(s.short_of_flows) +
                    " directed links expect too few distinct flows, which no rate fixes: raise "
                    "--flows-per-peer or --peers (0 derives them from the fabric)");
  }
  if (s.below > 0) {
    lines.push_back(withCommas(s.below) + " of " + withCommas(s.links) +
                    " directed links stay below the coverage target at " +
                    rate(s.served_probes_per_second) + per_port);
  } else {
    lines.push_back("coverage target met on all " + withCommas(s.links) + " directed links at " +
                    rate(s.served_probes_per_second) + per_port);
  }
  return lines;
}

}  // namespace netdiag::cli
