// The drain policy at work over a real outbox: what each mode issues, at
// which end of the link, once; results followed to drained or failed;
// blast radius, approval, undo and freeze. Agents are played by hand:
// attach() is what their stream's ack would carry, onResults() what their
// next batch would bring back.

#include "server/drain_coordinator.h"

#include <algorithm>
#include <cstdio>

#include <gtest/gtest.h>
#include <unistd.h>

#include "store/migrations.h"
#include "topology/generators.h"

namespace netdiag::server {
namespace {

using analyzer::Incident;
using analyzer::IncidentKind;
using topology::Topology;

Topology fabric() {
  topology::LeafSpineParams p;
  p.spines = 4;
  p.leaves = 3;
  p.hosts_per_leaf = 2;
  return topology::generateLeafSpine(p);
}

topology::DirLinkId egress(const Topology& t, const std::string& port) {
  const topology::PortId p = *t.findPort(port);
  for (topology::DirLinkId d : t.outLinks(t.port(p).node)) {
    if (t.dirSrcPort(d) == p) return d;
  }
  return topology::kNone;
}

// A 2 % loss on `port`'s egress, localized at t=100 with confidence 1.
Incident paged(const Topology& t, const std::string& id, const std::string& port) {
  Incident i;
  i.id = id;
  i.kind = IncidentKind::kLinkLoss;
  i.link = egress(t, port);
  i.opened_at = 90;
  i.localized_at = 100;
  i.confidence = 1;
  i.loss_ratio = 0.02;
  return i;
}

analyzer::Report at(double now, std::vector<Incident> incidents) {
  return analyzer::Report{now, std::move(incidents)};
}

class DrainCoordinatorTest : public ::testing::Test {
 protected:
  DrainCoordinatorTest()
      : topo_(fabric()),
        outbox_(
            topo_, actuator::DrainKey{std::string(32, 'k')}, DrainOutboxOptions{},
            [this] { return clock_; }, nullptr) {}

  void start(drain::Mode mode, int per_scope = 1, std::map<std::string, drain::Mode> scopes = {}) {
    drain::PolicySet p;
    p.all.mode = mode;
    p.all.max_drained_per_scope = per_scope;
    for (const auto& [scope, m] : scopes) {
      p.scopes[scope] = p.all;
      p.scopes[scope].mode = m;
    }
    coordinator_ = std::make_unique<DrainCoordinator>(topo_, p, &outbox_, nullptr);
    coordinator_->setEvidenceSettle(20);  // the engine's short horizon
  }
  // What `agent`'s next ack carries.
  std::vector<v1::DrainAction> deliver(const std::string& agent) {
    v1::Ack ack;
    outbox_.attach(agent, ack);
    return {ack.actions().begin(), ack.actions().end()};
  }
  void answer(const std::string& agent, const v1::DrainAction& a, v1::ActionResult::Outcome outcome,
              const std::string& detail = "") {
    google::protobuf::RepeatedPtrField<v1::ActionResult> results;
    v1::ActionResult* r = results.Add();
    r->set_nonce(a.nonce());
    r->set_outcome(outcome);
    r->set_detail(detail);
    outbox_.onResults(agent, results);
  }
  nlohmann::json drained() { return coordinator_->state()["drained"]; }

