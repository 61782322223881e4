// Throughput of the telemetry log (formats.md §2): JsonlWriter and readJsonl
// on probe lines with 8-link paths over a rail-optimized fabric, plus the
// raw simdjson parse that decided between the DOM and On-Demand parsers.

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <simdjson.h>

#include "telemetry/jsonl.h"
#include "topology/generators.h"

namespace {

using namespace netdiag;
using topology::DirLinkId;
using topology::PortId;
using topology::Topology;

// 1 SU x 32 hosts x 8 rails, 8 spines, no cores: 256 host ports, 8 leaves.
const Topology& fabric() {
  static const Topology t = topology::generateRail(
      {.sus = 1, .hosts_per_su = 32, .rails = 8, .spines = 8, .leaf_uplinks = 32});
  return t;
}

// A chain of 8 directed links: host -> leaf -> spine -> leaf -> spine ->
// leaf -> spine -> leaf -> host. Not a shortest path, but a valid chain of
// topology links, which is all the reader checks; it gives 16 port refs.
std::vector<DirLinkId> walk8(std::mt19937_64& rng, PortId src) {
  const Topology& t = fabric();
  std::vector<DirLinkId> path = {t.egressOf(src)};
  while (path.size() < 8) {
    bool last = path.size() == 7;
    std::vector<DirLinkId> next;
    for (DirLinkId d : t.outLinks(t.dirDstNode(path.back()))) {
      if (d != t.reverse(path.back()) && t.node(t.dirDstNode(d)).isHost() == last) {
        next.push_back(d);
      }
    }
    path.push_back(next[rng() % next.size()]);
  }
  return path;
}

std::vector<telemetry::ProbeRecord> makeProbes(size_t n, bool with_path) {
  const Topology& t = fabric();
  std::vector<PortId> hosts;
  for (PortId p = 0; p < t.portCount(); ++p) {
    if (t.node(t.port(p).node).isHost()) hosts.push_back(p);
  }
  std::mt19937_64 rng(42);
  std::vector<telemetry::ProbeRecord> out(n);
  for (size_t i = 0; i < n; ++i) {
    telemetry::ProbeRecord& r = out[i];
    r.t = 1712345678.0 + static_cast<double>(i) * 0.01;
    r.src = hosts[rng() % hosts.size()];
    r.flow = 40000 + rng() % 1000;
    r.sent = 50;
    r.lost = static_cast<uint32_t>(rng() % 3);
    r.rtt_us_p50 = 11.0 + static_cast<double>(rng() % 100) / 10;
    r.rtt_us_p99 = 35.25;
    r.path = walk8(rng, r.src);
    r.dst = t.dirDstPort(r.path.back());
    if (!with_path) r.path.clear();
  }
  return out;
}

std::string writeAll(const std::vector<telemetry::ProbeRecord>& probes) {
  std::ostringstream out;
  telemetry::JsonlWriter w(fabric(), out);
  for (const auto& r : probes) w.onProbe(r);
  w.flush();
  return out.str();
}

const std::string& log(bool with_path) {
  static const std::string with = writeAll(makeProbes(100000, true));
  static const std::string without = writeAll(makeProbes(100000, false));
  return with_path ? with : without;
}

struct NullSink : telemetry::RecordSink {
  uint64_t n = 0;
  void onProbe(const telemetry::ProbeRecord& r) override { n += r.path.size(); }
  void onPort(const telemetry::PortRecord&) override { ++n; }
  void onLldp(const telemetry::LldpRecord&) override { ++n; }
};

// Writes into a null stream so only formatting is measured.
class NullBuf : public std::streambuf {
 protected:
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
  int_type overflow(int_type c) override { return c; }
};

void BM_WriteProbes8Hop(benchmark::State& state) {
  auto probes = makeProbes(10000, true);
  NullBuf nb;
  std::ostream out(&nb);
  telemetry::JsonlWriter w(fabric(), out);
  for (auto _ : state) {
    for (const auto& r : probes) w.onProbe(r);
  }
  w.flush();
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(probes.size()));
}
BENCHMARK(BM_WriteProbes8Hop);

