// Whole-process run of the localization engine at scale (issue #4 targets
// (c) and (d)): builds a fabric (by default the 102,400-host-port rail
// fabric), plans it, simulates a gray-loss scenario (1 % loss on a random
// leaf->spine link from `--onset`) for DURATION_S seconds and feeds every
// record straight into analyzer::Engine, in-process. Prints wall time, the
// engine's own time, probe records/s through the engine, the localization
// passes (count, slowest, mean), RSS over time and at the end, and the
// incidents found against the scenario's truth.
//
//   analyzer_scale DURATION_S [--fabric SPEC] [--onset S] [--seed N]
//                  [--count-first] [--rss-every N] [--clean] [--one-way SHARE]
//                  [--prefetch AHEAD]
//
// --clean injects no fault: every localized incident is a false page, and
// the run prints the directed link-hours it tested (the false-page rate of
// docs/benchmarks.md). --one-way sets the share of records with one-way
// counts (default 1, as netdiag's agents send them). Probe records go to
// the engine in runs of 256 with a prefetch of the record AHEAD places on
// (default 4), as the daemon feeds a batch; --prefetch 0 feeds each alone.
//
// The engine's time is taken inside a wrapping sink around every call (TSC
// ticks, calibrated against the wall clock over the run): a pass runs inside
// the first call of a new 5 s interval, so the call during which
// stats().passes grows is that pass (plus one record). --count-first runs
// the same simulation into a counting sink first, for the simulator's own
// time (wall of the engine run minus it is another estimate of the engine's).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <time.h>
#include <x86intrin.h>

#include "analyzer/engine.h"
#include "planner/plan.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace {

using namespace netdiag;
using Clock = std::chrono::steady_clock;

double peakRssMiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

double currentRssMiB() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * 4096.0 / (1024.0 * 1024.0);
}

double threadCpuS() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Count : telemetry::RecordSink {
  uint64_t probes = 0, ports = 0, lldp = 0;
  void onProbe(const telemetry::ProbeRecord&) override { ++probes; }
  void onPort(const telemetry::PortRecord&) override { ++ports; }
  void onLldp(const telemetry::LldpRecord&) override { ++lldp; }
};

// Times every call into the engine; calls that ran a pass are kept apart.
struct Timed : telemetry::RecordSink {
  analyzer::Engine& engine;
  int rss_every;
  uint64_t ticks = 0;       // all engine calls
  uint64_t pass_ticks = 0;  // calls that ran a pass
  uint64_t max_pass_ticks = 0;
  double max_pass_at = 0;
  uint64_t max_other_ticks = 0;  // slowest call without a pass
  double max_other_at = 0;
  uint64_t passes = 0;
  uint64_t pass_cpu_passes = 0;
  double pass_cpu_s = 0, max_pass_cpu_s = 0;  // thread CPU time of the pass calls
  double t = 0, newest = -1e300;
  struct Sample {
    double t, rss_mib, pass_ms_ticks;
  };
  std::vector<Sample> samples;
  std::vector<uint64_t> pass_list;

  // Probe records are fed in runs of up to kRun, each with a prefetch of
  // the one `ahead` places on, as the daemon feeds a batch
  // (server/live_analyzer.cc); 0 feeds them one by one as they come.
  static constexpr size_t kRun = 256;
  size_t ahead;
  std::vector<telemetry::ProbeRecord> run;

  Timed(analyzer::Engine& e, int every, size_t prefetch_ahead)
      : engine(e), rss_every(every), ahead(prefetch_ahead) {
    run.reserve(kRun);
  }

