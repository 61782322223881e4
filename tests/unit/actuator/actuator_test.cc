// The actuator: checked actions go to the executor in order on its own
// thread, every action ends as one result and one count, and a full queue
// or a missing executor refuses rather than blocks.

#include "actuator/actuator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "tests/unit/actuator/test_keys.h"

namespace netdiag::actuator {
namespace {

using testing::signedAction;
using testing::testKey;

constexpr uint64_t kNow = 1'800'000'000'000;

// Records what it is asked; fails ports named "bad"; can be held.
class FakeExecutor final : public Executor {
 public:
  std::string name() const override { return "fake"; }
  bool execute(const v1::DrainAction& action, std::string_view agent, std::string_view ifname,
               std::string* detail) override {
    std::unique_lock lk(mu);
    ++entered;
    cv.notify_all();
    cv.wait(lk, [&] { return !hold; });
    calls.push_back(std::string(agent) + " " + std::string(ifname) + " " +
                    (action.op() == v1::DrainAction::DRAIN ? "drain" : "restore"));
    if (ifname == "bad") {
      *detail = "no such neighbor";
      return false;
    }
    if (ifname == "bytes") {
      *detail = "\xff\xfe line\nnext \xe2\x82";  // not UTF-8, cut mid-character
      return false;
    }
    return true;
  }
  void release() {
    {
      std::lock_guard lk(mu);
      hold = false;
    }
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  bool hold = false;
  int entered = 0;  // executions begun
  std::vector<std::string> calls;
};

// Results until `n` arrived (the worker's own time), at most 30 s.
std::vector<v1::ActionResult> results(Actuator& a, size_t n) {
  std::vector<v1::ActionResult> out;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (out.size() < n && std::chrono::steady_clock::now() < give_up) {
    for (auto& r : a.takeResults()) out.push_back(std::move(r));
    if (out.size() < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return out;
}

TEST(Actuator, CarriesOutCheckedActionsAndReportsEachOnce) {
  auto exec = std::make_unique<FakeExecutor>();
  FakeExecutor* fake = exec.get();
  std::vector<std::string> logs;
  std::mutex log_mu;
  Actuator a(
      ActuatorOptions{GuardOptions{"leaf0"}}, testKey(), std::move(exec),
      [&](const std::string& m) {
        std::lock_guard lk(log_mu);
        logs.push_back(m);
      },
      [] { return kNow; });
  a.setOwnPorts({"leaf0:swp3", "leaf0:bad"});
  a.offer(signedAction("leaf0", "leaf0:swp3", kNow, 1));
  a.offer(signedAction("leaf0", "leaf0:bad", kNow, 2));
  a.offer(signedAction("leaf0", "leaf0:swp3", kNow, 1));                // replayed
  a.offer(signedAction("leaf0", "leaf0:swp3", kNow, 3, testKey('x')));  // forged
  const auto got = results(a, 4);
  ASSERT_EQ(got.size(), 4u);
  // Refusals are immediate, executions in order on the worker.
  std::map<uint64_t, std::vector<std::string>> by_nonce;
  for (const auto& r : got) {
    by_nonce[r.nonce()].push_back(v1::ActionResult::Outcome_Name(r.outcome()) + ":" + r.detail());
  }
  // The refusal and the execution race (the worker may finish first).
  std::sort(by_nonce[1].begin(), by_nonce[1].end());
  EXPECT_EQ(by_nonce[1], (std::vector<std::string>{"DONE:", "REFUSED:replayed"}));
  EXPECT_EQ(by_nonce[2], (std::vector<std::string>{"FAILED:no such neighbor"}));
  EXPECT_EQ(by_nonce[3], (std::vector<std::string>{"REFUSED:bad_mac"}));
  EXPECT_EQ(fake->calls, (std::vector<std::string>{"leaf0 swp3 drain", "leaf0 bad drain"}));
  const auto counts = a.counts();
  EXPECT_EQ(counts.at({"done", ""}), 1u);
  EXPECT_EQ(counts.at({"failed", ""}), 1u);
  EXPECT_EQ(counts.at({"refused", "replayed"}), 1u);
  EXPECT_EQ(counts.at({"refused", "bad_mac"}), 1u);
  EXPECT_TRUE(a.takeResults().empty());
  std::lock_guard lk(log_mu);
  EXPECT_EQ(logs.size(), 4u);
}

TEST(Actuator, WhatTheSwitchSaysIsSentAsPrintableText) {
  Actuator a(ActuatorOptions{GuardOptions{"leaf0"}}, testKey(), std::make_unique<FakeExecutor>(),
             nullptr, [] { return kNow; });
  a.setOwnPorts({"leaf0:bytes"});
  a.offer(signedAction("leaf0", "leaf0:bytes", kNow, 1));
  const auto got = results(a, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].detail(), "?? line next ??");
  v1::Batch b;
  *b.add_action_results() = got[0];
  v1::Batch back;
  EXPECT_TRUE(back.ParseFromString(b.SerializeAsString())) << "a batch the analyzer can read";
}

TEST(Actuator, RefusesWithoutAnExecutor) {
  Actuator a(ActuatorOptions{GuardOptions{"leaf0"}}, testKey(), nullptr, nullptr,
             [] { return kNow; });
  a.setOwnPorts({"leaf0:swp3"});
  a.offer(signedAction("leaf0", "leaf0:swp3", kNow, 1));
  const auto got = results(a, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].outcome(), v1::ActionResult::REFUSED);
  EXPECT_EQ(got[0].detail(), kNoExecutor);
}

TEST(Actuator, AFullQueueRefusesInsteadOfBlockingTheUplink) {
  auto exec = std::make_unique<FakeExecutor>();
  FakeExecutor* fake = exec.get();
  fake->hold = true;
  ActuatorOptions o{GuardOptions{"leaf0"}};
  o.max_queued = 2;
  Actuator a(o, testKey(), std::move(exec), nullptr, [] { return kNow; });
  a.setOwnPorts({"leaf0:swp3"});
  // One under way (held), two queued, the fourth refused.
  a.offer(signedAction("leaf0", "leaf0:swp3", kNow, 1));
  {
    std::unique_lock lk(fake->mu);
    ASSERT_TRUE(
        fake->cv.wait_for(lk, std::chrono::seconds(30), [&] { return fake->entered == 1; }));
  }
  a.offer(signedAction("leaf0", "leaf0:swp3", kNow, 2));
  a.offer(signedAction("leaf0", "leaf0:swp3", kNow, 3));
  a.offer(signedAction("leaf0", "leaf0:swp3", kNow, 4));
  auto got = results(a, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].nonce(), 4u);
  EXPECT_EQ(got[0].detail(), kBusy);
  fake->release();
  got = results(a, 3);
  EXPECT_EQ(got.size(), 3u);
  EXPECT_EQ(a.pending(), 0u);
}

}  // namespace
}  // namespace netdiag::actuator
