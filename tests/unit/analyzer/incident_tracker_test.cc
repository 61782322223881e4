#include "analyzer/incident_tracker.h"

#include <gtest/gtest.h>

namespace netdiag::analyzer {
namespace {

Finding strong(double confidence) {
  Finding f;
  f.kind = IncidentKind::kLinkLoss;
  f.confidence = confidence;
  f.strength = Finding::Strength::kStrong;
  return f;
}

// A suspect that was strong for one pass and then no longer accepted
// states what the evidence says now, not what it claimed when last seen;
// a localized incident keeps the confidence it paged at.
TEST(IncidentTracker, AnUnpagedIncidentWithNoFindingStatesTheFadedConfidence) {
  IncidentTracker tracker(60, 180, 30, 1e-5);
  const Key suspect{Key::kLink, 1}, paged{Key::kLink, 2};
  tracker.beginPass();
  EXPECT_FALSE(tracker.observe(suspect, strong(0.9993), 5));
  tracker.observe(paged, strong(0.9999), 5);
  tracker.endPass(5);
  tracker.beginPass();
  EXPECT_TRUE(tracker.observe(paged, strong(0.9999), 10));  // two strong passes: it pages
  tracker.endPass(10);
  std::vector<Incident> all = tracker.all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_FALSE(all[0].localized_at);
  EXPECT_DOUBLE_EQ(all[0].confidence, 1e-5);
  EXPECT_TRUE(all[1].localized_at);
  EXPECT_DOUBLE_EQ(all[1].confidence, 0.9999);

  // Seen again, it states its new finding; both resolve in time as before.
  tracker.beginPass();
  EXPECT_FALSE(tracker.observe(suspect, strong(0.97), 15));
  tracker.endPass(15);
  EXPECT_DOUBLE_EQ(tracker.all()[0].confidence, 0.97);
  tracker.beginPass();
  tracker.endPass(80);
  for (const Incident& i : tracker.all()) {
    EXPECT_TRUE(i.resolved_at) << i.id;
    EXPECT_DOUBLE_EQ(i.confidence, i.localized_at ? 0.9999 : 1e-5) << i.id;
  }
}

Finding weak(double confidence) {
  Finding f = strong(confidence);
  f.strength = Finding::Strength::kWeak;
  return f;
}

// Paging needs two passes in a row in which the hypothesis stood alone,
// the second at paging strength; the first may be below the bar.
TEST(IncidentTracker, PagesOnTheSecondPassAloneTheFirstMayBeWeak) {
  IncidentTracker tracker(60, 180, 30, 1e-5);
  const Key key{Key::kLink, 1};
  tracker.beginPass();
  EXPECT_FALSE(tracker.observe(key, weak(0.5), 5));
  tracker.endPass(5);
  tracker.beginPass();
  EXPECT_TRUE(tracker.observe(key, strong(0.9999), 10));
  tracker.endPass(10);
  ASSERT_EQ(tracker.all().size(), 1u);
  EXPECT_EQ(tracker.all()[0].localized_at, 10.0);
}

// A pass with a rival beside it (an ambiguity group) starts the count again.
TEST(IncidentTracker, APassInAGroupHoldsThePageForTwoMoreAlone) {
  IncidentTracker tracker(60, 180, 30, 1e-5);
  const Key key{Key::kLink, 1};
  Finding grouped = strong(0.5);
  grouped.candidates.push_back(Suspect{2, topology::kNone});
  double t = 5;
  for (const Finding& f : {strong(0.9999), grouped, strong(0.9999)}) {
    tracker.beginPass();
    EXPECT_FALSE(tracker.observe(key, f, t));
    tracker.endPass(t);
    t += 5;
  }
  tracker.beginPass();
  EXPECT_TRUE(tracker.observe(key, strong(0.9999), t));
  tracker.endPass(t);
}

// A finding whose loss has ended (the evidence since its incident opened
// rejects its rate) does not page, however strong; the incident stays open,
// unpaged, and resolves in its time. Only unpaged incidents are asked.
TEST(IncidentTracker, LossThatHasEndedDoesNotPage) {
  IncidentTracker tracker(60, 180, 30, 1e-5);
  const Key key{Key::kLink, 1};
  Finding ended = strong(0.9999);
  ended.ended = true;
  tracker.beginPass();
  EXPECT_FALSE(tracker.observe(key, strong(0.9999), 5));
  tracker.endPass(5);
  EXPECT_EQ(tracker.pendingSince(key, 5), 5.0);
  for (double t : {10.0, 15.0}) {
    tracker.beginPass();
    EXPECT_FALSE(tracker.observe(key, ended, t));
    tracker.endPass(t);
  }
  ASSERT_EQ(tracker.all().size(), 1u);
  EXPECT_FALSE(tracker.all()[0].localized_at);
  tracker.beginPass();
  EXPECT_TRUE(tracker.observe(key, strong(0.9999), 20));  // it is on again
  tracker.endPass(20);
  EXPECT_FALSE(tracker.pendingSince(key, 20));
  tracker.beginPass();
  tracker.endPass(80);
  EXPECT_TRUE(tracker.all()[0].resolved_at);
  EXPECT_FALSE(tracker.pendingSince(key, 80));
}

}  // namespace
}  // namespace netdiag::analyzer