  Topology topo_;
  double clock_ = 1000;
  DrainOutbox outbox_;
  std::unique_ptr<DrainCoordinator> coordinator_;
};

TEST_F(DrainCoordinatorTest, AdviseShowsWhatAutoWouldDoAndIssuesNothing) {
  start(drain::Mode::kAdvise);
  const auto r = at(120, {paged(topo_, "inc-1", "leaf1:swp3")});
  coordinator_->onPass(r, 5);
  EXPECT_TRUE(deliver("leaf1").empty());
  const auto view = coordinator_->view(r.incidents[0], r, 5);
  EXPECT_EQ(view["decision"]["verdict"], "advise");
  EXPECT_EQ(view["decision"]["would_act"], true);
  EXPECT_FALSE(view.contains("netdiag_drain"));
}

TEST_F(DrainCoordinatorTest, AutoDrainsOnceEveryCheckHoldsAtTheLeafsEnd) {
  start(drain::Mode::kAuto);
  const Incident i = paged(topo_, "inc-7", "leaf1:swp3");
  coordinator_->onPass(at(100, {i}), 5);  // just localized: not held yet
  EXPECT_TRUE(deliver("leaf1").empty());
  coordinator_->onPass(at(120, {i}), 5);
  coordinator_->onPass(at(125, {i}), 5);  // once, not per pass
  auto actions = deliver("leaf1");
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].port(), "leaf1:swp3");
  EXPECT_EQ(actions[0].op(), v1::DrainAction::DRAIN);
  EXPECT_EQ(actions[0].incident(), 7u);
  EXPECT_TRUE(actuator::verify(actuator::DrainKey{std::string(32, 'k')}, "leaf1", actions[0]));
  EXPECT_TRUE(deliver("spine1").empty()) << "one end acts";
  ASSERT_EQ(drained().size(), 1u);
  EXPECT_EQ(drained()[0]["state"], "draining");
  EXPECT_EQ(drained()[0]["by"], "policy auto");

  answer("spine1", actions[0], v1::ActionResult::DONE);  // not its action: ignored
  coordinator_->onPass(at(130, {i}), 5);
  EXPECT_EQ(drained()[0]["state"], "draining");
  answer("leaf1", actions[0], v1::ActionResult::DONE);
  coordinator_->onPass(at(135, {i}), 5);
  EXPECT_EQ(drained()[0]["state"], "drained");
  EXPECT_EQ(coordinator_->view(i, at(135, {i}), 5)["netdiag_drain"]["state"], "drained");
}

TEST_F(DrainCoordinatorTest, AnotherFaultInTheSameScopeWaitsForTheBlastRadius) {
  start(drain::Mode::kAuto);
  const auto r =
      at(120, {paged(topo_, "inc-1", "leaf1:swp3"), paged(topo_, "inc-2", "leaf1:swp4")});
  coordinator_->onPass(r, 5);
  EXPECT_EQ(deliver("leaf1").size(), 1u) << "one drain per scope at a time";
  const auto view = coordinator_->view(r.incidents[1], r, 5);
  EXPECT_EQ(view["decision"]["verdict"], "wait");
  bool radius_failed = false;
  for (const auto& c : view["decision"]["checks"]) {
    radius_failed |= c["name"] == "blast_radius_scope" && c["ok"] == false;
  }
  EXPECT_TRUE(radius_failed) << view.dump(1);
  // The first drain counts its link out of the second's plan.
  bool counted = false;
  for (const auto& o : view["out_of_service"]) counted |= o["why"] == "drained";
  EXPECT_TRUE(counted) << view.dump(1);
}

TEST_F(DrainCoordinatorTest, ARefusedDrainIsFailedAndNotRetried) {
  start(drain::Mode::kAuto);
  const Incident i = paged(topo_, "inc-1", "leaf1:swp3");
  coordinator_->onPass(at(120, {i}), 5);
  auto actions = deliver("leaf1");
  ASSERT_EQ(actions.size(), 1u);
  answer("leaf1", actions[0], v1::ActionResult::REFUSED, "bad_mac");
  coordinator_->onPass(at(125, {i}), 5);
  EXPECT_EQ(drained()[0]["state"], "failed");
  EXPECT_EQ(drained()[0]["detail"], "drain refused: bad_mac");
  coordinator_->onPass(at(130, {i}), 5);
  EXPECT_TRUE(deliver("leaf1").empty());
}

