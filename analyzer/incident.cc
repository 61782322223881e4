#include "analyzer/incident.h"

#include <array>
#include <utility>

namespace netdiag::analyzer {

using nlohmann::json;

namespace {

constexpr std::array<std::pair<IncidentKind, const char*>, 10> kNames = {{
    {IncidentKind::kUnknown, "unknown"},
    {IncidentKind::kLinkLoss, "link_loss"},
    {IncidentKind::kLinkCorruption, "link_corruption"},
    {IncidentKind::kLinkDown, "link_down"},
    {IncidentKind::kLinkFlap, "link_flap"},
    {IncidentKind::kLinkLatency, "link_latency"},
    {IncidentKind::kLinkBlackhole, "link_blackhole"},
    {IncidentKind::kCongestion, "congestion"},
    {IncidentKind::kHostUnreachable, "host_unreachable"},
    {IncidentKind::kMiscabling, "miscabling"},
}};

void putIf(json& j, const char* key, const std::optional<double>& v) {
  if (v) j[key] = *v;
}
void putIf(json& j, const char* key, const std::string& v) {
  if (!v.empty()) j[key] = v;
}
std::optional<double> number(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? std::optional(it->get<double>()) : std::nullopt;
}
std::string text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The keys evidenceToJson writes itself; anything else numeric is a figure.
constexpr const char* kOwnKeys[] = {"method",
                                    "summary",
                                    "probes",
                                    "lost",
                                    "lossy_flow_windows",
                                    "background_loss",
                                    "llr_nats",
                                    "counters",
                                    "carrier_changes",
                                    "ruled_out",
                                    "added_latency_us",
                                    "z",
                                    "records",
                                    "ports",
                                    "host"};

}  // namespace

const char* kindName(IncidentKind kind) {
  for (auto [k, name] : kNames) {
    if (k == kind) return name;
  }
  return "unknown";
}

IncidentKind parseKind(std::string_view name) {
  for (auto [k, n] : kNames) {
    if (name == n) return k;
  }
  return IncidentKind::kUnknown;
}

bool isLinkKind(IncidentKind kind) {
  switch (kind) {
    case IncidentKind::kLinkLoss:
    case IncidentKind::kLinkCorruption:
    case IncidentKind::kLinkDown:
    case IncidentKind::kLinkFlap:
    case IncidentKind::kLinkLatency:
    case IncidentKind::kLinkBlackhole:
      return true;
    default:
      return false;
  }
}

json evidenceToJson(const Evidence& e) {
  json j = json::object();
  putIf(j, "method", e.method);
  putIf(j, "summary", e.summary);
  putIf(j, "probes", e.probes);
  putIf(j, "lost", e.lost);
  putIf(j, "lossy_flow_windows", e.lossy_flow_windows);
  putIf(j, "background_loss", e.background_loss);
  putIf(j, "llr_nats", e.llr_nats);
  if (!e.counters.empty()) {
    json c = json::object();
    for (const auto& [name, v] : e.counters) c[name] = v;
    j["counters"] = c;
  }
  putIf(j, "carrier_changes", e.carrier_changes);
  if (e.ruled_out) {
    j["ruled_out"] = {{"hypothesis", e.ruled_out->hypothesis},
                      {"llr_nats", e.ruled_out->llr_nats},
                      {"why", e.ruled_out->why}};
  }
  putIf(j, "added_latency_us", e.added_latency_us);
  putIf(j, "z", e.z);
  putIf(j, "records", e.records);
  if (!e.ports.empty()) {
    json ports = json::array();
    for (const auto& p : e.ports) {
      ports.push_back({{"port", p.port},
                       {"lldp_neighbor", p.lldp_neighbor},
                       {"topology_peer", p.topology_peer}});
    }
    j["ports"] = ports;
  }
  putIf(j, "host", e.host);
  for (const auto& [name, v] : e.figures) j[name] = v;
  return j;
}

Evidence evidenceFromJson(const json& j) {
  Evidence e;
  if (!j.is_object()) return e;
  e.method = text(j, "method");
  e.summary = text(j, "summary");
  e.probes = number(j, "probes");
  e.lost = number(j, "lost");
  e.lossy_flow_windows = number(j, "lossy_flow_windows");
  e.background_loss = number(j, "background_loss");
  e.llr_nats = number(j, "llr_nats");
  if (auto it = j.find("counters"); it != j.end() && it->is_object()) {
    for (const auto& [name, v] : it->items()) {
      if (v.is_number()) e.counters[name] = v.get<double>();
    }
  }
  e.carrier_changes = number(j, "carrier_changes");
  if (auto it = j.find("ruled_out"); it != j.end() && it->is_object()) {
    e.ruled_out = Evidence::RuledOut{text(*it, "hypothesis"), number(*it, "llr_nats").value_or(0),
                                     text(*it, "why")};
  }
  e.added_latency_us = number(j, "added_latency_us");
  e.z = number(j, "z");
  e.records = number(j, "records");
  if (auto it = j.find("ports"); it != j.end() && it->is_array()) {
    for (const auto& p : *it) {
      if (p.is_object()) {
        e.ports.push_back({text(p, "port"), text(p, "lldp_neighbor"), text(p, "topology_peer")});
      }
    }
  }
  e.host = text(j, "host");
  for (const auto& [name, v] : j.items()) {
    bool own = false;
    for (const char* k : kOwnKeys) own = own || name == k;
    if (!own && v.is_number()) e.figures[name] = v.get<double>();
  }
  return e;
}

json candidatesToJson(const topology::Topology& topo, const std::vector<Suspect>& candidates) {
  json out = json::array();
  for (const Suspect& s : candidates) {
    if (s.link != topology::kNone) out.push_back({{"link", topo.dirLinkName(s.link)}});
    if (s.node != topology::kNone) out.push_back({{"node", topo.node(s.node).name}});
  }
  return out;
}

std::vector<Suspect> candidatesFromJson(const topology::Topology& topo, const json& j) {
  std::vector<Suspect> out;
  if (!j.is_array()) return out;
  for (const json& c : j) {
    if (!c.is_object()) continue;
    Suspect s;
    if (auto l = c.find("link"); l != c.end() && l->is_string()) {
      s.link = topo.findDirLink(l->get<std::string>()).value_or(topology::kNone);
    }
    if (auto n = c.find("node"); n != c.end() && n->is_string()) {
      s.node = topo.findNode(n->get<std::string>()).value_or(topology::kNone);
    }
    if (s.link != topology::kNone || s.node != topology::kNone) out.push_back(s);
  }
  return out;
}

json incidentToJson(const topology::Topology& topo, const Incident& i) {
  auto orNull = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json j = {{"id", i.id}, {"kind", kindName(i.kind)}};
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
  if (i.mitigated_at) j["mitigated_at"] = *i.mitigated_at;  // only once drained
  j["resolved_at"] = orNull(i.resolved_at);
  j["confidence"] = i.confidence;
  j["loss_ratio"] = i.loss_ratio;
  if (i.loss_interval) j["loss_interval"] = {i.loss_interval->first, i.loss_interval->second};
  j["evidence"] = evidenceToJson(i.evidence);
  if (!i.candidates.empty()) j["candidates"] = candidatesToJson(topo, i.candidates);
  return j;
}

std::optional<std::pair<double, double>> lossIntervalFromJson(const json& incident) {
  auto it = incident.find("loss_interval");
  if (it == incident.end() || !it->is_array() || it->size() != 2) return std::nullopt;
  const json &lo = (*it)[0], &hi = (*it)[1];
  if (!lo.is_number() || !hi.is_number()) return std::nullopt;
  const double a = lo.get<double>(), b = hi.get<double>();
  if (!(a >= 0 && a <= b && b <= 1)) return std::nullopt;
  return std::pair{a, b};
}

json reportToJson(const topology::Topology& topo, const Report& report) {
  json incidents = json::array();
  for (const Incident& i : report.incidents) incidents.push_back(incidentToJson(topo, i));
  return {{"generated_at", report.generated_at}, {"incidents", incidents}};
}

}  // namespace netdiag::analyzer
