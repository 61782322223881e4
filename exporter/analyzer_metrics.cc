#include "exporter/analyzer_metrics.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include "analyzer/incident.h"
#include "drain/context.h"
#include "topology/drain.h"
#include "topology/ecmp.h"

namespace netdiag::exporter {
namespace {

using prometheus::Labels;
using topology::DirLinkId;
using topology::Topology;

// The kinds a fresh analyzer reports as zero, so that alert expressions and
// dashboards find their series before the first incident.
const std::vector<std::string> kKinds = [] {
  using K = analyzer::IncidentKind;
  std::vector<std::string> out;
  for (K k : {K::kLinkLoss, K::kLinkCorruption, K::kLinkDown, K::kLinkFlap, K::kLinkLatency,
              K::kLinkBlackhole, K::kCongestion, K::kHostUnreachable, K::kMiscabling}) {
    out.push_back(analyzer::kindName(k));
  }
  return out;
}();

// One gauge family whose series are rebuilt on every update: set() marks a
// series as present, sweep() removes those not set since the last sweep (an
// incident that resolved, a link that left the top N, an agent that left).
class GaugeSet {
 public:
  GaugeSet(prometheus::Registry& registry, const std::string& name, const std::string& help)
      : family_(prometheus::BuildGauge().Name(name).Help(help).Register(registry)) {}

  void set(const Labels& labels, double value) {
    auto& g = family_.Add(labels);
    g.Set(value);
    live_[labels] = &g;
    marked_.insert(&g);
  }

  prometheus::Family<prometheus::Gauge>& family() { return family_; }

  void sweep() {
    for (auto it = live_.begin(); it != live_.end();) {
      if (marked_.contains(it->second)) {
        ++it;
      } else {
        family_.Remove(it->second);
        it = live_.erase(it);
      }
    }
    marked_.clear();
  }

 private:
  prometheus::Family<prometheus::Gauge>& family_;
  std::map<Labels, prometheus::Gauge*> live_;
  std::unordered_set<prometheus::Gauge*> marked_;
};

// A counter fed from a cumulative count kept elsewhere: adds the increase
// since the last update (a smaller value means the source restarted; the
// counter then grows by the new value, as Prometheus' rate() expects).
class CounterFrom {
 public:
  explicit CounterFrom(prometheus::Counter& counter) : counter_(counter) {}
  void advance(uint64_t cumulative) {
    uint64_t delta = cumulative >= last_ ? cumulative - last_ : cumulative;
    if (delta) counter_.Increment(static_cast<double>(delta));
    last_ = cumulative;
  }

 private:
  prometheus::Counter& counter_;
  uint64_t last_ = 0;
};

// Time buckets (seconds) for detection and localization delays: the
// analyzer decides every few seconds and pages within minutes.
const prometheus::Histogram::BucketBoundaries kDelayBuckets = {1,  2.5, 5,  10,  15,  20,  30,
                                                               45, 60,  90, 120, 180, 300, 600};

}  // namespace

struct AnalyzerMetrics::Impl {
  const Topology& topo;
  MetricsOptions options;
  std::shared_ptr<prometheus::Registry> registry;

