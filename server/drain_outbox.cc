#include "server/drain_outbox.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "actuator/text.h"

namespace netdiag::server {
namespace {

// A result travels back in the agent's next batch: allowed this long past
// the action's expiry before the action counts as expired.
constexpr double kResultGraceS = 30;

const char* opName(v1::DrainAction::Op op) {
  return op == v1::DrainAction::DRAIN ? "drain" : "restore";
}

}  // namespace

DrainOutbox::DrainOutbox(const topology::Topology& topo, actuator::DrainKey key,
                         DrainOutboxOptions options, std::function<double()> clock,
                         std::function<void(const std::string&)> log)
    : topo_(topo),
      key_(std::move(key)),
      options_(options),
      clock_(std::move(clock)),
      log_(std::move(log)),
      rng_(std::random_device{}()) {}

std::optional<uint64_t> DrainOutbox::issue(const DrainRequest& request, std::string* error) {
  auto fail = [&](const std::string& what) -> std::optional<uint64_t> {
    if (error) *error = what;
    return std::nullopt;
  };
  const auto port = topo_.findPort(request.port);
  if (!port) return fail("no port \"" + request.port + "\" in topology " + topo_.name);
  const topology::Node& node = topo_.node(topo_.port(*port).node);
  if (node.isHost()) {
    return fail(request.port + " is a host's port: drain a link from its switch's end");
  }
  if (request.op != v1::DrainAction::DRAIN && request.op != v1::DrainAction::RESTORE) {
    return fail("op must be drain or restore");
  }
  std::unique_lock lk(mu_);
  if (waiting_.size() >= options_.max_waiting) {
    return fail(std::to_string(waiting_.size()) + " actions are waiting for their agents already");
  }
  const double now = clock_();
  Entry e;
  e.request = request;
  e.request.reason = actuator::printableText(request.reason, 200);
  e.request.by = actuator::printableText(request.by, 100);
  e.agent = node.name;
  e.issued_at = now;
  v1::DrainAction& a = e.action;
  a.set_incident(request.incident);
  a.set_port(request.port);
  a.set_op(request.op);
  uint64_t nonce = 0;
  while (nonce == 0 || waiting_.count(nonce)) nonce = rng_();
  a.set_nonce(nonce);
  a.set_issued_at_ms(static_cast<uint64_t>(std::llround(now * 1000)));
  a.set_expires_at_ms(static_cast<uint64_t>(std::llround((now + options_.lifetime_s) * 1000)));
  a.set_reason(actuator::printableText(request.reason, 200));
  actuator::sign(key_, e.agent, a);
  waiting_.emplace(nonce, std::move(e));
  countLocked("issued");
  if (log_) {
    log_(std::string("drain action ") + opName(request.op) + " " + request.port +
         (request.incident ? " (incident " + std::to_string(request.incident) + ")" : "") +
         " issued by " + (request.by.empty() ? "?" : request.by) + " for agent " + node.name);
  }
  const auto wake = wake_;
  lk.unlock();
  if (wake) wake(node.name);
  return nonce;
}

void DrainOutbox::attach(const std::string& agent, v1::Ack& ack) {
  std::lock_guard lk(mu_);
  if (waiting_.empty()) return;
  for (auto& [nonce, e] : waiting_) {
    if (e.sent || e.agent != agent) continue;
    *ack.add_actions() = e.action;
    e.sent = true;
    e.state = "sent";
  }
}

void DrainOutbox::onResults(const std::string& agent,
                            const google::protobuf::RepeatedPtrField<v1::ActionResult>& results) {
  std::lock_guard lk(mu_);
  for (const v1::ActionResult& r : results) {
    auto it = waiting_.find(r.nonce());
    if (it == waiting_.end() || it->second.agent != agent) {
      // A resent batch repeats results already matched: those are known.
      bool known = false;
      for (const Entry& e : recent_) known |= e.action.nonce() == r.nonce() && e.agent == agent;
      if (!known && unmatched_) unmatched_->Increment();
      continue;
    }
    const char* state = r.outcome() == v1::ActionResult::DONE     ? "done"
                        : r.outcome() == v1::ActionResult::FAILED ? "failed"
                                                                  : "refused";
    Entry e = std::move(it->second);
    waiting_.erase(it);
    finishLocked(std::move(e), state, actuator::printableText(r.detail(), 500));
  }
}

void DrainOutbox::expire() {
  std::lock_guard lk(mu_);
  const double now = clock_();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    const double ends =
        static_cast<double>(it->second.action.expires_at_ms()) / 1000 + kResultGraceS;
    if (now <= ends) {
      ++it;
      continue;
    }
    Entry e = std::move(it->second);
    it = waiting_.erase(it);
    const std::string why = e.sent ? "sent, no result from the agent" : "the agent never connected";
    finishLocked(std::move(e), "expired", why);
  }
}