  template <typename F>
  void timed(double rt, F&& f) {
    const uint64_t before = engine.stats().passes;
    // Thread CPU time around calls that cross a whole second of log time
    // (a syscall, so not on every call). Only counts passes that fall on
    // such a call; pass_cpu_passes says how many did.
    const bool crossing = rt > newest && std::floor(rt) > std::floor(newest);
    const double cpu0 = crossing ? threadCpuS() : 0;
    const uint64_t a = __rdtsc();
    f();
    const uint64_t dt = __rdtsc() - a;
    const double cpu = crossing ? threadCpuS() - cpu0 : 0;
    newest = std::max(newest, rt);
    ticks += dt;
    t = rt;
    if (engine.stats().passes != before) {
      ++passes;
      pass_cpu_s += cpu;
      pass_cpu_passes += crossing;
      max_pass_cpu_s = std::max(max_pass_cpu_s, cpu);
      pass_ticks += dt;
      pass_list.push_back(dt);
      if (dt > max_pass_ticks) max_pass_ticks = dt, max_pass_at = rt;
      if (rss_every > 0 && passes % static_cast<uint64_t>(rss_every) == 0) {
        samples.push_back({rt, currentRssMiB(), static_cast<double>(dt)});
      }
    } else {
      if (dt > max_other_ticks) max_other_ticks = dt, max_other_at = rt;
    }
  }
  void onProbe(const telemetry::ProbeRecord& r) override {
    if (ahead == 0) {
      timed(r.t, [&] { engine.onProbe(r); });
      return;
    }
    run.push_back(r);
    if (run.size() == kRun) flush();
  }
  void flush() {
    for (size_t i = 0; i < run.size(); ++i) {
      timed(run[i].t, [&] {
        if (i + ahead < run.size()) engine.prefetch(run[i + ahead]);
        engine.onProbe(run[i]);
      });
    }
    run.clear();
  }
  void onPort(const telemetry::PortRecord& r) override {
    flush();
    timed(r.t, [&] { engine.onPort(r); });
  }
  void onLldp(const telemetry::LldpRecord& r) override {
    flush();
    timed(r.t, [&] { engine.onLldp(r); });
  }
};

