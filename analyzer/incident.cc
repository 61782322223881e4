#include "analyzer/incident.h"

namespace netdiag::analyzer {

nlohmann::json incidentToJson(const topology::Topology& topo, const Incident& i) {
  using nlohmann::json;
  auto orNull = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json j = {{"id", i.id}, {"kind", i.kind}};
  if (i.link != topology::kNone) j["link"] = topo.dirLinkName(i.link);
  if (i.both_directions) j["both_directions"] = true;
  if (i.node != topology::kNone) j["node"] = topo.node(i.node).name;
  if (!i.ports.empty()) {
    json ports = json::array();
    for (PortId p : i.ports) ports.push_back(topo.portRef(p));
    j["ports"] = ports;
  }
  j["opened_at"] = i.opened_at;
  j["localized_at"] = orNull(i.localized_at);
  j["resolved_at"] = orNull(i.resolved_at);
  j["confidence"] = i.confidence;
  j["loss_ratio"] = i.loss_ratio;
  j["evidence"] = i.evidence;
  return j;
}

nlohmann::json reportToJson(const topology::Topology& topo, const Report& report) {
  nlohmann::json incidents = nlohmann::json::array();
  for (const Incident& i : report.incidents) incidents.push_back(incidentToJson(topo, i));
  return {{"generated_at", report.generated_at}, {"incidents", incidents}};
}

}  // namespace netdiag::analyzer