void DrainOutbox::finishLocked(Entry e, const std::string& state, const std::string& detail) {
  e.state = state;
  e.detail = detail;
  e.finished_at = clock_();
  countLocked(state);
  if (log_) {
    log_(std::string("drain action ") + opName(e.action.op()) + " " + e.action.port() + ": " +
         state + (detail.empty() ? "" : " (" + detail + ")"));
  }
  recent_.push_front(std::move(e));
  while (recent_.size() > options_.max_recent) recent_.pop_back();
}

void DrainOutbox::countLocked(const std::string& result) {
  auto it = counters_.find(result);
  if (it != counters_.end()) it->second->Increment();
}

std::string DrainOutbox::stateOf(uint64_t nonce, std::string* detail) const {
  std::lock_guard lk(mu_);
  if (auto it = waiting_.find(nonce); it != waiting_.end()) return it->second.state;
  for (const Entry& e : recent_) {
    if (e.action.nonce() != nonce) continue;
    if (detail) *detail = e.detail;
    return e.state;
  }
  return "";
}

nlohmann::json DrainOutbox::list() const {
  auto row = [](const Entry& e) {
    nlohmann::json j{{"nonce", std::to_string(e.action.nonce())},
                     {"port", e.action.port()},
                     {"agent", e.agent},
                     {"op", opName(e.action.op())},
                     {"state", e.state},
                     {"issued_at", e.issued_at},
                     {"expires_at", static_cast<double>(e.action.expires_at_ms()) / 1000},
                     {"by", e.request.by},
                     {"reason", e.request.reason}};
    if (e.request.incident) j["incident"] = std::to_string(e.request.incident);
    if (!e.detail.empty()) j["detail"] = e.detail;
    if (e.finished_at > 0) j["finished_at"] = e.finished_at;
    return j;
  };
  std::lock_guard lk(mu_);
  nlohmann::json out = nlohmann::json::array();
  std::vector<const Entry*> waiting;
  for (const auto& [nonce, e] : waiting_) waiting.push_back(&e);
  std::sort(waiting.begin(), waiting.end(),
            [](const Entry* a, const Entry* b) { return a->issued_at > b->issued_at; });
  for (const Entry* e : waiting) out.push_back(row(*e));
  for (const Entry& e : recent_) out.push_back(row(e));
  return nlohmann::json{{"actions", out}};
}

void DrainOutbox::exportMetrics(prometheus::Registry& registry) {
  std::lock_guard lk(mu_);
  family_ = &prometheus::BuildCounter()
                 .Name("netdiag_drain_actions_total")
                 .Help(
                     "Drain actions the analyzer issued, and how they ended (done, failed, "
                     "refused by the agent, expired without a result)")
                 .Register(registry);
  for (const char* r : {"issued", "done", "failed", "refused", "expired"}) {
    counters_[r] = &family_->Add({{"result", r}});
  }
  unmatched_ = &prometheus::BuildCounter()
                    .Name("netdiag_drain_action_results_unmatched_total")
                    .Help("Action results that match no action issued to their agent")
                    .Register(registry)
                    .Add({});
}

}  // namespace netdiag::server
