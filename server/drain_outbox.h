#pragma once

// The analyzer's side of drain actions: it signs each action with the drain
// key (actuator/signing.h), holds it for the agent of the port's node until
// that agent's stream acknowledges a batch (the action rides the ack), and
// matches the result the agent sends back in a later batch. An action that
// finds no stream, or whose result does not come, ends `expired` once its
// validity has passed. The recent actions and their state are served at
// GET /api/v1/drain/actions and counted in netdiag_drain_actions_total.
//
// Actions reach only agents on the gRPC stream (not the bus), and only
// switch agents configured with an executor and the same key act on them
// (docs/operations.md, "Drain actions").
//
// Thread-safety: every public method may be called from any thread.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <google/protobuf/repeated_ptr_field.h>
#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include "actuator/signing.h"
#include "netdiag/v1/collector.pb.h"
#include "topology/model.h"

namespace netdiag::server {

struct DrainOutboxOptions {
  double lifetime_s = 60;   // an action's validity (the agent refuses it after)
  size_t max_waiting = 64;  // actions issued and not answered, in all
  size_t max_recent = 256;  // finished actions kept for the API
};

struct DrainRequest {
  std::string port;  // "node:port" of a switch
  v1::DrainAction::Op op = v1::DrainAction::DRAIN;
  uint64_t incident = 0;  // 0: none (an operator's own action)
  std::string reason;
  std::string by;  // who asked: "policy", or the operator the API names
};

class DrainOutbox {
 public:
  DrainOutbox(const topology::Topology& topo, actuator::DrainKey key, DrainOutboxOptions options,
              std::function<double()> clock, std::function<void(const std::string&)> log);

  // Signs and queues the action for the port's node. Its nonce, or nullopt
  // and *error (an unknown port, a host's port, too many waiting).
  std::optional<uint64_t> issue(const DrainRequest& request, std::string* error);

  // Called (outside the outbox's lock) with the agent of every action
  // issued, so its stream can take it at once; set before agents connect.
  void onIssue(std::function<void(const std::string& agent)> wake) {
    std::lock_guard lk(mu_);
    wake_ = std::move(wake);
  }

  // Moves the actions waiting for `agent` onto `ack`.
  void attach(const std::string& agent, v1::Ack& ack);

  // Results `agent` reported; each matches an action issued to it, once.
  void onResults(const std::string& agent,
                 const google::protobuf::RepeatedPtrField<v1::ActionResult>& results);

  // Ends the actions past their validity (and a grace for the result to
  // travel) as expired. The daemon calls it every tick.
  void expire();

  // The state of the action `nonce` ("waiting", "sent", "done", "failed",
  // "refused", "expired"; "" once it left the recent list) and its detail.
  std::string stateOf(uint64_t nonce, std::string* detail = nullptr) const;

  // The waiting and recent actions, newest first.
  nlohmann::json list() const;

  // netdiag_drain_actions_total{result}: issued, done, failed, refused,
  // expired; and netdiag_drain_action_results_unmatched_total.
  void exportMetrics(prometheus::Registry& registry);

 private:
  struct Entry {
    DrainRequest request;
    v1::DrainAction action;
    std::string agent;
    double issued_at = 0;
    bool sent = false;
    std::string state = "waiting";  // waiting, sent, done, failed, refused, expired
    std::string detail;
    double finished_at = 0;
  };
  void finishLocked(Entry entry, const std::string& state, const std::string& detail);
  void countLocked(const std::string& result);

  const topology::Topology& topo_;
  const actuator::DrainKey key_;
  const DrainOutboxOptions options_;
  std::function<double()> clock_;
  std::function<void(const std::string&)> log_;
  std::function<void(const std::string&)> wake_;
  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  std::map<uint64_t, Entry> waiting_;  // by nonce
  std::deque<Entry> recent_;
  std::map<std::string, prometheus::Counter*> counters_;
  prometheus::Family<prometheus::Counter>* family_ = nullptr;
  prometheus::Counter* unmatched_ = nullptr;
};

}  // namespace netdiag::server