  // Link faults and suspects (one series per open incident).
  // (candidate: the members of ambiguity groups)
  GaugeSet link_fault, link_fault_mitigated, suspect_loss, suspect_confidence, candidate,
      host_unreachable, miscabled_port;
  GaugeSet drain_safe, drain_width, drain_width_left, drain_info;
  // Degraded links: top N by excess loss over the background.
  GaugeSet degraded_loss, degraded_excess, degraded_probes;
  // Incidents.
  prometheus::Family<prometheus::Gauge>& open_incidents;
  prometheus::Histogram& time_to_detect;
  prometheus::Histogram& time_to_localize;
  // Health by tier and pod: links per (tier, pod), and those with open incidents.
  prometheus::Family<prometheus::Gauge>& fabric_links;
  prometheus::Family<prometheus::Gauge>& fabric_links_affected;
  std::vector<Labels> link_group;  // per link: {tier, pod}
  std::set<Labels> groups;
  // Agents and coverage.
  prometheus::Family<prometheus::Gauge>&agent_last_seen, &agent_connected, &agent_batches,
      &agent_records;
  GaugeSet agent_rejected;  // through it only the "(unknown)" bucket
  // Each agent's series, found with one lookup an update and set directly:
  // through GaugeSet (a label-set lookup per series) 16k agents took about
  // a quarter of the engine thread. An agent gone from the list loses its
  // series.
  struct AgentSeries {
    prometheus::Gauge *last_seen, *connected, *batches, *records;
    prometheus::Gauge *malformed, *future, *not_authorized;
    uint64_t update = 0;  // the last update that listed the agent
  };
  std::unordered_map<std::string, AgentSeries> agent_series;
  uint64_t agent_update = 0;
  prometheus::Family<prometheus::Gauge>& agents;
  prometheus::Gauge& dirlinks;
  prometheus::Gauge& dirlinks_covered;
  prometheus::Gauge& coverage_ratio;
  prometheus::Gauge& coverage_min_probes;
  // Ingest.
  prometheus::Family<prometheus::Counter>& records;
  CounterFrom batches, duplicates, probes, ports, lldp, malformed, future, not_authorized,
      port_id_mismatch, late, too_late, passes;
  // The analyzer itself.
  prometheus::Counter& pass_seconds;
  double pass_seconds_seen = 0;
  prometheus::Gauge& last_pass_seconds;
  prometheus::Gauge& last_pass_started;
  prometheus::Histogram& pass_duration;
  decltype(analyzer::IngestStats::pass_buckets) pass_buckets_seen{};
  prometheus::Gauge& background_loss;
  prometheus::Gauge& telemetry_time;
  prometheus::Gauge& last_update;
  prometheus::Gauge& up;

  // Drain plans of the links with open incidents, made in `drain_context`:
  // a plan walks the fabric (every host's reach), so it is made again only
  // when its link is new or the links out of service changed, not every
  // update. Holds only the links of the last update's incidents.
  std::unordered_map<topology::LinkId, topology::DrainPlan> drain_plans;
  drain::Context drain_context;

  std::unordered_set<std::string> seen_open;       // ids whose opening we have seen
  std::unordered_set<std::string> seen_localized;  // ids whose localization we have seen
  bool first_update = true;

