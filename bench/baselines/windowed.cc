#include "bench/baselines/windowed.h"

#include <algorithm>
#include <unordered_set>

namespace netdiag::baselines {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64-style combine; only used for keys, never for randomness.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

struct PathHash {
  size_t operator()(const std::vector<DirLinkId>* p) const {
    uint64_t h = p->size();
    for (DirLinkId d : *p) h = mix(h, d);
    return static_cast<size_t>(h);
  }
};
struct PathEq {
  bool operator()(const std::vector<DirLinkId>* a, const std::vector<DirLinkId>* b) const {
    return *a == *b;
  }
};

}  // namespace

std::vector<PathStat> aggregateByPath(std::span<const Observation> window) {
  std::vector<PathStat> out;
  std::unordered_map<const std::vector<DirLinkId>*, size_t, PathHash, PathEq> index;
  index.reserve(window.size());
  for (const Observation& o : window) {
    auto [it, inserted] = index.try_emplace(&o.links, out.size());
    if (inserted) {
      PathStat s;
      s.links = &o.links;
      out.push_back(s);
    }
    PathStat& s = out[it->second];
    s.sent += o.sent;
    s.lost += o.lost;
    ++s.records;
  }
  return out;
}

WindowedLocalizer::WindowedLocalizer(const topology::Topology& topo, WindowConfig config,
                                     std::string method)
    : topo_(topo), config_(config), method_(std::move(method)) {}

WindowedLocalizer::~WindowedLocalizer() = default;

void WindowedLocalizer::advance(double t) {
  // A pass runs before the first record of a newer time is taken in, so it
  // sees every record of the times it is labeled with.
  if (have_t_ && t > newest_t_ && newest_t_ >= next_pass_t_) runPass();
  if (!have_t_ || t > newest_t_) newest_t_ = t;
  if (!have_t_) next_pass_t_ = t;
  have_t_ = true;
}

void WindowedLocalizer::add(const telemetry::ProbeRecord& r, const std::vector<DirLinkId>& links,
                            uint32_t sent, uint32_t lost, uint64_t direction) {
  if (sent == 0) return;
  Observation o;
  o.t = r.t;
  o.flow_key = mix(mix(mix(mix(0, r.src), r.dst), r.flow), direction);
  o.sent = sent;
  o.lost = lost;
  o.links = links;
  window_.push_back(std::move(o));
  ++stats_.observations;
}

void WindowedLocalizer::onProbe(const telemetry::ProbeRecord& r) {
  advance(r.t);
  ++stats_.probes;
  if (r.sent == 0) return;
  // A partial path is a traceroute that stopped early: the loss may lie
  // beyond it, so none of these methods can use it as a path.
  const bool fwd_known = !r.path.empty() && !r.path_partial;
  const bool rev_known = !r.reply_path.empty();
  if (r.path_partial) ++stats_.partial_paths;
  if (config_.use_one_way && r.hasOneWay()) {
    if (fwd_known) {
      add(r, r.path, r.sent, *r.lost_fwd, 0);
    } else {
      ++stats_.skipped_no_path;
    }
    if (rev_known) add(r, r.reply_path, r.sent - *r.lost_fwd, *r.lost_rev, 1);
    return;
  }
  if (!fwd_known) {
    ++stats_.skipped_no_path;
    return;
  }
  if (rev_known) {
    std::vector<DirLinkId> round = r.path;
    round.insert(round.end(), r.reply_path.begin(), r.reply_path.end());
    add(r, round, r.sent, r.lost, 2);
  } else {
    add(r, r.path, r.sent, r.lost, 0);
  }
}

void WindowedLocalizer::onPort(const telemetry::PortRecord& r) { advance(r.t); }
void WindowedLocalizer::onLldp(const telemetry::LldpRecord& r) { advance(r.t); }

void WindowedLocalizer::finish() {
  if (have_t_ && (!passed_ || last_pass_t_ < newest_t_)) runPass();
}

std::vector<WindowedLocalizer::LinkLoad> WindowedLocalizer::linkLoads(
    std::span<const Observation> window) const {
  std::vector<LinkLoad> loads(topo_.dirLinkCount());
  for (const Observation& o : window) {
    for (DirLinkId d : o.links) {
      loads[d].sent += o.sent;
      loads[d].lost += o.lost;
    }
  }
  return loads;
}

void WindowedLocalizer::runPass() {
  const double now = newest_t_;
  ++stats_.passes;
  passed_ = true;
  last_pass_t_ = now;
  next_pass_t_ = now + config_.pass_interval_s;
  const double cutoff = now - config_.window_s;
  std::erase_if(window_, [cutoff](const Observation& o) { return o.t <= cutoff; });

  std::vector<Blame> blames;
  decide(window_, blames);

  std::unordered_set<DirLinkId> blamed;
  for (Blame& b : blames) {
    if (!blamed.insert(b.link).second) continue;
    auto it = open_.find(b.link);
    if (it != open_.end()) {
      analyzer::Incident& inc = incidents_[it->second.incident];
      it->second.last_blamed = now;
      inc.confidence = std::max(inc.confidence, b.confidence);
      inc.loss_ratio = b.loss_ratio;
      inc.evidence.figures["last_blamed_at"] = now;
      inc.evidence.figures["passes_blamed"] += 1;
      continue;
    }
    analyzer::Incident inc;
    inc.id = "inc-" + std::to_string(next_id_++);
    inc.kind = analyzer::IncidentKind::kLinkLoss;
    inc.link = b.link;
    inc.opened_at = now;
    inc.localized_at = now;
    inc.confidence = b.confidence;
    inc.loss_ratio = b.loss_ratio;
    inc.evidence = analyzer::evidenceFromJson(b.evidence);  // the method's figures
    inc.evidence.method = method_;
    inc.evidence.figures["window_s"] = config_.window_s;
    inc.evidence.figures["last_blamed_at"] = now;
    inc.evidence.figures["passes_blamed"] = 1;
    open_.emplace(b.link, Open{incidents_.size(), now});
    incidents_.push_back(std::move(inc));
  }
  for (auto it = open_.begin(); it != open_.end();) {
    if (now - it->second.last_blamed >= config_.resolve_after_s) {
      incidents_[it->second.incident].resolved_at = now;
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
}

analyzer::Report WindowedLocalizer::report() const {
  analyzer::Report r;
  r.generated_at = newest_t_;
  r.incidents = incidents_;
  return r;
}

}  // namespace netdiag::baselines