namespace netdiag::analyzer {
namespace {

// The bus's restart (IncidentTracker::Evidence::kReplayed): a run persists
// its incidents, a new one restores them and is fed the same passes again
// from the middle of the first run. It makes the same decisions: the
// resolved incident opened again by the replay is the persisted one (same
// id, no second incident), and the open one resolves when the first run's
// did, not a resolve period after the restart.
TEST(IncidentTracker, ReplayedEvidenceMakesTheSameIncidentsAgain) {
  const Key blip{Key::kLink, 1}, fault{Key::kLink, 2};
  // Per pass at 5 s steps: blip seen at 10..20, fault at 20..100.
  auto feed = [&](IncidentTracker& t, double from, double to) {
    for (double now = from; now <= to; now += 5) {
      t.beginPass();
      if (now >= 10 && now <= 20) t.observe(blip, weak(0.5), now);
      if (now >= 20 && now <= 100) t.observe(fault, strong(0.9999), now);
      t.endPass(now);
    }
  };
  IncidentTracker first(60, 180, 30, 1e-5);
  feed(first, 5, 200);
  // What the database held at 90 s: the blip resolved at 80, the fault open.
  IncidentTracker at90(60, 180, 30, 1e-5);
  feed(at90, 5, 90);
  IncidentTracker replayed(60, 180, 30, 1e-5);
  replayed.restore({}, at90.all(), IncidentTracker::Evidence::kReplayed);
  feed(replayed, 15, 200);  // the stream's horizon starts at 15 s
  const std::vector<Incident> want = first.all(), got = replayed.all();
  ASSERT_EQ(want.size(), 2u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].id, want[i].id);
    EXPECT_EQ(got[i].opened_at, want[i].opened_at) << want[i].id;
    EXPECT_EQ(got[i].localized_at, want[i].localized_at) << want[i].id;
    EXPECT_EQ(got[i].resolved_at, want[i].resolved_at) << want[i].id;
  }
  // Evidence lost instead (gRPC): the open one's resolve clock restarts.
  IncidentTracker lost(60, 180, 30, 1e-5);
  lost.restore({}, at90.all(), IncidentTracker::Evidence::kLost);
  feed(lost, 105, 200);  // restarted after the fault was last seen
  ASSERT_EQ(lost.all().size(), 2u);
  EXPECT_GT(*lost.all()[1].resolved_at, *want[1].resolved_at);
}

