#include "drain/context.h"

namespace netdiag::drain {

using topology::LinkId;
using topology::Topology;

const char* outReasonName(OutReason why) {
  switch (why) {
    case OutReason::kReportedDown:
      return "reported_down";
    case OutReason::kGiven:
      return "given";
    case OutReason::kDrained:
      return "drained";
  }
  return "?";
}

// A link_down incident is localized from the port counters (oper down at
// either end): the link carries nothing. A flapping link still carries
// traffic between flaps, so draining a sibling must still count it.
bool takesLinkOut(analyzer::IncidentKind kind, bool localized, bool resolved) {
  return kind == analyzer::IncidentKind::kLinkDown && localized && !resolved;
}

Context::Context(const Topology& topo) : topo_(&topo) {}

Context Context::fromIncidents(const Topology& topo,
                               const std::vector<analyzer::Incident>& incidents) {
  Context c(topo);
  for (const analyzer::Incident& i : incidents) {
    if (i.link == topology::kNone) continue;
    if (takesLinkOut(i.kind, i.localized_at.has_value(), i.resolved_at.has_value())) {
      c.takeOut(Topology::linkOf(i.link), OutReason::kReportedDown);
    }
  }
  return c;
}

void Context::takeOut(LinkId link, OutReason why) {
  if (out_.emplace(link, why).second && router_) router_->setLinkDown(link, true);
}

topology::DrainPlan Context::plan(LinkId link) const {
  if (!router_) {
    router_ = std::make_unique<topology::Router>(*topo_);
    for (const auto& [l, why] : out_) router_->setLinkDown(l, true);
  }
  return topology::planDrain(*router_, link);
}

namespace {
std::string linkName(const Topology& topo, LinkId l) {
  return topo.portRef(topo.link(l).a) + "<->" + topo.portRef(topo.link(l).b);
}
}  // namespace

nlohmann::json Context::planJson(const topology::DrainPlan& plan) const {
  const Topology& topo = *topo_;
  nlohmann::json hosts = nlohmann::json::array();
  for (topology::NodeId h : plan.stranded_hosts) hosts.push_back(topo.node(h).name);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [l, why] : out_) {
    if (l != plan.link) out.push_back({{"link", linkName(topo, l)}, {"why", outReasonName(why)}});
  }
  return {{"link", linkName(topo, plan.link)},    {"safe", plan.safe},
          {"already_down", plan.already_down},    {"lower", topo.node(plan.lower).name},
          {"upper", topo.node(plan.upper).name},  {"lower_tier", plan.lower_tier},
          {"upper_tier", plan.upper_tier},        {"ecmp_width_before", plan.width_before},
          {"ecmp_width_after", plan.width_after}, {"stranded_hosts", std::move(hosts)},
          {"out_of_service", std::move(out)},     {"summary", plan.summary}};
}

}  // namespace netdiag::drain