  Impl(std::shared_ptr<prometheus::Registry> reg, const Topology& t, MetricsOptions o)
      : topo(t),
        options(o),
        registry(std::move(reg)),
        link_fault(
            *registry, "netdiag_link_fault",
            "A localized link fault (open incident): 1 per incident, labeled with the "
            "directed link it names (device:interface -> neighbor_device:neighbor_interface)."),
        link_fault_mitigated(
            *registry, "netdiag_link_fault_mitigated",
            "A localized link fault netdiag's drain mitigated (its link drained, the loss "
            "gone): 1 per incident, labeled as netdiag_link_fault, which no longer counts it. "
            "The incident stays open until the link is restored and clean."),
        suspect_loss(*registry, "netdiag_suspect_link_loss_ratio",
                     "Estimated loss ratio of a link named by an open incident, localized or not."),
        suspect_confidence(
            *registry, "netdiag_suspect_link_confidence",
            "Posterior probability (0-1) that the open incident's link explains the evidence."),
        candidate(*registry, "netdiag_incident_candidate",
                  "A member of an open incident's ambiguity group (links or hosts the evidence "
                  "cannot yet tell apart; such an incident does not page): 1 per member, the "
                  "incident's best candidate included."),
        host_unreachable(
            *registry, "netdiag_host_unreachable",
            "A localized host_unreachable incident (dead host or responder): 1 per incident."),
        miscabled_port(
            *registry, "netdiag_miscabled_port",
            "A port whose LLDP neighbour disagrees with the topology (open miscabling incident)."),
        drain_safe(
            *registry, "netdiag_link_drain_safe",
            "For each link named by an open link incident: 1 if draining it leaves ECMP width and "
            "strands no host, else 0 (netdiag drain-plan)."),
        drain_width(
            *registry, "netdiag_link_drain_ecmp_width",
            "Up links from the link's lower-tier end to the tier above it, before a drain."),
        drain_width_left(
            *registry, "netdiag_link_drain_ecmp_width_remaining",
            "Up links from the link's lower-tier end to the tier above it, after draining it."),
        drain_info(
            *registry, "netdiag_link_drain_info",
            "Drain advice in words for each link named by an open link incident (label advice), "
            "for alert annotations; always 1."),
        degraded_loss(
            *registry, "netdiag_degraded_link_loss_ratio",
            "Probe loss ratio over the horizon of the top-N links by loss in excess of the "
            "background (probes of known path crossing the directed link)."),
        degraded_excess(
            *registry, "netdiag_degraded_link_excess_loss_ratio",
            "Loss ratio of a top-N degraded link minus the background loss ratio of its probes."),
        degraded_probes(
            *registry, "netdiag_degraded_link_probes",
            "Probes of known path that crossed a top-N degraded link over the horizon."),
        open_incidents(
            prometheus::BuildGauge()
                .Name("netdiag_open_incidents")
                .Help("Incidents not resolved, by kind and state (open: detected, not yet "
                      "localized; localized: named with enough confidence to page).")
                .Register(*registry)),
        time_to_detect(
            prometheus::BuildHistogram()
                .Name("netdiag_incident_detect_delay_seconds")
                .Help("Wall-clock time from an incident's opened_at (the telemetry time of "
                      "the first detection) to its first publication in these metrics.")
                .Register(*registry)
                .Add({}, kDelayBuckets)),
        time_to_localize(
            prometheus::BuildHistogram()
                .Name("netdiag_incident_localize_delay_seconds")
                .Help("Telemetry time from an incident's opened_at to its localized_at "
                      "(first detection to paging confidence).")
                .Register(*registry)
                .Add({}, kDelayBuckets)),
        fabric_links(
            prometheus::BuildGauge()
                .Name("netdiag_fabric_links")
                .Help("Links of the topology by tier (the roles they join, e.g. leaf-spine) and "
                      "pod (of the lower end; none when unset).")
                .Register(*registry)),
        fabric_links_affected(
            prometheus::BuildGauge()
                .Name("netdiag_fabric_links_affected")
                .Help("Links with an open link incident in either direction, by tier, "
                      "pod and state (localized, open).")
                .Register(*registry)),
        agent_last_seen(prometheus::BuildGauge()
                            .Name("netdiag_agent_last_seen_timestamp_seconds")
                            .Help("Unix time of the last batch received from the agent.")
                            .Register(*registry)),
        agent_connected(prometheus::BuildGauge()
                            .Name("netdiag_agent_connected")
                            .Help("1 while the agent holds a stream open to the analyzer, else 0.")
                            .Register(*registry)),
        agent_batches(prometheus::BuildGauge()
                          .Name("netdiag_agent_batches")
                          .Help("Batches received from the agent since the analyzer started (a "
                                "gauge: the agent list is rebuilt each update).")
                          .Register(*registry)),
        agent_records(prometheus::BuildGauge()
                          .Name("netdiag_agent_records")
                          .Help("Telemetry records received from the agent since the analyzer "
                                "started.")
                          .Register(*registry)),
        agent_rejected(*registry, "netdiag_agent_rejected_records",
                       "Records of the agent rejected since the analyzer started, by reason "
                       "(malformed, future, not_authorized); agent=\"(unknown)\" counts every "
                       "agent that is neither a node nor a declared collector."),
        agents(prometheus::BuildGauge()
                   .Name("netdiag_agents")
                   .Help("Agents known to the analyzer, by state (connected, disconnected).")
                   .Register(*registry)),
        dirlinks(prometheus::BuildGauge()
                     .Name("netdiag_directed_links")
                     .Help("Directed links in the topology.")
                     .Register(*registry)
                     .Add({})),
        dirlinks_covered(
            prometheus::BuildGauge()
                .Name("netdiag_directed_links_covered")
                .Help("Directed links crossed by at least netdiag_probe_coverage_min_probes "
                      "probes of known path over the horizon.")
                .Register(*registry)
                .Add({})),
        coverage_ratio(prometheus::BuildGauge()
                           .Name("netdiag_probe_coverage_ratio")
                           .Help("Share (0-1) of directed links covered by enough probes to "
                                 "localize a fault on them.")
                           .Register(*registry)
                           .Add({})),
        coverage_min_probes(
            prometheus::BuildGauge()
                .Name("netdiag_probe_coverage_min_probes")
                .Help("Probes over the horizon a directed link needs to count as covered.")
                .Register(*registry)
                .Add({})),
        records(prometheus::BuildCounter()
                    .Name("netdiag_ingest_records_total")
                    .Help("Telemetry records ingested by the engine, by kind (probe, port, lldp).")
                    .Register(*registry)),
        batches(prometheus::BuildCounter()
                    .Name("netdiag_ingest_batches_total")
                    .Help("Batches received from agents, duplicates included.")
                    .Register(*registry)
                    .Add({})),
        duplicates(prometheus::BuildCounter()
                       .Name("netdiag_ingest_duplicate_batches_total")
                       .Help("Batches received again (at-least-once redelivery) and dropped.")
                       .Register(*registry)
                       .Add({})),
        probes(records.Add({{"kind", "probe"}})),
        ports(records.Add({{"kind", "port"}})),
        lldp(records.Add({{"kind", "lldp"}})),
        malformed(prometheus::BuildCounter()
                      .Name("netdiag_ingest_malformed_records_total")
                      .Help("Records rejected as malformed (formats.md §2 rules) and skipped.")
                      .Register(*registry)
                      .Add({})),
        future(prometheus::BuildCounter()
                   .Name("netdiag_ingest_future_records_total")
                   .Help("Records stamped further ahead of the analyzer's clock than the tolerated "
                         "skew (--max-future): rejected and skipped.")
                   .Register(*registry)
                   .Add({})),
        not_authorized(prometheus::BuildCounter()
                           .Name("netdiag_ingest_not_authorized_records_total")
                           .Help("Records rejected because their agent may not speak for them "
                                 "(not its own ports, or an unknown agent): docs/security.md.")
                           .Register(*registry)
                           .Add({})),
        port_id_mismatch(
            prometheus::BuildCounter()
                .Name("netdiag_ingest_port_id_mismatch_records_total")
                .Help("Records whose compact port ids are under another topology fingerprint "
                      "than the analyzer's: read by their names, or rejected as malformed when "
                      "they have none.")
                .Register(*registry)
                .Add({})),
        late(prometheus::BuildCounter()
                 .Name("netdiag_ingest_late_records_total")
                 .Help("Records older than the newest time but within the late tolerance (used as "
                       "if in order).")
                 .Register(*registry)
                 .Add({})),
        too_late(prometheus::BuildCounter()
                     .Name("netdiag_ingest_too_late_records_total")
                     .Help("Records older than the late tolerance: stored and counted, not used "
                           "for past decisions.")
                     .Register(*registry)
                     .Add({})),
        passes(prometheus::BuildCounter()
                   .Name("netdiag_engine_passes_total")
                   .Help("Decision passes the engine has run.")
                   .Register(*registry)
                   .Add({})),
        pass_seconds(prometheus::BuildCounter()
                         .Name("netdiag_engine_pass_seconds_total")
                         .Help("Wall time the engine's passes took, summed (over "
                               "netdiag_engine_passes_total: the mean pass).")
                         .Register(*registry)
                         .Add({})),
        last_pass_seconds(prometheus::BuildGauge()
                              .Name("netdiag_engine_last_pass_duration_seconds")
                              .Help("Wall time the newest pass took.")
                              .Register(*registry)
                              .Add({})),
        last_pass_started(prometheus::BuildGauge()
                              .Name("netdiag_engine_last_pass_start_timestamp_seconds")
                              .Help("Wall-clock Unix time the newest pass began.")
                              .Register(*registry)
                              .Add({})),
        pass_duration(prometheus::BuildHistogram()
                          .Name("netdiag_engine_pass_duration_seconds")
                          .Help("Wall time of each engine pass (every pass, also those of a "
                                "catch-up between two metric updates).")
                          .Register(*registry)
                          .Add({}, prometheus::Histogram::BucketBoundaries(
                                       analyzer::IngestStats::kPassBounds.begin(),
                                       analyzer::IngestStats::kPassBounds.end()))),
        background_loss(
            prometheus::BuildGauge()
                .Name("netdiag_background_loss_ratio")
                .Help("Fabric-wide loss ratio every link is assumed to have (last pass).")
                .Register(*registry)
                .Add({})),
        telemetry_time(
            prometheus::BuildGauge()
                .Name("netdiag_telemetry_newest_timestamp_seconds")
                .Help("Newest telemetry time the engine has ingested (Unix seconds when live).")
                .Register(*registry)
                .Add({})),
        last_update(
            prometheus::BuildGauge()
                .Name("netdiag_metrics_last_update_timestamp_seconds")
                .Help("Wall-clock Unix time of the last engine pass reflected in these metrics.")
                .Register(*registry)
                .Add({})),
        up(prometheus::BuildGauge()
               .Name("netdiag_analyzer_up")
               .Help("1 while the analyzer runs and updates its metrics.")
               .Register(*registry)
               .Add({})),
        drain_context(t) {
    for (const auto& kind : kKinds) {
      for (const char* state : {"open", "localized"})
        open_incidents.Add({{"kind", kind}, {"state", state}});
    }
    for (const char* state : {"connected", "disconnected"}) agents.Add({{"state", state}});
    std::map<Labels, double> totals;
    for (topology::LinkId l = 0; l < topo.linkCount(); ++l) {
      const auto& a = topo.node(topo.port(topo.link(l).a).node);
      const auto& b = topo.node(topo.port(topo.link(l).b).node);
      const auto& lo = a.role <= b.role ? a : b;
      const auto& hi = a.role <= b.role ? b : a;
      std::string pod = lo.pod   ? std::to_string(*lo.pod)
                        : hi.pod ? std::to_string(*hi.pod)
                                 : "none";
      Labels g{{"tier", lo.role_name + "-" + hi.role_name}, {"pod", pod}};
      link_group.push_back(g);
      totals[g] += 1;
    }
    for (const auto& [g, n] : totals) {
      fabric_links.Add(g).Set(n);
      groups.insert(g);
    }
  }