TEST_F(DrainCoordinatorTest, ApproveDrainsOnlyWhatEveryCheckAllows) {
  start(drain::Mode::kApprove);
  const Incident i = paged(topo_, "inc-3", "leaf2:swp5");
  coordinator_->onPass(at(101, {i}), 5);
  EXPECT_TRUE(deliver("leaf2").empty()) << "approve waits for a person";
  std::string error;
  EXPECT_FALSE(coordinator_->approve("inc-3", at(101, {i}), "operator ann", &error));
  EXPECT_NE(error.find("held"), std::string::npos) << error;
  EXPECT_FALSE(coordinator_->approve("inc-9", at(120, {i}), "operator ann", &error));
  EXPECT_NE(error.find("no open incident"), std::string::npos) << error;
  auto nonce = coordinator_->approve("inc-3", at(120, {i}), "operator ann", &error);
  ASSERT_TRUE(nonce) << error;
  auto actions = deliver("leaf2");
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].nonce(), *nonce);
  EXPECT_EQ(drained()[0]["by"], "operator ann");
  EXPECT_FALSE(coordinator_->approve("inc-3", at(125, {i}), "operator bob", &error));
  EXPECT_NE(error.find("already"), std::string::npos) << error;

  start(drain::Mode::kAuto);
  EXPECT_FALSE(coordinator_->approve("inc-3", at(120, {i}), "operator ann", &error));
  EXPECT_NE(error.find("approve"), std::string::npos) << error;
}

TEST_F(DrainCoordinatorTest, UndoRestoresTheLinkAndFreezeStopsNewDrains) {
  start(drain::Mode::kAuto);
  const Incident i = paged(topo_, "inc-1", "leaf1:swp3");
  coordinator_->onPass(at(120, {i}), 5);
  auto drain_action = deliver("leaf1");
  ASSERT_EQ(drain_action.size(), 1u);
  answer("leaf1", drain_action[0], v1::ActionResult::DONE);
  coordinator_->onPass(at(125, {i}), 5);

  std::string error;
  EXPECT_FALSE(coordinator_->undo("leaf2:swp3->spine1:swp2", "operator ann", &error));
  EXPECT_NE(error.find("not drained"), std::string::npos) << error;
  const std::string name = topo_.dirLinkName(Topology::reverse(i.link));  // either direction
  // The restore waits until the link's counters are reported and clean.
  auto waiting = coordinator_->undo(name, "operator ann", &error);
  ASSERT_TRUE(waiting) << error;
  EXPECT_EQ(*waiting, 0u);
  EXPECT_TRUE(deliver("leaf1").empty());
  const topology::LinkId link = Topology::linkOf(i.link);
  coordinator_->onPass(at(126, {i}), 5, {});
  EXPECT_NE(drained()[0]["detail"].get<std::string>().find("no port counters"), std::string::npos)
      << drained().dump();
  analyzer::LinkCounters dirty{.reported = true, .rx_errors = 12, .window_s = 60};
  coordinator_->onPass(at(127, {i}), 5, {{link, dirty}});
  EXPECT_NE(drained()[0]["detail"].get<std::string>().find("12 error(s)"), std::string::npos)
      << drained().dump();
  EXPECT_TRUE(deliver("leaf1").empty());
  analyzer::LinkCounters clean{.reported = true, .window_s = 60};
  coordinator_->onPass(at(128, {i}), 5, {{link, clean}});
  auto restore = deliver("leaf1");
  ASSERT_EQ(restore.size(), 1u);
  EXPECT_EQ(restore[0].op(), v1::DrainAction::RESTORE);
  EXPECT_EQ(restore[0].port(), "leaf1:swp3");
  answer("leaf1", restore[0], v1::ActionResult::DONE);
  coordinator_->onPass(at(130, {}), 5);
  EXPECT_TRUE(drained().empty());
  EXPECT_EQ(coordinator_->state()["restored"][0]["state"], "restored");

  coordinator_->setFrozen(true, "operator ann");
  const Incident j = paged(topo_, "inc-2", "leaf3:swp6");
  coordinator_->onPass(at(140, {j}), 5);
  EXPECT_TRUE(deliver("leaf3").empty());
  EXPECT_EQ(coordinator_->view(j, at(140, {j}), 5)["decision"]["verdict"], "wait");
  coordinator_->setFrozen(false, "operator ann");
  coordinator_->onPass(at(145, {j}), 5);
  EXPECT_EQ(deliver("leaf3").size(), 1u);
}

TEST_F(DrainCoordinatorTest, AnActionNoAgentTakesExpires) {
  start(drain::Mode::kAuto);
  const Incident i = paged(topo_, "inc-1", "leaf1:swp3");
  coordinator_->onPass(at(120, {i}), 5);
  clock_ += 60 + 31;  // past its validity and the grace for a result
  outbox_.expire();
  coordinator_->onPass(at(125, {i}), 5);
  EXPECT_EQ(drained()[0]["state"], "failed");
  EXPECT_NE(drained()[0]["detail"].get<std::string>().find("expired"), std::string::npos);
}

}  // namespace
}  // namespace netdiag::server

