#include "server/live_analyzer.h"

// GCC 12 reports a false maybe-uninitialized on moving a ProbeRecord into a
// std::variant (its optionals); the records are fully built by deliver().
// (clang has no such warning and rejects the unknown name.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <variant>

#include "analyzer/persist.h"
#include "planner/fabric_index.h"
#include "proto/convert.h"
#include "server/dedup.h"
#include "store/incident_store.h"
#include "store/migrations.h"
#include "topology/display_text.h"

namespace netdiag::server {
namespace {

// Collects one batch's resolved records so they can be decoded outside the
// engine lock and handed over under it, in the order deliver() produced them.
class BufferSink final : public telemetry::RecordSink {
 public:
  void onProbe(const telemetry::ProbeRecord& r) override { probes.push_back(r); }
  void onPort(const telemetry::PortRecord& r) override { ports.push_back(r); }
  void onLldp(const telemetry::LldpRecord& r) override { lldp.push_back(r); }

  std::vector<telemetry::ProbeRecord> probes;
  std::vector<telemetry::PortRecord> ports;
  std::vector<telemetry::LldpRecord> lldp;
};

constexpr double kAuthorityLogInterval_s = 60;

// Rate limit of the not_authorized log: the first rejection, then at most
// one message per interval carrying the count since the last one.
struct LogLimit {
  double logged_at = -std::numeric_limits<double>::infinity();
  uint64_t unlogged = 0;  // records rejected since the last message

  // The suffix to append when a message is due now (and resets), else nullopt.
  std::optional<std::string> due(double now, uint64_t records) {
    unlogged += records;
    if (now - logged_at < kAuthorityLogInterval_s) return std::nullopt;
    std::string tail = std::to_string(unlogged) + " record(s) rejected since the last message" +
                       (std::isfinite(logged_at) ? "" : " (first rejection)") +
                       "; next message in >= 60 s";
    logged_at = now;
    unlogged = 0;
    return tail;
  }
};

struct AgentState {
  double last_seen = 0;
  int streams = 0;
  uint64_t batches = 0, records = 0;
  uint64_t malformed = 0, future = 0, not_authorized = 0;    // records rejected, by reason
  double newest = -std::numeric_limits<double>::infinity();  // telemetry time reached
  LogLimit authority_log;
};

std::string shown(const std::string& s) { return "\"" + topology::escapeForDisplay(s) + "\""; }

// A record waiting for the watermark; `order` keeps arrival order among
// records of the same time.
struct Held {
  double t = 0;
  uint64_t order = 0;
  std::variant<telemetry::ProbeRecord, telemetry::PortRecord, telemetry::LldpRecord> record;
  bool operator>(const Held& o) const { return t != o.t ? t > o.t : order > o.order; }
};

nlohmann::json evidenceJson(const analyzer::LinkEvidence& e) {
  return {{"probes", e.probes},
          {"lost", e.lost},
          {"loss_ratio", e.probes > 0 ? e.lost / e.probes : 0.0}};
}

}  // namespace

struct LiveAnalyzer::Impl {
  Impl(const topology::Topology& t, LiveOptions o, std::shared_ptr<prometheus::Registry> r,
       std::function<double()> c)
      : topo(t),
        options(std::move(o)),
        resolver(t),
        authority(t, options.collectors, options.accept_sim_agents),
        engine(t, options.engine),
        dedup(options.dedup_window),
        registry(std::move(r)),
        clock(std::move(c)) {}

  const topology::Topology& topo;
  const LiveOptions options;
  const proto::Resolver resolver;
  const Authority authority;
  planner::Plan plan;
  planner::Sizing sizing;
  std::vector<proto::Inbound> inbound;  // who probes each node under `plan`