double secs(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s DURATION_S [--fabric SPEC] [--onset S] [--seed N] [--count-first] "
                 "[--rss-every N] [--clean] [--one-way SHARE] [--prefetch AHEAD]\n",
                 argv[0]);
    return 2;
  }
  std::string fabric = "rail:sus=400,hosts_per_su=32,rails=8,spines=32,leaf_uplinks=32,cores=16";
  double onset = 10;
  uint64_t seed = 1;
  bool count_first = false;
  bool clean = false;
  double one_way = 1.0;
  int rss_every = 12;  // one sample a minute of log time
  size_t prefetch_ahead = 4;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--count-first") {
      count_first = true;
    } else if (i + 1 < argc && a == "--fabric") {
      fabric = argv[++i];
    } else if (i + 1 < argc && a == "--onset") {
      onset = std::atof(argv[++i]);
    } else if (i + 1 < argc && a == "--seed") {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (i + 1 < argc && a == "--rss-every") {
      rss_every = std::atoi(argv[++i]);
    } else if (i + 1 < argc && a == "--prefetch") {
      prefetch_ahead = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--clean") {
      clean = true;
    } else if (i + 1 < argc && a == "--one-way") {
      one_way = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }

  sim::Scenario sc;
  sc.name = "gray_loss";
  sc.duration_s = std::atof(argv[1]);
  if (!sim::parseFabricSpec(fabric, sc.fabric).empty()) return 2;
  sim::FaultSpec f;
  f.kind = "link_loss";
  f.link.from = "leaf";
  f.link.to = "spine";
  f.loss = 0.01;
  f.onset = onset;
  if (!clean) sc.faults.push_back(f);
  sc.noise.one_way = one_way;

  auto t0 = Clock::now();
  std::vector<topology::Diagnostic> errors;
  auto topo = sim::buildFabric(sc.fabric, errors);
  if (!topo) return 2;
  planner::Plan plan = planner::makePlan(*topo, sc.budget, {}, seed);
  sim::SimOptions opt;
  opt.seed = seed;
  auto t1 = Clock::now();
  std::fprintf(stderr, "fabric + plan: %.2f s, rss %.0f MiB\n", secs(t0, t1), currentRssMiB());

  double count_run_s = NAN;
  if (count_first) {
    auto counting = sim::Simulator::create(*topo, sc, plan, opt, errors);
    if (!counting) {
      std::fprintf(stderr, "%s\n", errors[0].str().c_str());
      return 2;
    }
    Count c;
    auto a = Clock::now();
    counting->run(c);
    count_run_s = secs(a, Clock::now());
    std::fprintf(stderr, "simulator alone (counting sink): %.2f s, %llu probe records\n",
                 count_run_s, static_cast<unsigned long long>(c.probes));
  }

  auto simulator = sim::Simulator::create(*topo, sc, plan, opt, errors);
  if (!simulator) {
    std::fprintf(stderr, "%s\n", errors[0].str().c_str());
    return 2;
  }
  auto t2 = Clock::now();
  const double rss_before_engine = currentRssMiB();
  const double peak_before_engine = peakRssMiB();
  std::fprintf(stderr, "simulator ready: %.2f s, rss %.0f MiB (peak %.0f)\n", secs(t1, t2),
               rss_before_engine, peak_before_engine);

  analyzer::EngineConfig config;
  config.expected_flows = plan.flowCount();  // as the daemon will, from the plan it serves
  analyzer::Engine engine(*topo, config);
  std::vector<std::string> events;
  engine.onIncidentChange([&](const analyzer::Incident& i) {
    if (events.size() < 200) {
      char buf[512];
      std::snprintf(buf, sizeof buf, "  event t=%.0f %s %s %s localized=%s resolved=%s conf=%.4f",
                    engine.report().generated_at, i.id.c_str(), analyzer::kindName(i.kind),
                    i.link != topology::kNone   ? topo->dirLinkName(i.link).c_str()
                    : i.node != topology::kNone ? topo->node(i.node).name.c_str()
                                                : "-",
                    i.localized_at ? std::to_string(*i.localized_at).c_str() : "no",
                    i.resolved_at ? std::to_string(*i.resolved_at).c_str() : "no", i.confidence);
      events.push_back(buf);
    }
  });
  auto t3 = Clock::now();
  const double rss_engine_built = currentRssMiB();
  Timed timed(engine, rss_every, prefetch_ahead);
  const uint64_t tsc0 = __rdtsc();
  simulator->run(timed);
  timed.flush();
  const uint64_t tsc1 = __rdtsc();
  auto t4 = Clock::now();
  const double run_s = secs(t3, t4);
  const double tick_s = run_s / static_cast<double>(tsc1 - tsc0);
  const double engine_s = static_cast<double>(timed.ticks) * tick_s;
  const double pass_s = static_cast<double>(timed.pass_ticks) * tick_s;

  const auto& st = engine.stats();
  const auto& ss = simulator->stats();
  std::vector<uint64_t> pl = timed.pass_list;
  std::sort(pl.begin(), pl.end());
  auto pct = [&](double q) {
    return pl.empty() ? 0.0
                      : static_cast<double>(
                            pl[static_cast<size_t>(q * static_cast<double>(pl.size() - 1))]) *
                            tick_s;
  };

  std::fprintf(stderr, "engine built: %.2f s, rss %.0f MiB\n", secs(t2, t3), rss_engine_built);
  for (const auto& s : timed.samples) {
    std::fprintf(stderr, "  t=%6.0f s  rss %6.0f MiB  pass %.1f ms\n", s.t, s.rss_mib,
                 s.pass_ms_ticks * tick_s * 1e3);
  }
  for (const auto& e : events) std::fprintf(stderr, "%s\n", e.c_str());

  // The truth: which link was faulted, and did an incident name it?
  std::string truth_link;
  for (const auto& item : simulator->truth().faults) truth_link = item.link;
  analyzer::Report report = engine.report();
  std::string found = "no";
  double localized_at = NAN;
  int link_incidents = 0, localized_incidents = 0;
  for (const auto& inc : report.incidents) {
    std::string name = inc.link != topology::kNone   ? topo->dirLinkName(inc.link)
                       : inc.node != topology::kNone ? topo->node(inc.node).name
                                                     : "-";
    std::fprintf(stderr,
                 "incident %s %s %s opened %.0f localized %s resolved %s conf %.4f loss %.4g\n",
                 inc.id.c_str(), analyzer::kindName(inc.kind), name.c_str(), inc.opened_at,
                 inc.localized_at ? std::to_string(*inc.localized_at).c_str() : "-",
                 inc.resolved_at ? std::to_string(*inc.resolved_at).c_str() : "-", inc.confidence,
                 inc.loss_ratio);
    link_incidents += inc.link != topology::kNone;
    localized_incidents += inc.localized_at.has_value();
    if (inc.link != topology::kNone && name == truth_link && inc.localized_at) {
      found = "yes";
      localized_at =
          std::isnan(localized_at) ? *inc.localized_at : std::min(localized_at, *inc.localized_at);
    }
  }
  std::fprintf(stderr, "truth: %s from %.0f s\n", truth_link.c_str(), onset);

  const double passes = static_cast<double>(timed.passes);
  const double cpu_passes = static_cast<double>(timed.pass_cpu_passes);
  // One JSON object on stdout (NaN, e.g. sim_alone_s without --count-first, is null).
  nlohmann::json out = {
      {"fabric", fabric},
      {"duration_s", sc.duration_s},
      {"flows", ss.flows},
      {"setup_s", secs(t0, t2)},
      {"sim_plus_engine_s", run_s},
      {"sim_alone_s", count_run_s},
      {"engine_s", engine_s},
      {"engine_pass_s", pass_s},
      {"engine_ingest_s", engine_s - pass_s},
      {"probe_records", ss.probe_records},
      {"records", ss.probe_records + ss.port_records + ss.lldp_records},
      {"engine_probe_records_per_s", static_cast<double>(st.probes) / engine_s},
      {"engine_ingest_only_records_per_s",
       static_cast<double>(st.probes + st.ports + st.lldp) / (engine_s - pass_s)},
      {"passes", timed.passes},
      {"pass_max_s", static_cast<double>(timed.max_pass_ticks) * tick_s},
      {"pass_max_at", timed.max_pass_at},
      {"pass_mean_s", passes > 0 ? pass_s / passes : 0.0},
      {"pass_p50_s", pct(0.5)},
      {"pass_p90_s", pct(0.9)},
      {"max_nonpass_call_ms", static_cast<double>(timed.max_other_ticks) * tick_s * 1e3},
      {"max_nonpass_call_at", timed.max_other_at},
      {"pass_cpu_passes", timed.pass_cpu_passes},
      {"pass_cpu_mean_s", cpu_passes > 0 ? timed.pass_cpu_s / cpu_passes : 0.0},
      {"pass_cpu_max_s", timed.max_pass_cpu_s},
      {"rss_before_engine_mib", rss_before_engine},
      {"rss_end_mib", currentRssMiB()},
      {"peak_rss_mib", peakRssMiB()},
      {"incidents", report.incidents.size()},
      {"link_incidents", link_incidents},
      {"localized_incidents", localized_incidents},
      {"fault_link", truth_link},
      {"fault_localized", found},
      {"localized_at", localized_at},
      {"onset", clean ? NAN : onset},
      {"clean", clean},
      {"one_way", one_way},
      {"prefetch_ahead", prefetch_ahead},
      // Tested from the first pass on: every directed link, every pass.
      {"directed_link_hours", static_cast<double>(topo->dirLinkCount()) * sc.duration_s / 3600.0},
      {"paging_bar_nats", analyzer::pagingBarNats(analyzer::EngineConfig{})}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