namespace netdiag::server {
namespace {

// Every step lands in the audit, in SQLite; a restarted analyzer holds the
// same drains, and one whose result the restart lost is `unknown`.
TEST_F(DrainCoordinatorTest, TheAuditOutlivesTheAnalyzer) {
  const std::string path =
      ::testing::TempDir() + "drain-audit-" + std::to_string(::getpid()) + ".db";
  std::remove(path.c_str());
  {
    auto db = store::openAndMigrate(path);
    ASSERT_TRUE(db) << db.message();
  }
  start(drain::Mode::kAuto, 2);  // both links are in the leaf-spine scope
  std::string error;
  ASSERT_TRUE(coordinator_->attachStore(path, &error)) << error;
  const Incident i = paged(topo_, "inc-1", "leaf1:swp3");
  const Incident j = paged(topo_, "inc-2", "leaf2:swp4");
  coordinator_->onPass(at(101, {i}), 5);  // a decision: wait (not held)
  coordinator_->onPass(at(120, {i}), 5);  // act
  auto a = deliver("leaf1");
  ASSERT_EQ(a.size(), 1u);
  answer("leaf1", a[0], v1::ActionResult::DONE);
  coordinator_->onPass(at(125, {i, j}), 5);  // drained; j acted on, no answer
  ASSERT_EQ(deliver("leaf2").size(), 1u);
  coordinator_->setFrozen(true, "operator ann");

  auto db = store::Database::open(path);
  ASSERT_TRUE(db);
  auto events = store::loadDrainEvents(*db);
  ASSERT_TRUE(events) << events.message();
  std::vector<std::string> seen;
  for (const auto& e : *events) seen.push_back(e.event + " " + e.incident);
  EXPECT_EQ(seen, (std::vector<std::string>{"decision inc-1", "decision inc-1", "issued inc-1",
                                            "drained inc-1", "decision inc-2", "issued inc-2",
                                            "frozen "}));
  EXPECT_NE((*events)[2].detail.find("\"verdict\":\"act\""), std::string::npos)
      << (*events)[2].detail;
  EXPECT_EQ((*events)[2].actor, "policy auto");
  EXPECT_EQ((*events)[2].port, "leaf1:swp3");
  EXPECT_EQ(coordinator_->state()["events"][0]["event"], "frozen");

  // A new analyzer on the same database.
  start(drain::Mode::kAuto, 2);
  ASSERT_TRUE(coordinator_->attachStore(path, &error)) << error;
  const auto held = drained();
  ASSERT_EQ(held.size(), 2u) << held.dump(1);
  std::map<std::string, std::string> state;
  for (const auto& d : held) state[d["incident"]] = d["state"];
  EXPECT_EQ(state["inc-1"], "drained");
  EXPECT_EQ(state["inc-2"], "unknown");
  EXPECT_EQ(coordinator_->state()["policy"]["frozen"], true) << "a freeze outlives a restart";
  coordinator_->setFrozen(false, "operator ann");
  // Never acted on twice, and still counted out of service.
  coordinator_->onPass(at(130, {i, j}), 5);
  EXPECT_TRUE(deliver("leaf1").empty());
  EXPECT_TRUE(deliver("leaf2").empty());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace netdiag::server

namespace netdiag::server {
namespace {

// After a drain is done, kVerifyPasses passes decide it: no new loss in the
// scope is mitigated (the engine is told, with the incident); loss that
// persists is said so and, under auto, rolled back.
TEST_F(DrainCoordinatorTest, ADrainThatTookTheLossAwayIsMitigated) {
  start(drain::Mode::kAuto);
  std::set<topology::LinkId> out;
  std::map<std::string, double> mitigated;
  coordinator_->onPublish([&](analyzer::DrainState s) {
    out = std::move(s.out);
    mitigated = std::move(s.mitigated);
  });
  const Incident i = paged(topo_, "inc-1", "leaf1:swp3");
  coordinator_->onPass(at(120, {i}), 5);
  EXPECT_TRUE(out.empty()) << "not out before the switch says so";
  auto a = deliver("leaf1");
  ASSERT_EQ(a.size(), 1u);
  answer("leaf1", a[0], v1::ActionResult::DONE);
  coordinator_->onPass(at(125, {i}), 5);
  EXPECT_EQ(out, std::set<topology::LinkId>{Topology::linkOf(i.link)});
  EXPECT_TRUE(mitigated.empty());
  coordinator_->onPass(at(125 + 5 * (DrainCoordinator::kVerifyPasses - 1), {i}), 5);
  EXPECT_EQ(drained()[0]["state"], "drained") << "not judged yet";
  coordinator_->onPass(at(125 + 5 * DrainCoordinator::kVerifyPasses, {i}), 5);
  EXPECT_EQ(drained()[0]["state"], "mitigated");
  EXPECT_EQ(mitigated.count("inc-1"), 1u);
  EXPECT_EQ(out.size(), 1u);
}

TEST_F(DrainCoordinatorTest, LossThatPersistsAfterTheDrainIsRolledBackUnderAuto) {
  start(drain::Mode::kAuto);
  const Incident i = paged(topo_, "inc-1", "leaf1:swp3");
  coordinator_->onPass(at(120, {i}), 5);
  auto a = deliver("leaf1");
  ASSERT_EQ(a.size(), 1u);
  answer("leaf1", a[0], v1::ActionResult::DONE);
  coordinator_->onPass(at(125, {i}), 5);
  // The real fault was next to it: loss shows on leaf1's other uplink.
  Incident other = paged(topo_, "inc-2", "leaf1:swp4");
  other.opened_at = 135;
  other.localized_at = 140;
  other.last_loss_at = 155;  // found with only post-drain probes in the short horizon
  // A suspect that never paged, still fed by the horizon's pre-drain
  // evidence, does not count.
  Incident suspect = paged(topo_, "inc-3", "host1:eth0");
  suspect.opened_at = 130;
  suspect.localized_at.reset();
  suspect.last_loss_at = 155;
  coordinator_->onPass(at(155, {i, other, suspect}), 5);
  const auto d = drained()[0];
  EXPECT_EQ(d["state"], "restoring") << d.dump();
  EXPECT_NE(d["detail"].get<std::string>().find("inc-2"), std::string::npos);
  EXPECT_EQ(d["detail"].get<std::string>().find("inc-3"), std::string::npos) << "a suspect";
  auto restore = deliver("leaf1");
  ASSERT_EQ(restore.size(), 1u);
  EXPECT_EQ(restore[0].op(), v1::DrainAction::RESTORE);
  std::vector<std::string> events;
  const nlohmann::json state = coordinator_->state();  // kept: the loop walks into it
  for (const auto& e : state["events"]) events.push_back(e["event"]);
  // Newest first: the verdict, then the rollback (inc-2's decision follows).
  auto restoring = std::find(events.begin(), events.end(), "restoring");
  ASSERT_NE(restoring, events.end());
  ASSERT_NE(restoring + 1, events.end());
  EXPECT_EQ(*(restoring + 1), "not_mitigated");
}

TEST_F(DrainCoordinatorTest, UnderApproveLossThatPersistsIsSaidNotUndone) {
  start(drain::Mode::kApprove);
  const Incident i = paged(topo_, "inc-1", "leaf1:swp3");
  std::string error;
  ASSERT_TRUE(coordinator_->approve("inc-1", at(120, {i}), "operator ann", &error)) << error;
  auto a = deliver("leaf1");
  answer("leaf1", a[0], v1::ActionResult::DONE);
  coordinator_->onPass(at(125, {i}), 5);
  Incident other = paged(topo_, "inc-2", "leaf1:swp4");
  other.opened_at = 130;
  other.last_loss_at = 160;
  coordinator_->onPass(at(160, {i, other}), 5);
  EXPECT_EQ(drained()[0]["state"], "drained");
  EXPECT_NE(drained()[0]["detail"].get<std::string>().find("loss persists"), std::string::npos);
  EXPECT_TRUE(deliver("leaf1").empty());
  // A person undoes it: the restore waits for clean counters, and the
  // drain is not judged again meanwhile (one verdict in the audit).
  ASSERT_TRUE(coordinator_->undo(topo_.dirLinkName(i.link), "operator ann", &error)) << error;
  for (double t = 165; t <= 200; t += 5) coordinator_->onPass(at(t, {i, other}), 5);
  size_t verdicts = 0;
  const nlohmann::json state = coordinator_->state();
  for (const auto& e : state["events"]) verdicts += e["event"] == "not_mitigated";
  EXPECT_EQ(verdicts, 1u) << state["events"].dump();
}

}  // namespace
}  // namespace netdiag::server

namespace netdiag::server {
namespace {

// Loss the engine found only while probes from before the drain were in
// its short horizon is not loss that persists.
TEST_F(DrainCoordinatorTest, LossSeenOnlyBeforeTheEvidenceSettledIsNotPersistence) {
  start(drain::Mode::kAuto);
  const Incident i = paged(topo_, "inc-1", "leaf1:swp3");
  coordinator_->onPass(at(120, {i}), 5);
  answer("leaf1", deliver("leaf1").at(0), v1::ActionResult::DONE);
  coordinator_->onPass(at(125, {i}), 5);
  Incident echo = paged(topo_, "inc-2", "leaf1:swp4");
  echo.opened_at = 128;
  echo.last_loss_at = 140;  // before 125 + 20: pre-drain probes still counted
  Incident suspect = paged(topo_, "inc-3", "host1:eth0");
  suspect.localized_at.reset();  // never paged: not loss that persists
  suspect.last_loss_at = 155;
  coordinator_->onPass(at(155, {i, echo, suspect}), 5);
  EXPECT_EQ(drained()[0]["state"], "mitigated") << drained().dump();
}

// A person names a link for an incident; the drain does not take the
// incident's loss away (a wrong link), so under auto it is rolled back.
TEST_F(DrainCoordinatorTest, ADrainOfTheWrongLinkIsRolledBackUnderAuto) {
  start(drain::Mode::kAuto);
  analyzer::DrainState published;
  coordinator_->onPublish([&](analyzer::DrainState s) { published = std::move(s); });
  coordinator_->setFrozen(true, "operator ann");  // the policy itself drains nothing
  Incident i = paged(topo_, "inc-1", "leaf1:swp3");
  const std::string wrong = topo_.dirLinkName(egress(topo_, "leaf1:swp4"));
  std::string error;
  EXPECT_FALSE(coordinator_->drainLink(wrong, "inc-9", at(120, {i}), "operator ann", &error));
  EXPECT_NE(error.find("no open incident"), std::string::npos) << error;
  ASSERT_TRUE(coordinator_->drainLink(wrong, "inc-1", at(120, {i}), "operator ann", &error))
      << error;
  auto a = deliver("leaf1");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].port(), "leaf1:swp4");
  EXPECT_FALSE(coordinator_->drainLink(wrong, "inc-1", at(121, {i}), "operator ann", &error));
  answer("leaf1", a[0], v1::ActionResult::DONE);
  coordinator_->onPass(at(125, {i}), 5);
  EXPECT_EQ(drained()[0]["state"], "drained");
  i.last_loss_at = 155;  // the incident's own link still loses
  coordinator_->onPass(at(155, {i}), 5);
  const auto d = drained()[0];
  EXPECT_EQ(d["state"], "restoring") << d.dump();
  EXPECT_NE(d["detail"].get<std::string>().find("inc-1"), std::string::npos) << d.dump();
  auto restore = deliver("leaf1");
  ASSERT_EQ(restore.size(), 1u);
  EXPECT_EQ(restore[0].op(), v1::DrainAction::RESTORE);
  EXPECT_EQ(restore[0].port(), "leaf1:swp4");
  // The policy never drains another link for the incident on its own.
  coordinator_->setFrozen(false, "operator ann");
  answer("leaf1", restore[0], v1::ActionResult::DONE);
  coordinator_->onPass(at(160, {i}), 5);
  EXPECT_TRUE(drained().empty());
  EXPECT_TRUE(deliver("leaf1").empty());
  // The engine learns when the switch rerouted, from each action's issue to
  // the pass that saw its answer: the drain, then the rollback.
  const auto changes = published.changes[Topology::linkOf(*topo_.findDirLink(wrong))];
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].from, 120);
  EXPECT_EQ(changes[0].to, 125);
  EXPECT_EQ(changes[1].from, 155);
  EXPECT_EQ(changes[1].to, 160);
  EXPECT_TRUE(published.out.empty());
}

// A named link must still pass the fabric's checks, and not where the
// policy only advises.
TEST_F(DrainCoordinatorTest, ANamedLinkMustBeSafeToDrain) {
  start(drain::Mode::kAuto);
  const Incident i = paged(topo_, "inc-1", "leaf1:swp3");
  std::string error;
  const std::string access = topo_.dirLinkName(egress(topo_, "host1:eth0"));
  EXPECT_FALSE(coordinator_->drainLink(access, "inc-1", at(120, {i}), "operator ann", &error));
  EXPECT_NE(error.find("not_single_homed"), std::string::npos) << error;
  EXPECT_TRUE(deliver("leaf1").empty());
  start(drain::Mode::kAdvise);
  EXPECT_FALSE(coordinator_->drainLink(topo_.dirLinkName(i.link), "inc-1", at(120, {i}),
                                       "operator ann", &error));
  EXPECT_NE(error.find("advise"), std::string::npos) << error;
}

// A scope's override decides there: approve in leaf-spine under an
// analyzer-wide auto waits for a person.
TEST_F(DrainCoordinatorTest, AScopeOverrideDecidesInItsScope) {
  start(drain::Mode::kAuto, 1, {{"leaf-spine", drain::Mode::kApprove}});
  const Incident i = paged(topo_, "inc-1", "leaf1:swp3");
  coordinator_->onPass(at(120, {i}), 5);
  EXPECT_TRUE(deliver("leaf1").empty()) << "approve: nothing without a person";
  const auto v = coordinator_->view(i, at(120, {i}), 5)["decision"];
  EXPECT_EQ(v["verdict"], "await_approval") << v.dump();
  EXPECT_EQ(coordinator_->state()["policy"]["scopes"]["leaf-spine"]["mode"], "approve");
  std::string error;
  ASSERT_TRUE(coordinator_->approve("inc-1", at(121, {i}), "operator ann", &error)) << error;
  EXPECT_EQ(deliver("leaf1").size(), 1u);
}

}  // namespace
}  // namespace netdiag::server

