#include "telemetry/jsonl.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <malloc.h>

#include "telemetry/record.h"
#include "topology/model.h"

namespace netdiag::telemetry {
namespace {

using topology::DirLinkId;
using topology::NodeId;
using topology::PortId;
using topology::Role;
using topology::Topology;

topology::Node makeNode(const std::string& name, Role role) {
  topology::Node n;
  n.name = name;
  n.role = role;
  n.role_name = std::string(topology::roleName(role));
  return n;
}

// The fabric of the contract's examples (formats.md §2):
//   h1:eth0 - leaf1:swp1, h2:eth0 - leaf1:swp2, h9:eth0 - leaf3:swp5,
//   leaf1:swp49 - spine2:swp1, leaf1:swp50 - spine1:swp1,
//   leaf3:swp49 - spine1:swp3, leaf3:swp50 - spine2:swp3,
// plus leaf1:swp10, a port no link uses.
Topology exampleFabric() {
  Topology t;
  NodeId h1 = t.addNode(makeNode("h1", Role::kHost));
  NodeId h2 = t.addNode(makeNode("h2", Role::kHost));
  NodeId h9 = t.addNode(makeNode("h9", Role::kHost));
  NodeId leaf1 = t.addNode(makeNode("leaf1", Role::kLeaf));
  NodeId leaf3 = t.addNode(makeNode("leaf3", Role::kLeaf));
  NodeId spine1 = t.addNode(makeNode("spine1", Role::kSpine));
  NodeId spine2 = t.addNode(makeNode("spine2", Role::kSpine));
  auto link = [&t](NodeId a, const char* pa, NodeId b, const char* pb) {
    t.addLink(t.addPort(a, pa), t.addPort(b, pb));
  };
  link(h1, "eth0", leaf1, "swp1");
  link(h2, "eth0", leaf1, "swp2");
  link(h9, "eth0", leaf3, "swp5");
  link(leaf1, "swp49", spine2, "swp1");
  link(leaf1, "swp50", spine1, "swp1");
  link(leaf3, "swp49", spine1, "swp3");
  link(leaf3, "swp50", spine2, "swp3");
  t.addPort(leaf1, "swp10");
  t.finalize();
  return t;
}

struct Collect : RecordSink {
  std::vector<ProbeRecord> probes;
  std::vector<PortRecord> ports;
  std::vector<LldpRecord> lldps;
  void onProbe(const ProbeRecord& r) override { probes.push_back(r); }
  void onPort(const PortRecord& r) override { ports.push_back(r); }
  void onLldp(const LldpRecord& r) override { lldps.push_back(r); }
};

class JsonlTest : public ::testing::Test {
 protected:
  Topology topo = exampleFabric();

  PortId port(const std::string& ref) const {
    auto p = topo.findPort(ref);
    EXPECT_TRUE(p.has_value()) << ref;
    return p.value_or(topology::kNone);
  }
  DirLinkId dir(const std::string& name) const {
    auto d = topo.findDirLink(name);
    EXPECT_TRUE(d.has_value()) << name;
    return d.value_or(topology::kNone);
  }
  // The contract example's forward path and its reverse.
  std::vector<DirLinkId> forward() const {
    return {dir("h1:eth0->leaf1:swp1"), dir("leaf1:swp49->spine2:swp1"),
            dir("spine2:swp3->leaf3:swp50"), dir("leaf3:swp5->h9:eth0")};
  }
  std::vector<DirLinkId> backward() const {
    return {dir("h9:eth0->leaf3:swp5"), dir("leaf3:swp49->spine1:swp3"),
            dir("spine1:swp1->leaf1:swp50"), dir("leaf1:swp1->h1:eth0")};
  }

  std::string write(const auto& fn) {
    std::ostringstream out;
    {
      JsonlWriter w(topo, out);
      fn(w);
    }
    return out.str();
  }

  ReadStats read(const std::string& text, Collect& sink, ReadOptions options = {},
                 bool* ok = nullptr) {
    std::istringstream in(text);
    ReadStats stats;
    bool result = readJsonl(in, topo, sink, stats, options);
    if (ok != nullptr) *ok = result;
    return stats;
  }