  Labels linkLabels(DirLinkId d) const {
    const auto& src = topo.port(topo.dirSrcPort(d));
    const auto& dst = topo.port(topo.dirDstPort(d));
    return {{"device", topo.node(src.node).name},
            {"interface", src.name},
            {"neighbor_device", topo.node(dst.node).name},
            {"neighbor_interface", dst.name}};
  }

  void incidents(const analyzer::Report& report, double now) {
    std::map<std::pair<std::string, std::string>, double> counts;
    std::vector<const analyzer::Incident*> link_open;
    for (const auto& inc : report.incidents) {
      if (inc.resolved_at) continue;
      const std::string kind = analyzer::kindName(inc.kind);
      const std::string state = inc.localized_at ? "localized" : "open";
      counts[{kind, state}] += 1;
      if (inc.link != topology::kNone) link_open.push_back(&inc);
      if (inc.node != topology::kNone && inc.localized_at &&
          inc.kind == analyzer::IncidentKind::kHostUnreachable) {
        host_unreachable.set({{"device", topo.node(inc.node).name}, {"incident", inc.id}}, 1);
      }
      for (topology::PortId p : inc.ports) {
        const auto& port = topo.port(p);
        miscabled_port.set(
            {{"device", topo.node(port.node).name}, {"interface", port.name}, {"incident", inc.id}},
            1);
      }
      observeDelays(inc, now);
    }
    // Links out of service count as out for drain plans of the others.
    drain::Context context = drain::Context::fromIncidents(topo, report.incidents);
    if (!(context == drain_context)) {
      drain_plans.clear();
      drain_context = std::move(context);
    }
    std::unordered_map<topology::LinkId, topology::DrainPlan> plans;
    for (const analyzer::Incident* inc : link_open) {
      const topology::LinkId l = Topology::linkOf(inc->link);
      if (plans.count(l)) continue;
      auto cached = drain_plans.find(l);
      plans.emplace(
          l, cached != drain_plans.end() ? std::move(cached->second) : drain_context.plan(l));
    }
    drain_plans = std::move(plans);
    for (const auto& kind : kKinds) {
      for (const char* state : {"open", "localized"}) counts.try_emplace({kind, state}, 0);
    }
    for (const auto& [key, n] : counts) {
      open_incidents.Add({{"kind", key.first}, {"state", key.second}}).Set(n);
    }

    // A link counts once, as localized if any of its incidents is.
    std::map<topology::LinkId, bool> affected;
    for (const analyzer::Incident* inc : link_open) {
      affected[Topology::linkOf(inc->link)] |= inc->localized_at.has_value();
    }
    std::map<Labels, double> per_group;
    for (const Labels& g : groups) {
      for (const char* st : {"localized", "open"}) {
        Labels k = g;
        k["state"] = st;
        per_group[k] = 0;
      }
    }
    for (const auto& [l, localized] : affected) {
      Labels k = link_group[l];
      k["state"] = localized ? "localized" : "open";
      per_group[k] += 1;
    }
    for (const auto& [k, n] : per_group) fabric_links_affected.Add(k).Set(n);

    for (const analyzer::Incident* inc : link_open) {
      Labels labels = linkLabels(inc->link);
      Labels with_incident = labels;
      with_incident["kind"] = analyzer::kindName(inc->kind);
      with_incident["incident"] = inc->id;
      // A mitigated fault no longer pages: the drain holds, and
      // netdiag_drain_links_drained says so (NetdiagLinkDrained).
      if (inc->localized_at && inc->isLinkFault()) {
        (inc->mitigated_at ? link_fault_mitigated : link_fault).set(with_incident, 1);
      }
      with_incident["state"] = inc->localized_at         ? "localized"
                               : inc->candidates.empty() ? "open"
                                                         : "ambiguous";
      if (!inc->localized_at && !inc->candidates.empty()) {
        auto member = [&](const std::string& what) {
          candidate.set({{"incident", inc->id}, {"candidate", what}}, 1);
        };
        member(topo.dirLinkName(inc->link));
        for (const analyzer::Suspect& c : inc->candidates) {
          member(c.link != topology::kNone ? topo.dirLinkName(c.link) : topo.node(c.node).name);
        }
      }
      suspect_loss.set(with_incident, inc->loss_ratio);
      suspect_confidence.set(with_incident, inc->confidence);
      // Drain advice for the direction named (its link carries both).
      const topology::DrainPlan& plan = drain_plans.at(Topology::linkOf(inc->link));
      drain_safe.set(labels, plan.safe ? 1 : 0);
      drain_width.set(labels, static_cast<double>(plan.width_before));
      drain_width_left.set(labels, static_cast<double>(plan.width_after));
      Labels info = labels;
      info["advice"] = plan.summary;
      drain_info.set(info, 1);
    }
  }