  mutable std::mutex mu;  // guards everything below
  analyzer::Engine engine;
  Deduplicator dedup;
  // Only identities the authority knows get an entry; everything from any
  // other name is counted in `unknown` (one bucket, so junk names on the wire
  // cost nothing each). It holds nothing back: not in the watermark.
  std::map<std::string, AgentState> agents;
  // Per port, the identity whose counters it last took (0: none yet): when
  // another one reports the port (a switch moved from the SNMP poller to
  // its own agent), its counters start from a new origin.
  std::vector<uint64_t> port_source = std::vector<uint64_t>(topo.portCount(), 0);
  AgentState unknown;
  exporter::IngestCounters counters;
  std::optional<store::Database> db;
  std::map<std::string, analyzer::Incident> dirty;  // changed since the last write
  std::unordered_map<topology::NodeId, v1::AgentPlan> plans;
  std::priority_queue<Held, std::vector<Held>, std::greater<>> held;
  uint64_t held_order = 0;

  // Hands the engine every held record at or below the watermark (all of
  // them at shutdown).
  //
  // The watermark is the newest time every agent heard from has reached,
  // connected or not, between the analyzer's clock minus the delay and its
  // clock plus max_future_s. Counting only connected agents would let the
  // one agent left connected in a reconnect storm set it alone, and a clock
  // of its running ahead would turn every other agent's records too_late;
  // a departed agent holds nothing back beyond the delay. So an agent's
  // clock moves the engine ahead of the analyzer's only while every agent
  // heard from is that far ahead too (a fast simulation), and never by more
  // than the tolerated skew.
  void releaseLocked(bool all = false) {
    const double now = clock();
    double watermark = std::numeric_limits<double>::infinity();
    for (const auto& [name, a] : agents) watermark = std::min(watermark, a.newest);
    watermark = std::max(watermark, now - options.delay_s);
    watermark = std::min(watermark, now + options.max_future_s);
    if (all) watermark = std::numeric_limits<double>::infinity();
    while (!held.empty() && held.top().t <= watermark) {
      std::visit(
          [this](const auto& r) {
            using T = std::decay_t<decltype(r)>;
            if constexpr (std::is_same_v<T, telemetry::ProbeRecord>)
              engine.onProbe(r);
            else if constexpr (std::is_same_v<T, telemetry::PortRecord>)
              engine.onPort(r);
            else
              engine.onLldp(r);
          },
          held.top().record);
      held.pop();
    }
  }

  std::shared_ptr<prometheus::Registry> registry;
  std::unique_ptr<exporter::AnalyzerMetrics> metrics;
  std::function<double()> clock;

  std::string persistLocked() {
    if (!db || dirty.empty()) return {};
    const double t = engine.report().generated_at;
    const auto wall_ms = static_cast<int64_t>(clock() * 1000);
    std::vector<store::IncidentRow> rows;
    rows.reserve(dirty.size());
    for (const auto& [id, incident] : dirty) {
      store::IncidentRow row = analyzer::toRow(topo, incident, t);
      row.created_wall = wall_ms;
      rows.push_back(std::move(row));
    }
    store::Status s = store::upsertIncidents(*db, rows);
    if (!s) return "cannot save incidents to " + db->path() + ": " + s.message();
    dirty.clear();
    return {};
  }

  std::vector<exporter::AgentStatus> agentStatusLocked() const {
    std::vector<exporter::AgentStatus> out;
    for (const auto& [name, a] : agents) {
      out.push_back({name, a.last_seen, a.streams > 0, a.batches, a.records, a.malformed, a.future,
                     a.not_authorized});
    }
    if (unknown.not_authorized > 0) {
      exporter::AgentStatus u;
      u.agent = exporter::kUnknownAgent;
      u.not_authorized = unknown.not_authorized;
      out.push_back(u);
    }
    return out;
  }