  // Reads one line that must be bad; returns its message.
  std::string badMessage(const std::string& line) {
    Collect sink;
    ReadStats stats = read(line + "\n", sink);
    EXPECT_EQ(stats.bad, 1u) << line;
    EXPECT_EQ(stats.records, 0u) << line;
    if (stats.first_bad.size() != 1) return "<no bad line>";
    EXPECT_EQ(stats.first_bad[0].line, 1u);
    return stats.first_bad[0].message;
  }
};

// ---------------------------------------------------------------- writer

TEST_F(JsonlTest, WritesProbeExactly) {
  ProbeRecord r;
  r.t = 30.0;
  r.src = port("h1:eth0");
  r.dst = port("h9:eth0");
  r.flow = 40001;
  r.sent = 50;
  r.lost = 1;
  r.rtt_us_p50 = 11.0;
  r.rtt_us_p99 = 35.5;
  r.path = forward();
  std::string text = write([&](JsonlWriter& w) { w.onProbe(r); });
  EXPECT_EQ(text,
            "{\"t\":30,\"kind\":\"probe\",\"src\":\"h1:eth0\",\"dst\":\"h9:eth0\",\"flow\":40001,"
            "\"window_s\":5,\"sent\":50,\"lost\":1,\"rtt_us_p50\":11,\"rtt_us_p99\":35.5,"
            "\"path\":[\"h1:eth0\",\"leaf1:swp1\",\"leaf1:swp49\",\"spine2:swp1\",\"spine2:swp3\","
            "\"leaf3:swp50\",\"leaf3:swp5\",\"h9:eth0\"]}\n");
}

TEST_F(JsonlTest, WritesOptionalProbeFieldsOnlyWhenSet) {
  ProbeRecord r;
  r.t = 0.1;
  r.src = port("h1:eth0");
  r.dst = port("h9:eth0");
  r.sent = 3;
  r.lost = 3;
  r.path_partial = true;  // ignored: no path
  std::string text = write([&](JsonlWriter& w) { w.onProbe(r); });
  EXPECT_EQ(text,
            "{\"t\":0.1,\"kind\":\"probe\",\"src\":\"h1:eth0\",\"dst\":\"h9:eth0\",\"flow\":0,"
            "\"window_s\":5,\"sent\":3,\"lost\":3}\n");

  r.lost_fwd = 2;
  r.lost_rev = 1;
  r.path = {dir("h1:eth0->leaf1:swp1"), dir("leaf1:swp49->spine2:swp1")};
  r.reply_path = backward();
  text = write([&](JsonlWriter& w) { w.onProbe(r); });
  EXPECT_NE(text.find("\"lost_fwd\":2,\"lost_rev\":1"), std::string::npos) << text;
  EXPECT_NE(text.find("\"path\":[\"h1:eth0\",\"leaf1:swp1\",\"leaf1:swp49\",\"spine2:swp1\"],"
                      "\"path_partial\":true"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("\"reply_path\":[\"h9:eth0\",\"leaf3:swp5\",\"leaf3:swp49\","
                "\"spine1:swp3\",\"spine1:swp1\",\"leaf1:swp50\",\"leaf1:swp1\",\"h1:eth0\"]"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("rtt"), std::string::npos);
}

TEST_F(JsonlTest, WritesPortAndLldp) {
  PortRecord p;
  p.t = 30;
  p.port = port("leaf1:swp49");
  p.oper_up = false;
  p.rx_packets = 981234;
  p.tx_drops = 12;
  p.carrier_changes = UINT64_MAX;
  LldpRecord l;
  l.t = 0;
  l.port = port("h1:eth0");
  l.neighbor = "leaf1:swp1";
  std::string text = write([&](JsonlWriter& w) {
    w.onPort(p);
    w.onLldp(l);
    EXPECT_EQ(w.linesWritten(), 2u);
  });
  EXPECT_EQ(text,
            "{\"t\":30,\"kind\":\"port\",\"port\":\"leaf1:swp49\",\"oper_up\":false,"
            "\"rx_packets\":981234,\"tx_drops\":12,\"carrier_changes\":18446744073709551615}\n"
            "{\"t\":0,\"kind\":\"lldp\",\"port\":\"h1:eth0\",\"neighbor\":\"leaf1:swp1\"}\n");
}

TEST_F(JsonlTest, EscapesStrings) {
  LldpRecord l;
  l.port = port("h1:eth0");
  l.neighbor = "a\"b\\c\nd\te\x01 \xC3\xA9 \xFF";
  l.neighbor += '\0';
  std::string text = write([&](JsonlWriter& w) { w.onLldp(l); });
  // Invalid UTF-8 (the lone 0xFF) becomes U+FFFD; valid UTF-8 stays as is.
  EXPECT_NE(text.find(std::string(R"("neighbor":"a\"b\\c\nd\te\u0001 )") + "\xC3\xA9 \xEF\xBF\xBD" +
                      R"(\u0000"})"),
            std::string::npos)
      << text;
}

TEST_F(JsonlTest, WriterFlushesInLargeChunksAndOnFlush) {
  std::ostringstream out;
  JsonlWriter w(topo, out);
  LldpRecord l;
  l.port = port("h1:eth0");
  l.neighbor = "x";
  w.onLldp(l);
  EXPECT_TRUE(out.str().empty());  // buffered
  w.flush();
  EXPECT_EQ(out.str().size(), 54u);
  for (int i = 0; i < 30000; ++i) w.onLldp(l);  // > 1 MiB
  EXPECT_GT(out.str().size(), 1000000u);
}

// ---------------------------------------------------------------- round trip

TEST_F(JsonlTest, RoundTripsEveryField) {
  std::vector<ProbeRecord> probes(3);
  probes[0].t = 1712345678.123456;
  probes[0].src = port("h1:eth0");
  probes[0].dst = port("h9:eth0");
  probes[0].flow = UINT64_MAX;
  probes[0].window_s = 0.25;
  probes[0].sent = UINT32_MAX;
  probes[0].lost = 7;
  probes[0].lost_fwd = 3;
  probes[0].lost_rev = 4;
  probes[0].rtt_us_p50 = 0.1;
  probes[0].rtt_us_p99 = 1e-7;
  probes[0].path = forward();
  probes[0].reply_path = backward();
  probes[1].t = -2.5;
  probes[1].src = port("h9:eth0");
  probes[1].dst = port("h2:eth0");
  probes[1].sent = 10;
  probes[1].lost = 10;
  probes[1].path = {dir("h9:eth0->leaf3:swp5"), dir("leaf3:swp49->spine1:swp3")};
  probes[1].path_partial = true;
  probes[2].src = port("h2:eth0");
  probes[2].dst = port("h1:eth0");
  probes[2].lost_fwd = 0;  // one side alone is kept as is
  probes[2].path = {dir("h2:eth0->leaf1:swp2"), dir("leaf1:swp1->h1:eth0")};
  PortRecord pr;
  pr.t = 3;
  pr.port = port("spine2:swp3");
  pr.oper_up = true;
  pr.rx_packets = 1;
  pr.tx_packets = 2;
  pr.rx_errors = 3;
  pr.rx_crc_errors = 4;
  pr.rx_drops = 5;
  pr.tx_drops = 6;
  pr.fec_uncorrectable = 7;
  pr.carrier_changes = 8;
  PortRecord bare;
  bare.port = port("leaf1:swp10");
  LldpRecord lr;
  lr.t = 4;
  lr.port = port("leaf3:swp50");
  lr.neighbor = "somewhere \"else\" \xE2\x82\xAC";

  std::string text = write([&](JsonlWriter& w) {
    for (const auto& p : probes) w.onProbe(p);
    w.onPort(pr);
    w.onPort(bare);
    w.onLldp(lr);
  });
  Collect sink;
  ReadStats stats = read(text, sink);
  EXPECT_EQ(stats.lines, 6u);
  EXPECT_EQ(stats.records, 6u);
  EXPECT_EQ(stats.bad, 0u) << (stats.first_bad.empty() ? "" : stats.first_bad[0].message);
  ASSERT_EQ(sink.probes.size(), 3u);
  for (size_t i = 0; i < probes.size(); ++i) {
    const ProbeRecord& a = probes[i];
    const ProbeRecord& b = sink.probes[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(a.t, b.t);
    EXPECT_EQ(a.src, b.src);
    EXPECT_EQ(a.dst, b.dst);
    EXPECT_EQ(a.flow, b.flow);
    EXPECT_EQ(a.window_s, b.window_s);
    EXPECT_EQ(a.sent, b.sent);
    EXPECT_EQ(a.lost, b.lost);
    EXPECT_EQ(a.lost_fwd, b.lost_fwd);
    EXPECT_EQ(a.lost_rev, b.lost_rev);
    EXPECT_EQ(a.hasRtt(), b.hasRtt());
    if (a.hasRtt()) {
      EXPECT_EQ(a.rtt_us_p50, b.rtt_us_p50);
      EXPECT_EQ(a.rtt_us_p99, b.rtt_us_p99);
    }
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.path_partial, b.path_partial);
    EXPECT_EQ(a.reply_path, b.reply_path);
  }
  ASSERT_EQ(sink.ports.size(), 2u);
  const PortRecord& p = sink.ports[0];
  EXPECT_EQ(p.t, 3);
  EXPECT_EQ(p.port, pr.port);
  EXPECT_EQ(p.oper_up, true);
  EXPECT_EQ(p.rx_packets, 1u);
  EXPECT_EQ(p.tx_packets, 2u);
  EXPECT_EQ(p.rx_errors, 3u);
  EXPECT_EQ(p.rx_crc_errors, 4u);
  EXPECT_EQ(p.rx_drops, 5u);
  EXPECT_EQ(p.tx_drops, 6u);
  EXPECT_EQ(p.fec_uncorrectable, 7u);
  EXPECT_EQ(p.carrier_changes, 8u);
  EXPECT_EQ(sink.ports[1].port, bare.port);
  EXPECT_FALSE(sink.ports[1].oper_up.has_value());
  EXPECT_FALSE(sink.ports[1].rx_packets.has_value());
  ASSERT_EQ(sink.lldps.size(), 1u);
  EXPECT_EQ(sink.lldps[0].port, lr.port);
  EXPECT_EQ(sink.lldps[0].neighbor, lr.neighbor);
}

TEST_F(JsonlTest, PartialPathEndingOnEgressPortRoundTrips) {
  // The contract list [h1:eth0, leaf1:swp1, leaf1:swp49] ends on an egress
  // port: the probe left leaf1 by swp49, which is the link it names.
  Collect sink;
  ReadStats stats =
      read(R"({"t":1,"kind":"probe","src":"h1:eth0","dst":"h9:eth0","flow":1,"sent":1,"lost":1,)"
           R"("path":["h1:eth0","leaf1:swp1","leaf1:swp49"],"path_partial":true})",
           sink);
  ASSERT_EQ(stats.records, 1u) << (stats.first_bad.empty() ? "" : stats.first_bad[0].message);
  std::vector<DirLinkId> want = {dir("h1:eth0->leaf1:swp1"), dir("leaf1:swp49->spine2:swp1")};
  EXPECT_EQ(sink.probes[0].path, want);
  EXPECT_TRUE(sink.probes[0].path_partial);
  // Written back, the path names both ends of its last link.
  std::string text = write([&](JsonlWriter& w) { w.onProbe(sink.probes[0]); });
  EXPECT_NE(text.find(R"("path":["h1:eth0","leaf1:swp1","leaf1:swp49","spine2:swp1"],)"
                      R"("path_partial":true)"),
            std::string::npos)
      << text;
}

// ---------------------------------------------------------------- contract examples

TEST_F(JsonlTest, ParsesTheContractExamples) {
  const std::string log =
      R"({"t": 30.0, "kind": "probe", "src": "h1:eth0", "dst": "h9:eth0", "flow": 40001,)"
      R"( "window_s": 5, "sent": 50, "lost": 1, "rtt_us_p50": 11.0, "rtt_us_p99": 35.0,)"
      R"( "path": ["h1:eth0", "leaf1:swp1", "leaf1:swp49", "spine2:swp1", "spine2:swp3",)"
      R"( "leaf3:swp50", "leaf3:swp5", "h9:eth0"]})"
      "\n"
      R"({"t": 30.0, "kind": "port", "port": "leaf1:swp49", "oper_up": true,)"
      R"( "rx_packets": 981234, "tx_packets": 975521, "rx_errors": 0, "rx_crc_errors": 0,)"
      R"( "rx_drops": 0, "tx_drops": 12, "fec_uncorrectable": 0, "carrier_changes": 2})"
      "\n"
      R"({"t": 0.0, "kind": "lldp", "port": "h1:eth0", "neighbor": "leaf1:swp1"})"
      "\n";
  Collect sink;
  ReadStats stats = read(log, sink);
  EXPECT_EQ(stats.lines, 3u);
  EXPECT_EQ(stats.records, 3u);
  EXPECT_EQ(stats.bad, 0u) << (stats.first_bad.empty() ? "" : stats.first_bad[0].message);
  ASSERT_EQ(sink.probes.size(), 1u);
  const ProbeRecord& p = sink.probes[0];
  EXPECT_EQ(p.t, 30.0);
  EXPECT_EQ(p.src, port("h1:eth0"));
  EXPECT_EQ(p.dst, port("h9:eth0"));
  EXPECT_EQ(p.flow, 40001u);
  EXPECT_EQ(p.window_s, 5.0);
  EXPECT_EQ(p.sent, 50u);
  EXPECT_EQ(p.lost, 1u);
  EXPECT_EQ(p.rtt_us_p50, 11.0);
  EXPECT_EQ(p.rtt_us_p99, 35.0);
  EXPECT_EQ(p.path, forward());
  EXPECT_FALSE(p.path_partial);
  EXPECT_TRUE(p.reply_path.empty());
  EXPECT_FALSE(p.hasOneWay());
  ASSERT_EQ(sink.ports.size(), 1u);
  EXPECT_EQ(sink.ports[0].port, port("leaf1:swp49"));
  EXPECT_EQ(sink.ports[0].oper_up, true);
  EXPECT_EQ(sink.ports[0].rx_packets, 981234u);
  EXPECT_EQ(sink.ports[0].tx_packets, 975521u);
  EXPECT_EQ(sink.ports[0].rx_errors, 0u);
  EXPECT_EQ(sink.ports[0].tx_drops, 12u);
  EXPECT_EQ(sink.ports[0].carrier_changes, 2u);
  ASSERT_EQ(sink.lldps.size(), 1u);
  EXPECT_EQ(sink.lldps[0].neighbor, "leaf1:swp1");
}

TEST_F(JsonlTest, DefaultsAndLeniencies) {
  Collect sink;
  ReadStats stats = read(
      // no window_s, null optionals, integral doubles, unknown fields, any key order
      R"({"extra":{"deep":[1,[2,{"x":null}]]},"lost":0.0,"sent":4.0,"flow":7,"dst":"h2:eth0",)"
      R"("src":"h1:eth0","kind":"probe","t":12,"rtt_us_p50":null,"path":null,"lost_fwd":null})"
      "\n"
      // lldp neighbour the topology does not know is evidence, not a bad record
      R"({"t":1,"kind":"lldp","port":"leaf1:swp10","neighbor":"rogue-switch:Ethernet7"})",
      sink);
  EXPECT_EQ(stats.bad, 0u) << (stats.first_bad.empty() ? "" : stats.first_bad[0].message);
  ASSERT_EQ(sink.probes.size(), 1u);
  EXPECT_EQ(sink.probes[0].window_s, kDefaultWindowS);
  EXPECT_EQ(sink.probes[0].sent, 4u);
  EXPECT_FALSE(sink.probes[0].hasRtt());
  EXPECT_TRUE(sink.probes[0].path.empty());
  ASSERT_EQ(sink.lldps.size(), 1u);
  EXPECT_EQ(sink.lldps[0].neighbor, "rogue-switch:Ethernet7");
}

// ---------------------------------------------------------------- framing

TEST_F(JsonlTest, BlankLinesCrlfBomAndNoFinalNewline) {
  const std::string lldp = R"({"t":1,"kind":"lldp","port":"h1:eth0","neighbor":"x"})";
  Collect sink;
  ReadStats stats = read("\xEF\xBB\xBF" + lldp + "\r\n\r\n   \n\t\n" + lldp + "\r\n" + lldp, sink);
  EXPECT_EQ(stats.lines, 6u);
  EXPECT_EQ(stats.records, 3u);
  EXPECT_EQ(stats.bad, 0u) << (stats.first_bad.empty() ? "" : stats.first_bad[0].message);
  stats = read("", sink);
  EXPECT_EQ(stats.lines, 0u);
}

TEST_F(JsonlTest, LongLinesAndChunkBoundaries) {
  // Lines close to the length limit, and many lines straddling reads.
  std::string big(kMaxLineBytes - 100, 'y');
  std::string text = R"({"t":1,"kind":"lldp","port":"h1:eth0","neighbor":")" + big + "\"}\n";
  const std::string probe =
      R"({"t":2,"kind":"probe","src":"h1:eth0","dst":"h9:eth0","flow":1,"sent":5,"lost":0,)"
      R"("path":["h1:eth0","leaf1:swp1","leaf1:swp49","spine2:swp1","spine2:swp3",)"
      R"("leaf3:swp50","leaf3:swp5","h9:eth0"]})";
  for (int i = 0; i < 20000; ++i) text += probe + "\n";
  text += R"({"t":3,"kind":"lldp","port":"h1:eth0","neighbor":")" + big + "\"}";
  text += "\n{\"t\":4}\n";  // bad: its number must still be right
  Collect sink;
  ReadStats stats = read(text, sink);
  EXPECT_EQ(stats.lines, 20003u);
  EXPECT_EQ(stats.records, 20002u);
  ASSERT_EQ(sink.lldps.size(), 2u);
  EXPECT_EQ(sink.lldps[0].neighbor, big);
  EXPECT_EQ(sink.lldps[1].neighbor, big);
  EXPECT_EQ(sink.probes.size(), 20000u);
  EXPECT_EQ(sink.probes.back().path, forward());
  ASSERT_EQ(stats.first_bad.size(), 1u);
  EXPECT_EQ(stats.first_bad[0].line, 20003u);
}

// A stream of `size` bytes of 'x' and then `tail`, made as it is read.
class GeneratedStream : public std::streambuf {
 public:
  GeneratedStream(size_t size, std::string tail) : left_(size), tail_(std::move(tail)) {}