  // An incident's delays are observed once each, and only for incidents that
  // opened while this process watched (not those restored at start).
  void observeDelays(const analyzer::Incident& inc, double now) {
    if (seen_open.insert(inc.id).second && !first_update) {
      time_to_detect.Observe(std::max(0.0, now - inc.opened_at));
    }
    if (inc.localized_at && seen_localized.insert(inc.id).second && !first_update) {
      time_to_localize.Observe(std::max(0.0, *inc.localized_at - inc.opened_at));
    }
  }

  void degraded(const std::vector<analyzer::LinkEvidence>& evidence) {
    if (options.top_degraded == 0) return;
    struct Item {
      double excess_lost;
      DirLinkId d;
      analyzer::LinkEvidence ev;
    };
    // A bounded min-heap on the excess number of lost probes: links that
    // lose a little more than background over many probes rank with links
    // that lose a lot over few, as the evidence they give does.
    auto cmp = [](const Item& a, const Item& b) { return a.excess_lost > b.excess_lost; };
    std::vector<Item> heap;
    for (DirLinkId d = 0; d < evidence.size(); ++d) {
      const analyzer::LinkEvidence& ev = evidence[d];
      if (ev.probes <= 0 || ev.lost <= 0) continue;
      double excess = ev.lost - ev.background * ev.probes;
      if (excess < 1) continue;  // less than one probe more than background
      if (heap.size() < options.top_degraded) {
        heap.push_back({excess, d, ev});
        std::push_heap(heap.begin(), heap.end(), cmp);
      } else if (excess > heap.front().excess_lost) {
        std::pop_heap(heap.begin(), heap.end(), cmp);
        heap.back() = {excess, d, ev};
        std::push_heap(heap.begin(), heap.end(), cmp);
      }
    }
    for (const Item& item : heap) {
      Labels labels = linkLabels(item.d);
      double ratio = item.ev.lost / item.ev.probes;
      degraded_loss.set(labels, ratio);
      degraded_excess.set(labels, std::max(0.0, ratio - item.ev.background));
      degraded_probes.set(labels, item.ev.probes);
    }
  }