  // Counts a refused batch's records as not_authorized under `who` (or the
  // unknown bucket) and returns the log line when one is due.
  std::string refuseLocked(const std::string& name, const Authority::Identity& who,
                           const v1::Batch& batch, const std::string& why) {
    const uint64_t n =
        static_cast<uint64_t>(batch.probes_size()) + batch.ports_size() + batch.lldp_size();
    counters.not_authorized += n;
    const bool known = who.kind != Authority::Kind::kUnknown;
    AgentState& a = known ? agents[name] : unknown;
    a.not_authorized += n;
    auto tail = a.authority_log.due(clock(), n);
    if (!tail) return {};
    return "agent " + shown(name) + " batch " + std::to_string(batch.epoch()) + "/" +
           std::to_string(batch.seq()) + " refused (" + std::to_string(n) +
           " record(s) not ingested, reason not_authorized): " + why + " [" + *tail +
           (known ? "" : ", all unknown agents together") + "]";
  }

  analyzer::Report openReport() const {
    analyzer::Report r = engine.report();
    std::erase_if(r.incidents,
                  [](const analyzer::Incident& i) { return i.resolved_at.has_value(); });
    return r;
  }
};

LiveAnalyzer::LiveAnalyzer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LiveAnalyzer::~LiveAnalyzer() = default;

std::unique_ptr<LiveAnalyzer> LiveAnalyzer::create(const topology::Topology& topo,
                                                   LiveOptions options,
                                                   std::shared_ptr<prometheus::Registry> registry,
                                                   std::function<double()> clock,
                                                   std::string* error,
                                                   std::vector<std::string>* warnings) {
  auto problems = planner::validate(options.budget);
  if (!problems.empty()) {
    if (error) *error = "probe budget: " + problems.front();
    return nullptr;
  }
  if (!(options.max_future_s >= 0) || !std::isfinite(options.max_future_s)) {
    if (error) *error = "the tolerated clock skew (max_future_s) must be a finite number >= 0";
    return nullptr;
  }
  planner::SizedPlan sized = planner::sizePlan(planner::FabricIndex(topo, {}), options.budget,
                                               options.plan_seed, options.sizing, 0);
  options.engine.expected_flows = sized.plan.flowCount();
  auto impl =
      std::make_unique<Impl>(topo, std::move(options), std::move(registry), std::move(clock));
  impl->plan = std::move(sized.plan);
  impl->sizing = sized.sizing;
  impl->inbound = proto::inboundByNode(topo, impl->plan);
  Impl& m = *impl;
  if (!m.options.db_path.empty()) {
    auto opened = store::openAndMigrate(m.options.db_path);
    if (!opened) {
      if (error) *error = opened.message();
      return nullptr;
    }
    m.db.emplace(std::move(*opened));
    auto rows = store::loadIncidents(*m.db);
    if (!rows) {
      if (error) *error = rows.message();
      return nullptr;
    }
    std::vector<std::string> bad;
    m.engine.restore(analyzer::fromRows(topo, *rows, bad));
    if (warnings) {
      for (auto& p : bad) warnings->push_back(m.options.db_path + ": " + p);
    }
  }
  m.engine.onIncidentChange([&m](const analyzer::Incident& i) { m.dirty[i.id] = i; });
  if (m.registry) {
    m.metrics = std::make_unique<exporter::AnalyzerMetrics>(m.registry, topo, m.options.metrics);
  }
  return std::unique_ptr<LiveAnalyzer>(new LiveAnalyzer(std::move(impl)));
}

BatchResult LiveAnalyzer::ingest(const v1::Batch& batch) {
  Impl& m = *impl_;
  BatchResult result;
  if (batch.agent().empty()) {
    result.errors.push_back("batch without an agent id: dropped");
    std::lock_guard lk(m.mu);
    m.counters.malformed += batch.probes_size() + batch.ports_size() + batch.lldp_size();
    return result;
  }
  const Authority::Identity who = m.authority.identify(batch.agent());
  if (who.kind == Authority::Kind::kUnknown) {
    // Refused whole, before anything (dedup state included) moves.
    result.rejected = true;
    result.not_authorized =
        static_cast<size_t>(batch.probes_size()) + batch.ports_size() + batch.lldp_size();
    std::lock_guard lk(m.mu);
    result.authority_log = m.refuseLocked(
        batch.agent(), who, batch,
        "it is neither a node of topology " + m.topo.name +
            ", a collector of the analyzer's --collectors file nor an accepted synthetic agent; "
            "acknowledged so that it leaves the sender's spool");
    return result;
  }
  {
    // Cheap early exit for a resend: no decoding at all.
    std::lock_guard lk(m.mu);
    if (m.dedup.seen(batch.agent(), batch.epoch(), batch.seq())) {
      ++m.counters.duplicate_batches;
      m.agents[batch.agent()].last_seen = m.clock();
      result.duplicate = true;
      return result;
    }
  }
  // Records stamped too far ahead (a bad clock) are rejected, named by
  // their index on the wire.
  const double now = m.clock();
  const double limit = now + m.options.max_future_s;
  std::vector<std::string> future;
  auto ahead = [&](double t, const char* what, int i) {
    if (!(t > limit)) return false;
    char buf[160];  // %g: t is any finite double, beyond what an integer holds
    std::snprintf(buf, sizeof buf, "[%d]: 't' is %.6g s ahead of the analyzer's clock (max %g s)",
                  i, t - now, m.options.max_future_s);
    future.push_back(what + std::string(buf));
    return true;
  };
  for (int i = 0; i < batch.probes_size(); ++i) ahead(batch.probes(i).t(), "probes", i);
  for (int i = 0; i < batch.ports_size(); ++i) ahead(batch.ports(i).t(), "ports", i);
  for (int i = 0; i < batch.lldp_size(); ++i) ahead(batch.lldp(i).t(), "lldp", i);
  BufferSink buffer;
  result.errors = proto::deliver(batch, m.resolver, buffer, &result.warnings);
  const size_t malformed = result.errors.size();
  // Authority: each record must be about what its agent may speak for.
  std::string first_refused;
  auto refuse = [&](auto& records, auto&& allowed, auto&& describe) {
    return std::erase_if(records, [&](const auto& r) {
      if (allowed(r)) return false;
      if (first_refused.empty()) first_refused = describe(r);
      return true;
    });
  };
  const std::string& agent_name = batch.agent();
  const auto what_it_may = [&] {
    switch (who.kind) {
      case Authority::Kind::kCollector:
        return std::string("a collector speaks only for its nodes, and sends no probes");
      case Authority::Kind::kSim:
        return std::string("a synthetic agent speaks only for its simulated group");
      default:
        return "an agent speaks only for its own node " + shown(agent_name);
    }
  };
  result.not_authorized =
      refuse(
          buffer.probes,
          [&](const telemetry::ProbeRecord& r) {
            return m.authority.mayProbe(who, m.topo.port(r.src).node);
          },
          [&](const telemetry::ProbeRecord& r) {
            return "a probe from " + shown(m.topo.portRef(r.src)) + " (" + what_it_may() + ")";
          }) +
      refuse(
          buffer.ports,
          [&](const telemetry::PortRecord& r) {
            return m.authority.mayDescribe(who, m.topo.port(r.port).node);
          },
          [&](const telemetry::PortRecord& r) {
            return "counters of " + shown(m.topo.portRef(r.port)) + " (" + what_it_may() + ")";
          }) +
      refuse(
          buffer.lldp,
          [&](const telemetry::LldpRecord& r) {
            return m.authority.mayDescribe(who, m.topo.port(r.port).node);
          },
          [&](const telemetry::LldpRecord& r) {
            return "LLDP of " + shown(m.topo.portRef(r.port)) + " (" + what_it_may() + ")";
          });
  if (!future.empty()) {
    // Counted among the records deliver() accepted, so a record both
    // malformed and ahead counts once.
    auto ahead_of_limit = [&](const auto& r) { return r.t > limit; };
    result.future = std::erase_if(buffer.probes, ahead_of_limit) +
                    std::erase_if(buffer.ports, ahead_of_limit) +
                    std::erase_if(buffer.lldp, ahead_of_limit);
    result.errors.insert(result.errors.end(), future.begin(), future.end());
  }

  std::lock_guard lk(m.mu);
  AgentState& agent = m.agents[batch.agent()];
  agent.last_seen = m.clock();
  // Another stream of the same agent may have delivered it meanwhile.
  if (m.dedup.seen(batch.agent(), batch.epoch(), batch.seq())) {
    ++m.counters.duplicate_batches;
    result.duplicate = true;
    result.errors.clear();
    return result;
  }
  const uint64_t source = (static_cast<uint64_t>(who.kind) << 32 | who.index) + 1;
  for (telemetry::PortRecord& r : buffer.ports) {
    uint64_t& last = m.port_source[r.port];
    r.new_origin = last != 0 && last != source;
    last = source;
  }
  auto hold = [&](auto& records) {
    for (size_t i = 0; i < records.size(); ++i) {
      agent.newest = std::max(agent.newest, records[i].t);
      Held h;
      h.t = records[i].t;
      h.order = m.held_order++;
      h.record = std::move(records[i]);
      m.held.push(std::move(h));
      ++result.accepted;
    }
  };
  hold(buffer.probes);
  hold(buffer.ports);
  hold(buffer.lldp);
  m.releaseLocked();
  m.dedup.mark(batch.agent(), batch.epoch(), batch.seq());
  ++m.counters.batches;
  m.counters.malformed += malformed;
  m.counters.future += result.future;
  m.counters.not_authorized += result.not_authorized;
  ++agent.batches;
  agent.records += result.accepted;
  agent.malformed += malformed;
  agent.future += result.future;
  agent.not_authorized += result.not_authorized;
  if (result.not_authorized > 0) {
    if (auto tail = agent.authority_log.due(m.clock(), result.not_authorized)) {
      result.authority_log = "agent " + shown(agent_name) + " batch " +
                             std::to_string(batch.epoch()) + "/" + std::to_string(batch.seq()) +
                             ": " + std::to_string(result.not_authorized) +
                             " record(s) rejected, reason not_authorized; first: " + first_refused +
                             " [" + *tail + "]";
    }
  }
  return result;
}

std::string LiveAnalyzer::tick(double engine_time) {
  Impl& m = *impl_;
  std::lock_guard lk(m.mu);
  m.releaseLocked();
  m.engine.advanceTo(engine_time);
  std::string err = m.persistLocked();
  if (m.metrics) {
    exporter::IngestCounters c = m.counters;
    const analyzer::IngestStats& s = m.engine.stats();
    c.probes = s.probes;
    c.ports = s.ports;
    c.lldp = s.lldp;
    c.late = s.late;
    c.too_late = s.too_late;
    m.metrics->update(m.engine, c, m.agentStatusLocked(), m.clock());
  }
  return err;
}

std::string LiveAnalyzer::flush() {
  std::lock_guard lk(impl_->mu);
  impl_->releaseLocked(/*all=*/true);
  return impl_->persistLocked();
}

void LiveAnalyzer::streamOpened(const std::string& agent) {
  if (impl_->authority.identify(agent).kind == Authority::Kind::kUnknown) return;
  std::lock_guard lk(impl_->mu);
  AgentState& a = impl_->agents[agent];
  ++a.streams;
  a.last_seen = impl_->clock();
}

void LiveAnalyzer::streamClosed(const std::string& agent) {
  if (impl_->authority.identify(agent).kind == Authority::Kind::kUnknown) return;
  std::lock_guard lk(impl_->mu);
  AgentState& a = impl_->agents[agent];
  if (a.streams > 0) --a.streams;
  impl_->releaseLocked();
}

std::string LiveAnalyzer::refuse(const std::string& as_agent, const v1::Batch& batch,
                                 const std::string& why) {
  const Authority::Identity who = impl_->authority.identify(as_agent);
  std::lock_guard lk(impl_->mu);
  return impl_->refuseLocked(as_agent, who, batch, why);
}

const Authority& LiveAnalyzer::authority() const { return impl_->authority; }

std::optional<v1::AgentPlan> LiveAnalyzer::plan(const std::string& agent, std::string* error) {
  Impl& m = *impl_;
  auto node = m.topo.findNode(agent);
  if (!node) {
    if (error) *error = "agent \"" + agent + "\" is not a node of topology " + m.topo.name;
    return std::nullopt;
  }
  std::lock_guard lk(m.mu);
  auto it = m.plans.find(*node);
  if (it == m.plans.end()) {
    it = m.plans
             .emplace(*node, proto::agentPlan(m.topo, m.plan, *node, m.options.responder_port,
                                              m.options.dscp, &m.inbound[*node]))
             .first;
  }
  return it->second;
}

nlohmann::json LiveAnalyzer::locate() const {
  std::lock_guard lk(impl_->mu);
  return analyzer::reportToJson(impl_->topo, impl_->openReport());
}

nlohmann::json LiveAnalyzer::incidents(const IncidentFilter& f) const {
  std::lock_guard lk(impl_->mu);
  analyzer::Report r = impl_->engine.report();
  std::erase_if(r.incidents, [&](const analyzer::Incident& i) {
    if (f.only_open && i.resolved_at) return true;
    if (f.kind && analyzer::kindName(i.kind) != *f.kind) return true;
    // As store::IncidentQuery::since: opened or resolved at or after it.
    if (f.since && !(i.opened_at >= *f.since || (i.resolved_at && *i.resolved_at >= *f.since))) {
      return true;
    }
    return false;
  });
  return analyzer::reportToJson(impl_->topo, r);
}

std::optional<nlohmann::json> LiveAnalyzer::incident(const std::string& id) const {
  std::optional<topology::DirLinkId> link;
  nlohmann::json out;
  {
    std::lock_guard lk(impl_->mu);
    for (const auto& i : impl_->engine.report().incidents) {
      if (i.id != id) continue;
      out["incident"] = analyzer::incidentToJson(impl_->topo, i);
      if (i.link != topology::kNone) link = i.link;
      break;
    }
  }
  if (!out.contains("incident")) return std::nullopt;
  out["link"] = link ? *this->link(impl_->topo.dirLinkName(*link)) : nlohmann::json(nullptr);
  return out;
}

std::optional<nlohmann::json> LiveAnalyzer::link(const std::string& name) const {
  const Impl& m = *impl_;
  auto d = m.topo.findDirLink(name);
  if (!d) return std::nullopt;
  const topology::DirLinkId reverse = *d ^ 1;
  std::lock_guard lk(m.mu);
  analyzer::LinkEvidence e = m.engine.linkEvidence(*d);
  nlohmann::json out = evidenceJson(e);
  out["link"] = m.topo.dirLinkName(*d);
  out["background_loss"] = e.background;
  out["reverse"] = evidenceJson(m.engine.linkEvidence(reverse));
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& i : m.engine.report().incidents) {
    if (i.link == *d || (i.link == reverse && i.both_directions)) ids.push_back(i.id);
  }
  out["incidents"] = std::move(ids);
  return out;
}

exporter::IngestCounters LiveAnalyzer::counters() const {
  std::lock_guard lk(impl_->mu);
  exporter::IngestCounters c = impl_->counters;
  const analyzer::IngestStats& s = impl_->engine.stats();
  c.probes = s.probes;
  c.ports = s.ports;
  c.lldp = s.lldp;
  c.late = s.late;
  c.too_late = s.too_late;
  return c;
}

std::vector<exporter::AgentStatus> LiveAnalyzer::agents() const {
  std::lock_guard lk(impl_->mu);
  return impl_->agentStatusLocked();
}

const topology::Topology& LiveAnalyzer::topology() const { return impl_->topo; }

// Set once in create(), never changed: no lock needed.
const planner::Sizing& LiveAnalyzer::planSizing() const { return impl_->sizing; }

}  // namespace netdiag::server