 private:
  int_type underflow() override {
    if (left_ > 0) {
      size_t n = std::min(left_, chunk_.size());
      left_ -= n;
      setg(chunk_.data(), chunk_.data(), chunk_.data() + n);
    } else if (!tail_done_) {
      tail_done_ = true;
      setg(tail_.data(), tail_.data(), tail_.data() + tail_.size());
      if (tail_.empty()) return traits_type::eof();
    } else {
      return traits_type::eof();
    }
    return traits_type::to_int_type(*gptr());
  }
  size_t left_;
  std::string tail_;
  bool tail_done_ = false;
  std::string chunk_ = std::string(64 << 10, 'x');
};

size_t heapInUse() {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

TEST_F(JsonlTest, TooLongLineIsBadAndSkippedWithoutHoldingIt) {
  // 64 MiB without a newline, then a good record: the long line is line 1,
  // bad, and never held whole (the reader stays near 2 x kMaxLineBytes).
  struct Probe : Collect {
    size_t heap_at_record = 0;
    void onLldp(const LldpRecord& r) override {
      heap_at_record = heapInUse();
      Collect::onLldp(r);
    }
  } sink;
  GeneratedStream gen(size_t{64} << 20,
                      "\n{\"t\":1,\"kind\":\"lldp\",\"port\":\"h1:eth0\",\"neighbor\":\"x\"}\n");
  std::istream in(&gen);
  ReadStats stats;
  [[maybe_unused]] const size_t before = heapInUse();
  EXPECT_TRUE(readJsonl(in, topo, sink, stats));
  EXPECT_EQ(stats.lines, 2u);
  EXPECT_EQ(stats.records, 1u);
  EXPECT_EQ(stats.bad, 1u);
  ASSERT_EQ(stats.first_bad.size(), 1u);
  EXPECT_EQ(stats.first_bad[0].line, 1u);
  EXPECT_NE(stats.first_bad[0].message.find("line longer than 1048576 bytes"), std::string::npos)
      << stats.first_bad[0].message;
  ASSERT_EQ(sink.lldps.size(), 1u);
#if !defined(__SANITIZE_ADDRESS__)  // ASan's allocator is not glibc's: no figures
  EXPECT_LT(sink.heap_at_record - std::min(before, sink.heap_at_record), size_t{16} << 20);
#endif
}

TEST_F(JsonlTest, LineLengthLimitIsExact) {
  const std::string rec = R"({"t":1,"kind":"lldp","port":"h1:eth0","neighbor":"x"})";
  std::string at_limit = rec + std::string(kMaxLineBytes - rec.size(), ' ');
  std::string over = at_limit + ' ';
  Collect sink;
  // At the limit it is read; one byte more is bad, also as the last line
  // without a newline and when it ends in the same read as the line after.
  ReadStats stats = read(at_limit + "\n" + over + "\n" + rec + "\n" + over, sink);
  EXPECT_EQ(stats.lines, 4u);
  EXPECT_EQ(stats.records, 2u);
  ASSERT_EQ(stats.first_bad.size(), 2u);
  EXPECT_EQ(stats.first_bad[0].line, 2u);
  EXPECT_EQ(stats.first_bad[1].line, 4u);
  // Strict: the first too-long line stops the read.
  bool ok = true;
  Collect strict;
  stats = read(rec + "\n" + over + "\n" + rec + "\n", strict, {.strict = true}, &ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(strict.lldps.size(), 1u);
  ASSERT_EQ(stats.first_bad.size(), 1u);
  EXPECT_EQ(stats.first_bad[0].line, 2u);
}

TEST_F(JsonlTest, ImplausibleProbeCountIsKeptCountedAndReported) {
  const std::string head = R"({"t":1,"kind":"probe","src":"h1:eth0","dst":"h9:eth0","flow":1,)";
  Collect sink;
  ReadStats stats = read(
      head + R"("sent":1000000,"lost":0})" + "\n" + head + R"("sent":4294967295,"lost":1})" + "\n",
      sink, {.strict = true});
  EXPECT_EQ(stats.records, 2u);  // the contract allows it: kept, even when strict
  EXPECT_EQ(stats.bad, 0u);
  ASSERT_EQ(sink.probes.size(), 2u);
  EXPECT_EQ(sink.probes[1].sent, 4294967295u);
  EXPECT_EQ(stats.implausible, 1u);
  ASSERT_EQ(stats.first_implausible.size(), 1u);
  EXPECT_EQ(stats.first_implausible[0].line, 2u);
  EXPECT_NE(stats.first_implausible[0].message.find("'sent' 4294967295"), std::string::npos)
      << stats.first_implausible[0].message;
  EXPECT_NE(stats.first_implausible[0].message.find("limit of 1000000"), std::string::npos);
}

// ---------------------------------------------------------------- validation

constexpr const char* kProbeHead = R"({"t":1,"kind":"probe","src":"h1:eth0","dst":"h9:eth0",)";

TEST_F(JsonlTest, RejectsInvalidJson) {
  EXPECT_NE(badMessage(R"({"t":1,"kind":"lldp")").find("invalid JSON: "), std::string::npos);
  EXPECT_NE(badMessage(R"({"t":1,"kind":"lldp","port":"h1:eth0","neighbor":"x"} trailing)")
                .find("invalid JSON"),
            std::string::npos);
  EXPECT_NE(badMessage(R"({"t":1,"kind":"lldp","port":"h1:eth0","neighbor":"x","z":[1,,2]})")
                .find("invalid JSON"),
            std::string::npos);
  EXPECT_NE(badMessage("{\"t\":1,\"kind\":\"lldp\",\"port\":\"h1:eth0\",\"neighbor\":\"\xFF\"}")
                .find("invalid JSON"),
            std::string::npos);
  std::string nul = R"({"t":1,"kind":"lldp","port":"h1:eth0","neighbor":"a)";
  nul += '\0';
  nul += "b\"}";
  EXPECT_NE(badMessage(nul).find("invalid JSON"), std::string::npos);
  EXPECT_NE(badMessage(std::string(R"({"t":1,"kind":"lldp","port":"h1:eth0")") + '\0' + "}")
                .find("invalid JSON"),
            std::string::npos);
  EXPECT_NE(badMessage(std::string(5000, '[') + std::string(5000, ']')).find("invalid JSON"),
            std::string::npos);
  EXPECT_NE(badMessage(R"({"t":1e999,"kind":"lldp"})").find("invalid JSON"), std::string::npos);
  EXPECT_NE(badMessage(R"([1,2])").find("not a JSON object"), std::string::npos);
  EXPECT_NE(badMessage(R"("probe")").find("not a JSON object"), std::string::npos);
}

TEST_F(JsonlTest, RejectsMissingOrMistypedTAndKind) {
  EXPECT_EQ(badMessage(R"({"kind":"lldp","port":"h1:eth0","neighbor":"x"})"), "missing 't'");
  EXPECT_NE(badMessage(R"({"t":"5","kind":"lldp"})").find("'t' must be a number, got '5'"),
            std::string::npos);
  EXPECT_EQ(badMessage(R"({"t":5})"), "missing 'kind'");
  EXPECT_NE(badMessage(R"({"t":5,"kind":7})").find("'kind' must be a string, got 7"),
            std::string::npos);
}

TEST_F(JsonlTest, MessagesEscapeControlAndBidiCharacters) {
  // U+202E (right-to-left override) is valid UTF-8, so JSON escaping keeps
  // it; it must still not reach the terminal raw. ESC arrives as \u001b.
  std::string msg =
      badMessage(R"({"t":1,"kind":"probe","src":"h1\u202E:eth0\u001b[2J","dst":"h9:eth0","flow":1,)"
                 R"("sent":1,"lost":0})");
  EXPECT_EQ(msg.find("\xE2\x80\xAE"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
  EXPECT_EQ(msg, "probe: unknown port 'h1\\u202e:eth0\\u001b[2J' in 'src'");
  // Raw bytes in the line are no different from escaped ones.
  msg = badMessage("{\"t\":1,\"kind\":\"lldp\",\"port\":\"x\xE2\x81\xA6y\",\"neighbor\":\"a\"}");
  EXPECT_EQ(msg, "lldp: unknown port 'x\\u2066y' in 'port'");
}

TEST_F(JsonlTest, RejectsUnknownPorts) {
  EXPECT_EQ(
      badMessage(
          R"({"t":1,"kind":"probe","src":"leaf9:swp1","dst":"h9:eth0","flow":1,"sent":1,"lost":0})"),
      "probe: unknown port 'leaf9:swp1' in 'src'");
  EXPECT_NE(
      badMessage(R"({"t":1,"kind":"probe","src":"h1:eth0","dst":"h9","flow":1,"sent":1,"lost":0})")
          .find("unknown port 'h9' in 'dst'"),
      std::string::npos);
  EXPECT_NE(badMessage(R"({"t":1,"kind":"probe","dst":"h9:eth0","flow":1,"sent":1,"lost":0})")
                .find("missing 'src'"),
            std::string::npos);
  EXPECT_NE(badMessage(R"({"t":1,"kind":"port","port":"nope:swp1"})")
                .find("port: unknown port 'nope:swp1' in 'port'"),
            std::string::npos);
  EXPECT_NE(badMessage(R"({"t":1,"kind":"port","port":3})").find("'port' must be a string, got 3"),
            std::string::npos);
  EXPECT_NE(badMessage(R"({"t":1,"kind":"lldp","port":"x:y","neighbor":"a"})")
                .find("lldp: unknown port 'x:y' in 'port'"),
            std::string::npos);
  EXPECT_NE(
      badMessage(R"({"t":1,"kind":"lldp","port":"h1:eth0"})").find("lldp: missing 'neighbor'"),
      std::string::npos);
  EXPECT_NE(badMessage(R"({"t":1,"kind":"lldp","port":"h1:eth0","neighbor":null})")
                .find("'neighbor' must be a string, got null"),
            std::string::npos);
}

TEST_F(JsonlTest, RejectsBadProbeNumbers) {
  auto probe = [](const std::string& rest) { return kProbeHead + rest + "}"; };
  EXPECT_NE(badMessage(probe(R"("sent":5,"lost":0)")).find("missing 'flow'"), std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":-1,"sent":5,"lost":0)"))
                .find("'flow' must be a non-negative integer, got -1"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":1.5,"sent":5,"lost":0)")).find("'flow'"), std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":"1","sent":5,"lost":0)")).find("got '1'"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":1,"window_s":0,"sent":5,"lost":0)"))
                .find("'window_s' must be a positive number, got 0"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":1,"window_s":"5","sent":5,"lost":0)"))
                .find("'window_s' must be a number"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":1,"lost":0)")).find("missing 'sent'"), std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":1,"sent":5)")).find("missing 'lost'"), std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":1,"sent":-5,"lost":0)"))
                .find("'sent' must be a non-negative integer"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":1,"sent":5000000000,"lost":0)"))
                .find("'sent' 5000000000 is out of range"),
            std::string::npos);
  EXPECT_EQ(badMessage(probe(R"("flow":1,"sent":5,"lost":7)")), "probe: 'lost' 7 > 'sent' 5");
  EXPECT_NE(badMessage(probe(R"("flow":1,"sent":5,"lost":3,"lost_fwd":1,"lost_rev":1)"))
                .find("'lost_fwd' 1 + 'lost_rev' 1 != 'lost' 3"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":1,"sent":5,"lost":3,"lost_fwd":-1,"lost_rev":4)"))
                .find("'lost_fwd' must be a non-negative integer, got -1"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":1,"sent":5,"lost":3,"lost_rev":4)"))
                .find("'lost_rev' 4 > 'lost' 3"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":1,"sent":5,"lost":0,"rtt_us_p50":"fast")"))
                .find("'rtt_us_p50' must be a number, got 'fast'"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":1,"sent":5,"lost":0,"rtt_us_p99":-3.5)"))
                .find("'rtt_us_p99' must be a non-negative number, got -3.5"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("flow":1,"sent":5,"lost":0,"path_partial":1)"))
                .find("'path_partial' must be true or false, got 1"),
            std::string::npos);
}

