// Property tests: seeded random mutations of valid lines never crash the
// reader, and every line is either a record, an unknown kind, blank, or
// reported bad under its own line number. Whatever the reader accepts, the
// writer writes back in a form the reader accepts again.

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "telemetry/jsonl.h"
#include "topology/generators.h"

namespace netdiag::telemetry {
namespace {

using topology::DirLinkId;
using topology::PortId;
using topology::Topology;

struct Collect : RecordSink {
  std::vector<ProbeRecord> probes;
  std::vector<PortRecord> ports;
  std::vector<LldpRecord> lldps;
  void onProbe(const ProbeRecord& r) override { probes.push_back(r); }
  void onPort(const PortRecord& r) override { ports.push_back(r); }
  void onLldp(const LldpRecord& r) override { lldps.push_back(r); }
  size_t size() const { return probes.size() + ports.size() + lldps.size(); }
};

const Topology& fabric() {
  static const Topology t = topology::generateLeafSpine(
      {.spines = 2, .leaves = 3, .hosts_per_leaf = 2, .nics_per_host = 1});
  return t;
}

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {
    const Topology& t = fabric();
    for (PortId p = 0; p < t.portCount(); ++p) {
      if (t.node(t.port(p).node).isHost()) hosts_.push_back(p);
    }
  }

  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool coin() { return pick(2) == 0; }

  // host -> leaf -> spine -> leaf -> host, with random ECMP choices.
  std::vector<DirLinkId> walk(PortId src, PortId& dst) {
    const Topology& t = fabric();
    std::vector<DirLinkId> path = {t.egressOf(src)};
    for (int hop = 0; hop < 3; ++hop) {
      topology::NodeId n = t.dirDstNode(path.back());
      std::vector<DirLinkId> next;
      for (DirLinkId d : t.outLinks(n)) {
        bool to_host = t.node(t.dirDstNode(d)).isHost();
        if (d != t.reverse(path.back()) && to_host == (hop == 2)) next.push_back(d);
      }
      path.push_back(next[pick(next.size())]);
    }
    dst = t.dirDstPort(path.back());
    return path;
  }

  std::string validLine() {
    std::ostringstream out;
    {
      JsonlWriter w(fabric(), out);
      const Topology& t = fabric();
      double time = static_cast<double>(pick(100000)) / 8;
      switch (pick(3)) {
        case 0: {
          ProbeRecord r;
          r.t = time;
          r.src = hosts_[pick(hosts_.size())];
          r.path = walk(r.src, r.dst);
          if (pick(4) == 0) r.path.clear();
          r.flow = pick(65536);
          r.sent = static_cast<uint32_t>(pick(100));
          r.lost = r.sent == 0 ? 0 : static_cast<uint32_t>(pick(r.sent + 1));
          if (coin()) {
            r.lost_fwd = static_cast<uint32_t>(pick(r.lost + 1));
            r.lost_rev = r.lost - *r.lost_fwd;
          }
          if (coin()) {
            r.rtt_us_p50 = static_cast<double>(pick(1000)) / 3;
            r.rtt_us_p99 = r.rtt_us_p50 * 2;
          }
          if (!r.path.empty() && coin()) {
            r.path.resize(1 + pick(r.path.size()));
            r.path_partial = true;
          }
          if (coin()) {
            PortId back = topology::kNone;
            r.reply_path = walk(r.dst, back);
            if (back != r.src) r.reply_path.clear();
          }
          w.onProbe(r);
          break;
        }
        case 1: {
          PortRecord r;
          r.t = time;
          r.port = static_cast<PortId>(pick(t.portCount()));
          if (coin()) r.oper_up = coin();
          if (coin()) r.rx_packets = rng_();
          if (coin()) r.rx_crc_errors = pick(10);
          if (coin()) r.tx_drops = pick(1000);
          w.onPort(r);
          break;
        }
        default: {
          LldpRecord r;
          r.t = time;
          r.port = static_cast<PortId>(pick(t.portCount()));
          r.neighbor = t.portRef(static_cast<PortId>(pick(t.portCount())));
          w.onLldp(r);
          break;
        }
      }
    }
    std::string line = out.str();
    line.pop_back();  // the '\n'
    return line;
  }