// What the engine asks the tracker each pass (the rate recovery must
// reject once paged, or since when a pending one is judged) is the same in
// the replay as in the first run, pass by pass: before the replay reaches
// the time the incident paged, it has not paged yet. (Asked as paged from
// the replay's start, with the floor the database held, a bus analyzer
// restarted mid-fault resolved a pass or two apart from its twin: CI, on a
// loaded machine.)
TEST(IncidentTracker, AReplayAsksWhatTheFirstRunAskedPassByPass) {
  const Key fault{Key::kLink, 2};
  auto finding = [](double now) {
    Finding f = strong(0.9999);
    const double x = 0.03 - 0.0002 * now;  // the estimate settles as evidence grows
    f.loss_ratio = x;
    f.loss_interval = std::pair{x - 0.01 + 0.0001 * now, x + 0.01};
    return f;
  };
  using Asked = std::tuple<double, std::optional<double>, std::optional<double>>;
  auto feed = [&](IncidentTracker& t, double from, double to, std::vector<Asked>* asked) {
    for (double now = from; now <= to; now += 5) {
      t.beginPass();
      if (asked) {
        const auto paged = t.pagedLoss(fault, now);
        asked->emplace_back(now, paged ? std::optional(paged->loss) : std::nullopt,
                            t.pendingSince(fault, now));
      }
      if (now >= 20 && now <= 100) t.observe(fault, finding(now), now);
      t.endPass(now);
    }
  };
  IncidentTracker first(60, 180, 30, 1e-5);
  std::vector<Asked> want;
  feed(first, 5, 200, &want);
  IncidentTracker at90(60, 180, 30, 1e-5);
  feed(at90, 5, 90, nullptr);
  IncidentTracker replayed(60, 180, 30, 1e-5);
  replayed.restore({}, at90.all(), IncidentTracker::Evidence::kReplayed);
  std::vector<Asked> got;
  feed(replayed, 15, 200, &got);
  want.erase(want.begin(), want.begin() + 2);  // 5 and 10: before the stream's horizon
  EXPECT_EQ(got, want);
  EXPECT_EQ(replayed.all().back().resolved_at, first.all().back().resolved_at);
}

}  // namespace
}  // namespace netdiag::analyzer

namespace netdiag::analyzer {
namespace {

// A link netdiag drained carries no probe, so silence there is not repair:
// its incident stays open while held, is marked mitigated once, and once
// the link is back is mitigated no more (it would page again if the fault
// were still there) and resolves as any other.
TEST(IncidentTracker, AHeldLinksIncidentWaitsForItsLinkAndIsMitigatedOnce) {
  IncidentTracker tracker(60, 180, 30, 1e-5);
  const Key drained{Key::kLink, 2}, other{Key::kLink, 4};
  std::vector<Incident> changes;
  tracker.onChange([&](const Incident& i) { changes.push_back(i); });
  for (double t : {5.0, 10.0}) {
    tracker.beginPass();
    tracker.observe(drained, strong(0.9999), t);
    tracker.observe(other, strong(0.9999), t);
    tracker.endPass(t);
  }
  tracker.holdLinks({topology::Topology::linkOf(2)});
  const std::string id = tracker.all()[0].id;
  changes.clear();
  tracker.mitigate(id, 20);
  tracker.mitigate(id, 25);  // once
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].mitigated_at, 20.0);
  tracker.beginPass();
  tracker.endPass(100);
  auto all = tracker.all();
  EXPECT_FALSE(all[0].resolved_at) << "held: not resolved for lack of loss";
  EXPECT_TRUE(all[1].resolved_at);
  EXPECT_EQ(all[0].mitigated_at, 20.0);
  changes.clear();
  tracker.holdLinks({});
  ASSERT_EQ(changes.size(), 1u) << "the restore is a change of the incident";
  EXPECT_FALSE(changes[0].mitigated_at);
  tracker.beginPass();
  tracker.endPass(150);
  EXPECT_FALSE(tracker.all()[0].resolved_at) << "the resolve clock starts when the hold ends";
  tracker.beginPass();
  tracker.endPass(161);
  EXPECT_TRUE(tracker.all()[0].resolved_at);
  EXPECT_FALSE(tracker.all()[0].mitigated_at);
}

}  // namespace
}  // namespace netdiag::analyzer