TEST_F(JsonlTest, RejectsBadPaths) {
  auto probe = [](const std::string& path) {
    return kProbeHead + std::string(R"("flow":1,"sent":5,"lost":0,)") + path + "}";
  };
  EXPECT_NE(badMessage(probe(R"("path":"h1:eth0")"))
                .find("'path' must be an array of port references, got 'h1:eth0'"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("path":["h1:eth0",5])")).find("path: element 1 must be a port"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("path":["h2:eth0","leaf1:swp2"],"path_partial":true)"))
                .find("path: starts at 'h2:eth0', not at 'h1:eth0'"),
            std::string::npos);
  EXPECT_NE(
      badMessage(
          probe(
              R"("path":["h1:eth0","leaf1:swp1","leaf1:swp49","spine2:swp3"],"path_partial":true)"))
          .find("path: 'leaf1:swp49' -> 'spine2:swp3' is not a link of the topology"),
      std::string::npos);
  EXPECT_NE(
      badMessage(
          probe(
              R"("path":["h1:eth0","leaf1:swp1","leaf1:swp49","spine9:swp3"],"path_partial":true)"))
          .find("unknown port 'spine9:swp3' in 'path'"),
      std::string::npos);
  EXPECT_NE(
      badMessage(probe(R"("path":["h1:eth0","leaf1:swp1","spine2:swp1"],"path_partial":true)"))
          .find("'leaf1:swp1' -> 'spine2:swp1': ingress and egress of a hop must be ports of one "
                "node"),
      std::string::npos);
  EXPECT_NE(badMessage(probe(R"("path":["h1:eth0","leaf1:swp1","leaf1:swp1"],"path_partial":true)"))
                .find("'leaf1:swp1' is both ingress and egress"),
            std::string::npos);
  EXPECT_NE(
      badMessage(probe(R"("path":["h1:eth0","leaf1:swp1","leaf1:swp10"],"path_partial":true)"))
          .find("port 'leaf1:swp10' has no link"),
      std::string::npos);
  // A complete path must reach dst.
  EXPECT_NE(badMessage(probe(R"("path":["h1:eth0","leaf1:swp1","leaf1:swp2","h2:eth0"])"))
                .find("path: ends at 'h2:eth0', not at 'h9:eth0'"),
            std::string::npos);
  EXPECT_NE(badMessage(probe(R"("path":["h1:eth0","leaf1:swp1","leaf1:swp49"])"))
                .find("path: ends at egress port 'leaf1:swp49'"),
            std::string::npos);
  // reply_path runs from dst to src and has no partial form.
  EXPECT_NE(badMessage(probe(R"("reply_path":["h1:eth0","leaf1:swp1"])"))
                .find("reply_path: starts at 'h1:eth0', not at 'h9:eth0'"),
            std::string::npos);
  EXPECT_NE(
      badMessage(
          probe(
              R"("reply_path":["h9:eth0","leaf3:swp5","leaf3:swp49","spine1:swp3"],"path_partial":true)"))
          .find("reply_path: ends at 'spine1:swp3', not at 'h1:eth0'"),
      std::string::npos);
  EXPECT_NE(
      badMessage(probe(R"("reply_path":["h9:eth0","leaf3:swp5","leaf3:swp50","spine1:swp3"])"))
          .find("reply_path: 'leaf3:swp50' -> 'spine1:swp3' is not a link"),
      std::string::npos);
}