void readBench(benchmark::State& state, bool with_path) {
  const std::string& text = log(with_path);
  uint64_t lines = 0;
  for (auto _ : state) {
    std::istringstream in(text);
    NullSink sink;
    telemetry::ReadStats stats;
    telemetry::readJsonl(in, fabric(), sink, stats);
    if (stats.bad != 0) state.SkipWithError("bad lines in the bench log");
    benchmark::DoNotOptimize(sink.n);
    lines += stats.lines;
  }
  state.SetItemsProcessed(static_cast<int64_t>(lines));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["bytes_per_line"] = static_cast<double>(text.size()) / 100000;
}

void BM_ReadProbes8Hop(benchmark::State& state) { readBench(state, true); }
BENCHMARK(BM_ReadProbes8Hop)->Unit(benchmark::kMillisecond);

void BM_ReadProbesNoPath(benchmark::State& state) { readBench(state, false); }
BENCHMARK(BM_ReadProbesNoPath)->Unit(benchmark::kMillisecond);

// The parser choice: DOM parse + walk of every field vs On-Demand walk of
// every field, one line at a time (as readJsonl does), no validation.
std::vector<simdjson::padded_string> splitLines(const std::string& text, size_t n) {
  std::vector<simdjson::padded_string> lines;
  size_t begin = 0;
  while (lines.size() < n) {
    size_t end = text.find('\n', begin);
    lines.emplace_back(text.data() + begin, end - begin);
    begin = end + 1;
  }
  return lines;
}

void BM_SimdjsonDomWalk(benchmark::State& state) {
  auto lines = splitLines(log(true), 20000);
  simdjson::dom::parser parser;
  for (auto _ : state) {
    size_t n = 0;
    for (const auto& line : lines) {
      simdjson::dom::element doc;
      if (parser.parse(line).get(doc)) state.SkipWithError("parse");
      simdjson::dom::object obj;
      if (doc.get_object().get(obj)) state.SkipWithError("object");
      for (auto kv : obj) {
        n += kv.key.size();
        simdjson::dom::array arr;
        if (kv.value.get_array().get(arr) == simdjson::SUCCESS) {
          for (auto e : arr) n += e.get_string().value_unsafe().size();
        }
      }
    }
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(lines.size()));
}
BENCHMARK(BM_SimdjsonDomWalk);

void BM_SimdjsonOnDemandWalk(benchmark::State& state) {
  auto lines = splitLines(log(true), 20000);
  simdjson::ondemand::parser parser;
  for (auto _ : state) {
    size_t n = 0;
    for (const auto& line : lines) {
      simdjson::ondemand::document doc;
      if (parser.iterate(line).get(doc)) state.SkipWithError("iterate");
      simdjson::ondemand::object obj;
      if (doc.get_object().get(obj)) state.SkipWithError("object");
      for (auto field : obj) {
        std::string_view key;
        if (field.unescaped_key().get(key)) state.SkipWithError("key");
        n += key.size();
        simdjson::ondemand::value v = field.value();
        simdjson::ondemand::json_type type = simdjson::ondemand::json_type::null;
        if (v.type().get(type)) state.SkipWithError("type");
        switch (type) {
          case simdjson::ondemand::json_type::array:
            for (auto e : v.get_array()) n += e.get_string().value_unsafe().size();
            break;
          case simdjson::ondemand::json_type::string:
            n += v.get_string().value_unsafe().size();
            break;
          case simdjson::ondemand::json_type::number:
            n += static_cast<size_t>(v.get_double().value_unsafe());
            break;
          default:
            break;
        }
      }
    }
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(lines.size()));
}
BENCHMARK(BM_SimdjsonOnDemandWalk);

}  // namespace

BENCHMARK_MAIN();