  // One to three random edits; never inserts '\n' (that would change the
  // line numbering the test checks).
  std::string mutate(std::string s) {
    static const std::vector<std::string> kTokens = {"\"",
                                                     "{",
                                                     "}",
                                                     "[",
                                                     "]",
                                                     ",",
                                                     ":",
                                                     "null",
                                                     "true",
                                                     "-1",
                                                     "1e999",
                                                     "0.5",
                                                     "18446744073709551616",
                                                     "\"h1:eth0\"",
                                                     "\"leaf1:swp1\"",
                                                     "\\",
                                                     "\\u0000",
                                                     "\\ud800",
                                                     std::string(1, '\0'),
                                                     "\xFF",
                                                     "\xC3",
                                                     "\r",
                                                     "\t",
                                                     " ",
                                                     "\"kind\":\"x\"",
                                                     "[[[[[[[["};
    int edits = 1 + static_cast<int>(pick(3));
    for (int e = 0; e < edits; ++e) {
      size_t at = s.empty() ? 0 : pick(s.size() + 1);
      switch (pick(7)) {
        case 0:  // flip a byte
          if (!s.empty() && at < s.size()) {
            char c = static_cast<char>(pick(256));
            s[at] = c == '\n' ? ' ' : c;
          }
          break;
        case 1:  // delete a range
          if (at < s.size()) s.erase(at, 1 + pick(std::min<size_t>(20, s.size() - at)));
          break;
        case 2:  // insert a token
          s.insert(at, kTokens[pick(kTokens.size())]);
          break;
        case 3:  // truncate
          s.resize(at);
          break;
        case 4: {  // duplicate a slice somewhere else
          if (s.empty()) break;
          size_t from = pick(s.size());
          std::string slice = s.substr(from, 1 + pick(30));
          s.insert(at, slice);
          break;
        }
        case 5: {  // change a digit
          size_t digit = s.find_first_of("0123456789", at);
          if (digit != std::string::npos) s[digit] = static_cast<char>('0' + pick(10));
          break;
        }
        default: {  // replace a port reference by another known or unknown one
          size_t colon = s.find(':', at);
          if (colon == std::string::npos) break;
          s.insert(colon, coin() ? "9" : "");
          break;
        }
      }
    }
    return s;
  }

 private:
  std::mt19937_64 rng_;
  std::vector<PortId> hosts_;
};

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r") == std::string::npos; }

TEST(JsonlFuzz, GeneratedLinesAreValid) {
  Generator gen(1);
  std::string text;
  for (int i = 0; i < 2000; ++i) text += gen.validLine() + "\n";
  std::istringstream in(text);
  Collect sink;
  ReadStats stats;
  EXPECT_TRUE(readJsonl(in, fabric(), sink, stats));
  EXPECT_EQ(stats.lines, 2000u);
  EXPECT_EQ(stats.records, 2000u);
  EXPECT_EQ(stats.bad, 0u) << (stats.first_bad.empty() ? "" : stats.first_bad[0].message);
}

TEST(JsonlFuzz, MutationsNeverCrashAndAreReportedOnTheirLine) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    Generator gen(seed);
    // Odd lines valid, even lines mutated.
    std::string text;
    std::vector<std::string> mutated;
    for (int i = 0; i < 500; ++i) {
      text += gen.validLine() + "\n";
      mutated.push_back(gen.mutate(gen.validLine()));
      text += mutated.back() + "\n";
    }
    size_t blanks = 0;
    for (const auto& m : mutated) blanks += blank(m) ? 1 : 0;