// Keys are told apart by length, first and last letter, then compared:
// a key that shares all three with a known one is still unknown.
TEST_F(JsonlTest, KeysLikeKnownOnesAreIgnored) {
  Collect sink;
  ReadStats stats =
      read(R"({"t":1,"kind":"probe","src":"h1:eth0","dst":"h9:eth0","flow":1,"sent":5,"lost":0,)"
           R"("sunt":9,"lant":9,"sxc":"x","pxxh":[1],"rtt_us_pX0":-1,"kinD":"lldp","":0,"t ":"x"})"
           "\n",
           sink);
  EXPECT_EQ(stats.bad, 0u);
  ASSERT_EQ(sink.probes.size(), 1u);
  EXPECT_EQ(sink.probes[0].sent, 5u);
  EXPECT_EQ(sink.probes[0].lost, 0u);
  EXPECT_TRUE(std::isnan(sink.probes[0].rtt_us_p50));
}

// Port references longer than the 48 bytes the reader's index keeps in
// place resolve and compare in full, in src, dst, path and reply_path.
TEST(JsonlLongNames, PathsOfLongNamesResolve) {
  Topology t;
  const std::string pre(50, 'n');
  NodeId h1 = t.addNode(makeNode(pre + "h1", Role::kHost));
  NodeId h2 = t.addNode(makeNode(pre + "h2", Role::kHost));
  NodeId l1 = t.addNode(makeNode(pre + "l1", Role::kLeaf));
  t.addLink(t.addPort(h1, "eth0"), t.addPort(l1, "swp1"));
  t.addLink(t.addPort(h2, "eth0"), t.addPort(l1, "swp2"));
  t.finalize();
  auto ref = [&pre](const char* r) { return "\"" + pre + r + "\""; };
  const std::string head = R"({"t":1,"kind":"probe","flow":1,"sent":5,"lost":0,"src":)" +
                           ref("h1:eth0") + R"(,"dst":)" + ref("h2:eth0") + ",";
  const std::string good = head + R"("path":[)" + ref("h1:eth0") + "," + ref("l1:swp1") + "," +
                           ref("l1:swp2") + "," + ref("h2:eth0") + R"(],"reply_path":[)" +
                           ref("h2:eth0") + "," + ref("l1:swp2") + "," + ref("l1:swp1") + "," +
                           ref("h1:eth0") + "]}\n";
  // The same with the last byte of the ingress port changed: past the head.
  const std::string bad = head + R"("path":[)" + ref("h1:eth0") + "," + ref("l1:swp2") + "," +
                          ref("l1:swp1") + "," + ref("h2:eth0") + "]}\n";
  std::istringstream in(good + bad);
  Collect sink;
  ReadStats stats;
  ASSERT_TRUE(readJsonl(in, t, sink, stats));
  ASSERT_EQ(sink.probes.size(), 1u);
  EXPECT_EQ(sink.probes[0].path.size(), 2u);
  EXPECT_EQ(sink.probes[0].reply_path.size(), 2u);
  ASSERT_EQ(stats.first_bad.size(), 1u);
  EXPECT_EQ(stats.first_bad[0].line, 2u);
  EXPECT_NE(stats.first_bad[0].message.find("is not a link of the topology"), std::string::npos)
      << stats.first_bad[0].message;
}

