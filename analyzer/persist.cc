#include "analyzer/persist.h"

namespace netdiag::analyzer {

store::IncidentRow toRow(const topology::Topology& topo, const Incident& i, double updated_at) {
  store::IncidentRow row;
  nlohmann::json j = incidentToJson(topo, i);
  row.id = i.id;
  row.kind = kindName(i.kind);
  if (j.contains("link")) row.link = j["link"].get<std::string>();
  if (j.contains("node")) row.node = j["node"].get<std::string>();
  if (j.contains("ports")) row.ports = j["ports"].dump();
  row.opened_at = i.opened_at;
  row.localized_at = i.localized_at;
  row.resolved_at = i.resolved_at;
  row.confidence = i.confidence;
  row.loss_ratio = i.loss_ratio;
  row.both_directions = i.both_directions;
  row.report_json = j.dump();
  row.updated_at = updated_at;
  return row;
}

std::vector<Incident> fromRows(const topology::Topology& topo,
                               const std::vector<store::IncidentRow>& rows,
                               std::vector<std::string>& problems) {
  std::vector<Incident> out;
  for (const store::IncidentRow& row : rows) {
    Incident i;
    i.id = row.id;
    i.kind = parseKind(row.kind);
    i.opened_at = row.opened_at;
    i.localized_at = row.localized_at;
    i.resolved_at = row.resolved_at;
    i.confidence = row.confidence.value_or(0);
    i.loss_ratio = row.loss_ratio.value_or(0);
    i.both_directions = row.both_directions;
    bool ok = true;
    if (row.link) {
      auto d = topo.findDirLink(*row.link);
      ok = ok && d.has_value();
      if (d) i.link = *d;
    }
    if (row.node) {
      auto n = topo.findNode(*row.node);
      ok = ok && n.has_value();
      if (n) i.node = *n;
    }
    auto json = nlohmann::json::parse(row.report_json, nullptr, false);
    if (json.is_discarded()) {
      ok = false;
    } else {
      if (json.contains("evidence")) i.evidence = evidenceFromJson(json["evidence"]);
      if (json.contains("candidates")) i.candidates = candidatesFromJson(topo, json["candidates"]);
      i.loss_interval = lossIntervalFromJson(json);
      if (json.contains("mitigated_at") && json["mitigated_at"].is_number()) {
        i.mitigated_at = json["mitigated_at"].get<double>();
      }
      if (json.contains("ports") && json["ports"].is_array()) {
        for (const auto& p : json["ports"]) {
          auto port = p.is_string() ? topo.findPort(p.get<std::string>()) : std::nullopt;
          ok = ok && port.has_value();
          if (port) i.ports.push_back(*port);
        }
      }
    }
    if (!ok) {
      problems.push_back("incident " + row.id + " names something the topology lacks; skipped");
      continue;
    }
    out.push_back(std::move(i));
  }
  return out;
}

}  // namespace netdiag::analyzer