namespace netdiag::server {
namespace {

// `undo --now`: a person who checked the link restores it at once; a drain
// that failed (the link may carry traffic) is restored at once too.
TEST_F(DrainCoordinatorTest, UndoNowDoesNotWaitForCounters) {
  start(drain::Mode::kAuto, 2);  // both links are in leaf-spine
  const Incident i = paged(topo_, "inc-1", "leaf1:swp3");
  coordinator_->onPass(at(120, {i}), 5);
  answer("leaf1", deliver("leaf1").at(0), v1::ActionResult::DONE);
  coordinator_->onPass(at(125, {i}), 5);
  std::string error;
  auto nonce = coordinator_->undo(topo_.dirLinkName(i.link), "operator ann", &error, true);
  ASSERT_TRUE(nonce) << error;
  EXPECT_NE(*nonce, 0u);
  auto restore = deliver("leaf1");
  ASSERT_EQ(restore.size(), 1u);
  EXPECT_EQ(restore[0].op(), v1::DrainAction::RESTORE);

  const Incident j = paged(topo_, "inc-2", "leaf3:swp6");
  coordinator_->onPass(at(130, {j}), 5);
  answer("leaf3", deliver("leaf3").at(0), v1::ActionResult::FAILED, "vtysh: no such neighbor");
  coordinator_->onPass(at(135, {j}), 5);
  nonce = coordinator_->undo(topo_.dirLinkName(j.link), "operator ann", &error);
  ASSERT_TRUE(nonce) << error;
  EXPECT_NE(*nonce, 0u) << "a failed drain is restored at once";
}

}  // namespace
}  // namespace netdiag::server