TEST_F(JsonlTest, RejectsBadPortCounters) {
  EXPECT_NE(badMessage(R"({"t":1,"kind":"port","port":"h1:eth0","rx_errors":-1})")
                .find("port: 'rx_errors' must be a non-negative integer, got -1"),
            std::string::npos);
  EXPECT_NE(badMessage(R"({"t":1,"kind":"port","port":"h1:eth0","tx_drops":1.5})")
                .find("'tx_drops' must be a non-negative integer, got 1.5"),
            std::string::npos);
  EXPECT_NE(badMessage(R"({"t":1,"kind":"port","port":"h1:eth0","oper_up":"up"})")
                .find("'oper_up' must be true or false, got 'up'"),
            std::string::npos);
  // uint64 counters take the full range; beyond it is not a number simdjson keeps.
  Collect sink;
  ReadStats stats =
      read(R"({"t":1,"kind":"port","port":"h1:eth0","rx_packets":18446744073709551615})", sink);
  EXPECT_EQ(stats.bad, 0u);
  ASSERT_EQ(sink.ports.size(), 1u);
  EXPECT_EQ(sink.ports[0].rx_packets, UINT64_MAX);
  EXPECT_EQ(
      badMessage(R"({"t":1,"kind":"port","port":"h1:eth0","rx_packets":18446744073709551616})")
          .rfind("invalid JSON", 0),
      0u);
}

