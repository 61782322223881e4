#pragma once

// The switch agent's side of drain actions: every action that arrives with
// an acknowledgement is checked (guard.h) at once, then carried out in
// order by the one executor configured, on a worker thread of its own so a
// slow vtysh or webhook never holds the uplink. Each action ends as one
// result (done, failed, refused with its reason), which the agent sends in
// its next batch, and is counted and logged.
//
// Thread-safety: every public method may be called from any thread.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "actuator/executor.h"
#include "actuator/guard.h"
#include "netdiag/v1/collector.pb.h"

namespace netdiag::actuator {

inline constexpr const char* kNoExecutor = "no_executor";
inline constexpr const char* kBusy = "busy";

struct ActuatorOptions {
  GuardOptions guard;
  size_t max_queued = 16;     // accepted actions waiting for the executor
  size_t max_results = 1024;  // results waiting for a batch (oldest dropped beyond)
};

// Unix milliseconds of the wall clock (what actions' times are in).
uint64_t wallMs();

class Actuator {
 public:
  using Log = std::function<void(const std::string&)>;
  using Now = std::function<uint64_t()>;  // Unix milliseconds

  // `executor` may be null: every action is then refused (no_executor).
  Actuator(ActuatorOptions options, std::optional<DrainKey> key, std::unique_ptr<Executor> executor,
           Log log, Now now = wallMs);
  ~Actuator();  // finishes the action under way, drops the queued ones
  Actuator(const Actuator&) = delete;
  Actuator& operator=(const Actuator&) = delete;

  // Never blocks on the executor.
  void offer(const v1::DrainAction& action);
  // This node's ports ("node:port"), from its plan.
  void setOwnPorts(const std::vector<std::string>& ports);
  std::vector<v1::ActionResult> takeResults();

  // Results so far by (outcome, reason): ("done", ""), ("failed", ""),
  // ("refused", "bad_mac"), ...
  std::map<std::pair<std::string, std::string>, uint64_t> counts() const;
  // Actions accepted and not finished yet.
  size_t pending() const;
  std::string executorName() const;

 private:
  void run();
  void finishLocked(const v1::DrainAction& action, v1::ActionResult::Outcome outcome,
                    const std::string& detail);

  ActuatorOptions options_;
  std::unique_ptr<Executor> executor_;
  Log log_;
  Now now_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Guard guard_;
  std::unordered_set<std::string> own_ports_;
  std::deque<v1::DrainAction> queue_;
  bool busy_ = false, stopping_ = false;
  std::deque<v1::ActionResult> results_;
  std::map<std::pair<std::string, std::string>, uint64_t> counts_;
  std::thread worker_;
};

}  // namespace netdiag::actuator