    std::istringstream in(text);
    Collect sink;
    ReadStats stats;
    EXPECT_TRUE(readJsonl(in, fabric(), sink, stats));
    EXPECT_EQ(stats.lines, 1000u);
    EXPECT_GE(stats.records, 500u);
    EXPECT_EQ(stats.records + stats.bad + stats.unknown_kind + blanks, stats.lines);
    EXPECT_EQ(sink.size(), stats.records);
    EXPECT_EQ(stats.first_bad.size(), stats.bad);
    for (const BadLine& b : stats.first_bad) {
      EXPECT_EQ(b.line % 2, 0u) << b.line << ": " << b.message;
      EXPECT_FALSE(b.message.empty());
    }
    // Each mutated line alone gives the same verdict as inside the file.
    size_t next_bad = 0;
    for (size_t i = 0; i < mutated.size(); ++i) {
      std::istringstream one(mutated[i]);
      Collect s1;
      ReadStats st1;
      readJsonl(one, fabric(), s1, st1);
      bool bad_in_file =
          next_bad < stats.first_bad.size() && stats.first_bad[next_bad].line == 2 * (i + 1);
      if (bad_in_file) {
        EXPECT_EQ(st1.bad, 1u) << mutated[i];
        if (!st1.first_bad.empty()) {
          EXPECT_EQ(st1.first_bad[0].message, stats.first_bad[next_bad].message);
        }
        ++next_bad;
      } else {
        EXPECT_EQ(st1.bad, 0u) << mutated[i];
      }
    }

    // Strict mode stops exactly at the first bad line.
    std::istringstream again(text);
    Collect strict_sink;
    ReadStats strict_stats;
    bool ok = readJsonl(again, fabric(), strict_sink, strict_stats, {.strict = true});
    EXPECT_EQ(ok, stats.bad == 0);
    if (stats.bad > 0) {
      ASSERT_EQ(strict_stats.first_bad.size(), 1u);
      EXPECT_EQ(strict_stats.first_bad[0].line, stats.first_bad[0].line);
      EXPECT_EQ(strict_stats.lines, stats.first_bad[0].line);
    }

    // Accepted records survive a write and a second read unchanged.
    std::ostringstream out;
    {
      JsonlWriter w(fabric(), out);
      for (const auto& r : sink.probes) w.onProbe(r);
      for (const auto& r : sink.ports) w.onPort(r);
      for (const auto& r : sink.lldps) w.onLldp(r);
    }
    std::istringstream back(out.str());
    Collect sink2;
    ReadStats stats2;
    EXPECT_TRUE(readJsonl(back, fabric(), sink2, stats2));
    EXPECT_EQ(stats2.bad, 0u) << (stats2.first_bad.empty() ? "" : stats2.first_bad[0].message);
    ASSERT_EQ(sink2.probes.size(), sink.probes.size());
    for (size_t i = 0; i < sink.probes.size(); ++i) {
      EXPECT_EQ(sink2.probes[i].path, sink.probes[i].path);
      EXPECT_EQ(sink2.probes[i].reply_path, sink.probes[i].reply_path);
      EXPECT_EQ(sink2.probes[i].lost, sink.probes[i].lost);
      EXPECT_EQ(sink2.probes[i].t, sink.probes[i].t);
    }
    ASSERT_EQ(sink2.lldps.size(), sink.lldps.size());
    for (size_t i = 0; i < sink.lldps.size(); ++i) {
      EXPECT_EQ(sink2.lldps[i].neighbor, sink.lldps[i].neighbor);
    }
  }
}

TEST(JsonlFuzz, RandomBytesNeverCrash) {
  std::mt19937_64 rng(99);
  for (int round = 0; round < 200; ++round) {
    std::string text(1 + rng() % 4000, '\0');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    std::istringstream in(text);
    Collect sink;
    ReadStats stats;
    readJsonl(in, fabric(), sink, stats);
    EXPECT_EQ(stats.first_bad.size(), std::min<uint64_t>(stats.bad, ReadStats::kMaxBadLinesKept));
    EXPECT_LE(stats.records + stats.bad + stats.unknown_kind, stats.lines);
  }
}

}  // namespace
}  // namespace netdiag::telemetry