TEST_F(JsonlTest, LongValuesAreCutInMessages) {
  std::string msg =
      badMessage(R"({"t":1,"kind":"port","port":")" + std::string(10000, 'z') + "\"}");
  EXPECT_LT(msg.size(), 200u);
  EXPECT_NE(msg.find("zzz...'"), std::string::npos);
}

// ---------------------------------------------------------------- stats and modes

TEST_F(JsonlTest, UnknownKindIsCountedNotBad) {
  Collect sink;
  ReadStats stats = read(
      "{\"t\":1,\"kind\":\"bgp\",\"peer\":\"x\"}\n"
      "{\"t\":2,\"kind\":\"lldp\",\"port\":\"h1:eth0\",\"neighbor\":\"x\"}\n",
      sink);
  EXPECT_EQ(stats.lines, 2u);
  EXPECT_EQ(stats.unknown_kind, 1u);
  EXPECT_EQ(stats.bad, 0u);
  EXPECT_EQ(stats.records, 1u);
}

TEST_F(JsonlTest, ReportsLineNumbersAndContinues) {
  const std::string good = R"({"t":2,"kind":"lldp","port":"h1:eth0","neighbor":"x"})";
  Collect sink;
  bool ok = false;
  ReadStats stats =
      read(good + "\n\nnot json\n" + good + "\n{\"t\":1}\n" + good + "\n", sink, {}, &ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(stats.lines, 6u);
  EXPECT_EQ(stats.records, 3u);
  EXPECT_EQ(stats.bad, 2u);
  ASSERT_EQ(stats.first_bad.size(), 2u);
  EXPECT_EQ(stats.first_bad[0].line, 3u);
  EXPECT_EQ(stats.first_bad[0].message.rfind("invalid JSON: ", 0), 0u);
  EXPECT_EQ(stats.first_bad[1].line, 5u);
  EXPECT_EQ(stats.first_bad[1].message, "missing 'kind'");
}

TEST_F(JsonlTest, StrictStopsAtFirstBadLine) {
  const std::string good = R"({"t":2,"kind":"lldp","port":"h1:eth0","neighbor":"x"})";
  Collect sink;
  bool ok = true;
  ReadStats stats =
      read(good + "\n{\"t\":1,\"kind\":\"zzz\"}\n" + good + "\n{\"t\":\"x\"}\n" + good + "\n", sink,
           {.strict = true}, &ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(stats.lines, 4u);
  EXPECT_EQ(stats.records, 2u);
  EXPECT_EQ(stats.unknown_kind, 1u);  // not fatal, even when strict
  EXPECT_EQ(stats.bad, 1u);
  ASSERT_EQ(stats.first_bad.size(), 1u);
  EXPECT_EQ(stats.first_bad[0].line, 4u);
  EXPECT_EQ(sink.lldps.size(), 2u);
}

// A log has no clock but its own: a record far beyond the newest t read so
// far is skipped and counted with its line, so one bad clock cannot move the
// log's time for every record after it. Old records stay (formats.md §2).
TEST_F(JsonlTest, RecordsFarBeyondTheNewestTimeAreCountedAsFutureAndSkipped) {
  auto lldp = [](const std::string& t) {
    return R"({"t":)" + t + R"(,"kind":"lldp","port":"h1:eth0","neighbor":"x"})" + "\n";
  };
  const std::string text = lldp("100") + lldp("4000") + lldp("150") + lldp("1e300") +
                           lldp("-1e300") + lldp("210") + lldp("269.5") + lldp("1.7e308");
  Collect sink;
  bool ok = false;
  ReadStats stats = read(text, sink, {.max_future_s = 60}, &ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(stats.records, 5u);
  EXPECT_EQ(stats.bad, 0u);
  EXPECT_EQ(stats.future, 3u);
  ASSERT_EQ(stats.first_future.size(), 3u);
  EXPECT_EQ(stats.first_future[0].line, 2u);
  EXPECT_EQ(stats.first_future[0].message,
            "lldp: 't' 4000 is 3900 s beyond the newest 't' so far, 100 (at most 60 s ahead)");
  EXPECT_EQ(stats.first_future[1].line, 4u);
  EXPECT_EQ(stats.first_future[2].line, 8u);
  std::vector<double> times;
  for (const auto& r : sink.lldps) times.push_back(r.t);
  // 150 is within 60 s of 100, 210 of 150, 269.5 of 210; the old one stays.
  EXPECT_EQ(times, (std::vector<double>{100, 150, -1e300, 210, 269.5}));

  // The default has no bound; --strict stops at the first future line.
  Collect all;
  EXPECT_EQ(read(text, all).future, 0u);
  EXPECT_EQ(all.lldps.size(), 8u);
  Collect strict;
  stats = read(text, strict, {.strict = true, .max_future_s = 60}, &ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(stats.lines, 2u);
  ASSERT_EQ(stats.first_future.size(), 1u);
  EXPECT_EQ(stats.first_future[0].line, 2u);
}

TEST_F(JsonlTest, KeepsOnlyTheFirstBadLines) {
  std::string text;
  for (int i = 0; i < 2500; ++i) text += "{\n";
  Collect sink;
  ReadStats stats = read(text, sink);
  EXPECT_EQ(stats.bad, 2500u);
  ASSERT_EQ(stats.first_bad.size(), ReadStats::kMaxBadLinesKept);
  EXPECT_EQ(stats.first_bad.front().line, 1u);
  EXPECT_EQ(stats.first_bad.back().line, 1000u);
}

TEST_F(JsonlTest, FailedStreamReturnsFalse) {
  std::istringstream in("{\"t\":2,\"kind\":\"lldp\",\"port\":\"h1:eth0\",\"neighbor\":\"x\"}\n");
  in.setstate(std::ios::badbit);
  Collect sink;
  ReadStats stats;
  EXPECT_FALSE(readJsonl(in, topo, sink, stats));
}

}  // namespace
}  // namespace netdiag::telemetry