  void agentStatus(const std::vector<AgentStatus>& list) {
    ++agent_update;
    double connected = 0, disconnected = 0;
    for (const AgentStatus& a : list) {
      if (a.agent == kUnknownAgent) {  // a bucket, not an agent
        agent_rejected.set({{"agent", a.agent}, {"reason", "not_authorized"}},
                           static_cast<double>(a.not_authorized));
        continue;
      }
      auto [it, fresh] = agent_series.try_emplace(a.agent);
      AgentSeries& s = it->second;
      if (fresh) {
        const Labels labels{{"agent", a.agent}};
        auto rejected = [&](const char* reason) {
          return &agent_rejected.family().Add({{"agent", a.agent}, {"reason", reason}});
        };
        s.last_seen = &agent_last_seen.Add(labels);
        s.connected = &agent_connected.Add(labels);
        s.batches = &agent_batches.Add(labels);
        s.records = &agent_records.Add(labels);
        s.malformed = rejected("malformed");
        s.future = rejected("future");
        s.not_authorized = rejected("not_authorized");
      }
      s.update = agent_update;
      s.last_seen->Set(a.last_seen);
      s.connected->Set(a.connected ? 1 : 0);
      s.batches->Set(static_cast<double>(a.batches));
      s.records->Set(static_cast<double>(a.records));
      s.malformed->Set(static_cast<double>(a.malformed));
      s.future->Set(static_cast<double>(a.future));
      s.not_authorized->Set(static_cast<double>(a.not_authorized));
      (a.connected ? connected : disconnected) += 1;
    }
    std::erase_if(agent_series, [this](const auto& entry) {
      const AgentSeries& s = entry.second;
      if (s.update == agent_update) return false;
      agent_last_seen.Remove(s.last_seen);
      agent_connected.Remove(s.connected);
      agent_batches.Remove(s.batches);
      agent_records.Remove(s.records);
      for (prometheus::Gauge* g : {s.malformed, s.future, s.not_authorized}) {
        agent_rejected.family().Remove(g);
      }
      return true;
    });
    agents.Add({{"state", "connected"}}).Set(connected);
    agents.Add({{"state", "disconnected"}}).Set(disconnected);
  }

