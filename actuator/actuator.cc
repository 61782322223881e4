#include "actuator/actuator.h"

#include <chrono>

#include "actuator/text.h"

namespace netdiag::actuator {
namespace {

const char* outcomeName(v1::ActionResult::Outcome o) {
  switch (o) {
    case v1::ActionResult::DONE:
      return "done";
    case v1::ActionResult::FAILED:
      return "failed";
    default:
      return "refused";
  }
}

const char* opName(v1::DrainAction::Op op) {
  return op == v1::DrainAction::DRAIN ? "drain" : op == v1::DrainAction::RESTORE ? "restore" : "?";
}

}  // namespace

uint64_t wallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

Actuator::Actuator(ActuatorOptions options, std::optional<DrainKey> key,
                   std::unique_ptr<Executor> executor, Log log, Now now)
    : options_(std::move(options)),
      executor_(std::move(executor)),
      log_(std::move(log)),
      now_(std::move(now)),
      guard_(options_.guard, std::move(key)) {
  worker_ = std::thread([this] { run(); });
}

Actuator::~Actuator() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void Actuator::offer(const v1::DrainAction& action) {
  std::lock_guard lk(mu_);
  std::string refusal = guard_.check(action, now_(), own_ports_);
  if (refusal.empty() && !executor_) refusal = kNoExecutor;
  if (refusal.empty() && queue_.size() >= options_.max_queued) refusal = kBusy;
  if (!refusal.empty()) {
    finishLocked(action, v1::ActionResult::REFUSED, refusal);
    return;
  }
  queue_.push_back(action);
  cv_.notify_all();
}

void Actuator::setOwnPorts(const std::vector<std::string>& ports) {
  std::lock_guard lk(mu_);
  own_ports_ = {ports.begin(), ports.end()};
}

std::vector<v1::ActionResult> Actuator::takeResults() {
  std::lock_guard lk(mu_);
  std::vector<v1::ActionResult> out(std::make_move_iterator(results_.begin()),
                                    std::make_move_iterator(results_.end()));
  results_.clear();
  return out;
}

std::map<std::pair<std::string, std::string>, uint64_t> Actuator::counts() const {
  std::lock_guard lk(mu_);
  return counts_;
}

size_t Actuator::pending() const {
  std::lock_guard lk(mu_);
  return queue_.size() + (busy_ ? 1 : 0);
}

std::string Actuator::executorName() const { return executor_ ? executor_->name() : "none"; }

void Actuator::finishLocked(const v1::DrainAction& action, v1::ActionResult::Outcome outcome,
                            const std::string& raw_detail) {
  // What the switch said goes into a proto string and the analyzer's JSON.
  const std::string detail = printableText(raw_detail, 500);
  v1::ActionResult r;
  r.set_nonce(action.nonce());
  r.set_incident(action.incident());
  r.set_port(action.port());
  r.set_op(action.op());
  r.set_outcome(outcome);
  r.set_detail(detail);
  r.set_at(static_cast<double>(now_()) / 1000);
  results_.push_back(std::move(r));
  while (results_.size() > options_.max_results) results_.pop_front();
  const std::string reason = outcome == v1::ActionResult::REFUSED ? detail : "";
  ++counts_[{outcomeName(outcome), reason}];
  if (log_) {
    // A refused action's fields are unauthenticated unless its mac verified:
    // logged for the operator, bounded, never acted on.
    const std::string port = printableText(action.port(), 200);
    log_(std::string("drain action ") + opName(action.op()) + " " + port + " (incident " +
         std::to_string(action.incident()) + "): " + outcomeName(outcome) +
         (detail.empty() ? "" : ": " + detail));
  }
}

void Actuator::run() {
  std::unique_lock lk(mu_);
  while (true) {
    cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    v1::DrainAction action = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lk.unlock();
    const std::string ifname = action.port().substr(action.port().find(':') + 1);
    std::string detail;
    const bool ok = executor_->execute(action, options_.guard.node, ifname, &detail);
    lk.lock();
    busy_ = false;
    finishLocked(action, ok ? v1::ActionResult::DONE : v1::ActionResult::FAILED, detail);
  }
}

}  // namespace netdiag::actuator