  void sweepAll() {
    for (GaugeSet* g :
         {&link_fault, &link_fault_mitigated, &candidate, &suspect_loss, &suspect_confidence,
          &host_unreachable, &miscabled_port, &drain_safe, &drain_width, &drain_width_left,
          &drain_info, &degraded_loss, &degraded_excess, &degraded_probes, &agent_rejected}) {
      g->sweep();
    }
  }
};

AnalyzerMetrics::AnalyzerMetrics(std::shared_ptr<prometheus::Registry> registry,
                                 const topology::Topology& topo, MetricsOptions options)
    : impl_(std::make_unique<Impl>(std::move(registry), topo, options)) {}

AnalyzerMetrics::~AnalyzerMetrics() = default;

void AnalyzerMetrics::update(const EngineView& engine, const IngestCounters& ingest,
                             const std::vector<AgentStatus>& agents, double now) {
  Impl& m = *impl_;
  const analyzer::Report& report = engine.report;
  const double q0 = engine.background_loss;

  m.incidents(report, now);
  m.degraded(engine.evidence);
  m.agentStatus(agents);
  m.sweepAll();

  // Coverage: directed links crossed by enough probes of known path.
  const size_t dirlinks = engine.evidence.size();
  size_t covered = 0;
  for (const analyzer::LinkEvidence& e : engine.evidence) {
    covered += e.probes >= m.options.coverage_min_probes;
  }
  m.dirlinks.Set(static_cast<double>(dirlinks));
  m.dirlinks_covered.Set(static_cast<double>(covered));
  m.coverage_ratio.Set(dirlinks ? static_cast<double>(covered) / static_cast<double>(dirlinks) : 0);
  m.coverage_min_probes.Set(m.options.coverage_min_probes);

  m.batches.advance(ingest.batches);
  m.duplicates.advance(ingest.duplicate_batches);
  m.probes.advance(ingest.probes);
  m.ports.advance(ingest.ports);
  m.lldp.advance(ingest.lldp);
  m.malformed.advance(ingest.malformed);
  m.future.advance(ingest.future);
  m.not_authorized.advance(ingest.not_authorized);
  m.port_id_mismatch.advance(ingest.port_id_mismatch);
  m.late.advance(ingest.late);
  m.too_late.advance(ingest.too_late);
  const analyzer::IngestStats& stats = engine.stats;
  m.passes.advance(stats.passes);
  // (A smaller sum means a new engine: count it from zero, as CounterFrom.)
  const double pass_delta = stats.pass_seconds >= m.pass_seconds_seen
                                ? stats.pass_seconds - m.pass_seconds_seen
                                : stats.pass_seconds;
  if (pass_delta > 0) m.pass_seconds.Increment(pass_delta);
  m.pass_seconds_seen = stats.pass_seconds;
  std::vector<double> new_passes(stats.pass_buckets.size());
  bool restarted = false;
  for (size_t i = 0; i < stats.pass_buckets.size(); ++i) {
    restarted = restarted || stats.pass_buckets[i] < m.pass_buckets_seen[i];
  }
  for (size_t i = 0; i < stats.pass_buckets.size(); ++i) {
    new_passes[i] =
        static_cast<double>(stats.pass_buckets[i] - (restarted ? 0 : m.pass_buckets_seen[i]));
  }
  if (std::any_of(new_passes.begin(), new_passes.end(), [](double n) { return n > 0; })) {
    m.pass_duration.ObserveMultiple(new_passes, pass_delta);
  }
  m.pass_buckets_seen = stats.pass_buckets;
  if (stats.passes > 0) {
    m.last_pass_seconds.Set(stats.last_pass_seconds);
    m.last_pass_started.Set(stats.last_pass_started);
  }

  m.background_loss.Set(q0);
  m.telemetry_time.Set(report.generated_at);
  m.last_update.Set(now);
  m.up.Set(1);
  m.first_update = false;
}

}  // namespace netdiag::exporter
