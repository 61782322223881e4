#include "topology/writer.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "topology/generators.h"
#include "topology/loader.h"

namespace netdiag::topology {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string dump(const LoadResult& r) {
  std::string s;
  for (const Diagnostic& d : r.errors) s += "error: " + d.str() + "\n";
  for (const Diagnostic& d : r.warnings) s += "warning: " + d.str() + "\n";
  return s;
}

std::string toYaml(const Topology& t) {
  std::ostringstream out;
  writeYaml(t, out);
  return out.str();
}

std::string toJson(const Topology& t) {
  std::ostringstream out;
  writeJson(t, out);
  return out.str();
}

LoadResult load(const std::string& text, std::string_view source) {
  std::istringstream in(text);
  return loadTopology(in, source);
}

std::string effectiveRole(const Node& n) {
  return n.role_name.empty() ? std::string(roleName(n.role)) : n.role_name;
}

// Same name, nodes (name, role, pod, addr), ports (names, addrs) and links
// (same order, same ends, same speed).
void expectSameTopology(const Topology& want, const Topology& got) {
  EXPECT_EQ(want.name, got.name);
  ASSERT_EQ(want.nodeCount(), got.nodeCount());
  for (NodeId n = 0; n < want.nodeCount(); ++n) {
    const Node& x = want.node(n);
    const Node& y = got.node(n);
    SCOPED_TRACE("node " + std::to_string(n) + " '" + x.name + "'");
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.role, y.role);
    EXPECT_EQ(effectiveRole(x), effectiveRole(y));
    EXPECT_EQ(x.pod, y.pod);
    EXPECT_EQ(x.addr, y.addr);
  }
  ASSERT_EQ(want.linkCount(), got.linkCount());
  for (LinkId l = 0; l < want.linkCount(); ++l) {
    const Link& x = want.link(l);
    const Link& y = got.link(l);
    SCOPED_TRACE("link " + std::to_string(l));
    EXPECT_EQ(want.portRef(x.a), got.portRef(y.a));
    EXPECT_EQ(want.portRef(x.b), got.portRef(y.b));
    EXPECT_EQ(x.speed_gbps, y.speed_gbps);
    EXPECT_EQ(want.port(x.a).addr, got.port(y.a).addr);
    EXPECT_EQ(want.port(x.b).addr, got.port(y.b).addr);
  }
  // Ports: same set of (ref, addr); the file has no place for unlinked ports,
  // so compare as sets (declaration order may differ from link order).
  auto ports = [](const Topology& t) {
    std::vector<std::pair<std::string, std::string>> v;
    for (PortId p = 0; p < t.portCount(); ++p) v.emplace_back(t.portRef(p), t.port(p).addr);
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(ports(want), ports(got));
  for (PortId p = 0; p < got.portCount(); ++p) {
    EXPECT_EQ(got.findPort(got.portRef(p)), p);
    auto w = want.findPort(got.portRef(p));
    ASSERT_TRUE(w.has_value()) << got.portRef(p);
    EXPECT_EQ(want.port(*w).name, got.port(p).name);
  }
}

// Writes t as YAML and as JSON, loads both back and compares with t.
void expectRoundTrip(const Topology& t) {
  const std::string yaml = toYaml(t);
  LoadResult ry = load(yaml, "written.yaml");
  ASSERT_TRUE(ry.ok()) << dump(ry) << "\n--- YAML:\n" << yaml.substr(0, 4000);
  {
    SCOPED_TRACE("YAML round trip");
    expectSameTopology(t, ry.topology);
  }
  const std::string json = toJson(t);
  LoadResult rj = load(json, "written.json");
  ASSERT_TRUE(rj.ok()) << dump(rj) << "\n--- JSON:\n" << json.substr(0, 4000);
  {
    SCOPED_TRACE("JSON round trip");
    expectSameTopology(t, rj.topology);
  }
  // The JSON is strict JSON, for tools that are not YAML parsers.
  EXPECT_TRUE(nlohmann::json::accept(json)) << json.substr(0, 4000);
}

// ---------------------------------------------------------------------------
// Generated fabrics.

class WriterRoundTripTest : public ::testing::TestWithParam<bool> {};

TEST_P(WriterRoundTripTest, LeafSpine) {
  LeafSpineParams p;
  p.spines = 2;
  p.leaves = 3;
  p.hosts_per_leaf = 2;
  p.nics_per_host = 2;
  p.parallel = 2;
  p.host_speed_gbps = 100;
  p.fabric_speed_gbps = 400;
  p.addresses = GetParam();
  ASSERT_THAT(validate(p), IsEmpty());
  expectRoundTrip(generateLeafSpine(p));
}

TEST_P(WriterRoundTripTest, LeafSpineSingleNic) {
  // Links of unknown speed (the short form) are covered by WriterWeirdValues.
  LeafSpineParams p;
  p.spines = 2;
  p.leaves = 2;
  p.hosts_per_leaf = 1;
  p.host_speed_gbps = 12.5;
  p.fabric_speed_gbps = 100;
  p.addresses = GetParam();
  ASSERT_THAT(validate(p), IsEmpty());
  expectRoundTrip(generateLeafSpine(p));
}

TEST_P(WriterRoundTripTest, FatTree) {
  for (int k : {2, 4}) {
    FatTreeParams p;
    p.k = k;
    p.speed_gbps = 25.5;
    p.addresses = GetParam();
    ASSERT_THAT(validate(p), IsEmpty());
    SCOPED_TRACE("k=" + std::to_string(k));
    expectRoundTrip(generateFatTree(p));
  }
}

TEST_P(WriterRoundTripTest, Rail) {
  RailParams p;
  p.sus = 2;
  p.hosts_per_su = 2;
  p.rails = 2;
  p.spines = 2;
  p.leaf_uplinks = 2;
  p.cores = 0;
  p.addresses = GetParam();
  ASSERT_THAT(validate(p), IsEmpty());
  expectRoundTrip(generateRail(p));
}

TEST_P(WriterRoundTripTest, RailWithCores) {
  RailParams p;
  p.sus = 2;
  p.hosts_per_su = 2;
  p.rails = 2;
  p.spines = 2;
  p.leaf_uplinks = 4;
  p.cores = 2;
  p.speed_gbps = 800;
  p.addresses = GetParam();
  ASSERT_THAT(validate(p), IsEmpty()) << ::testing::PrintToString(validate(p));
  expectRoundTrip(generateRail(p));
}

INSTANTIATE_TEST_SUITE_P(WriterAddresses, WriterRoundTripTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param_info) {
                           return param_info.param ? "WithAddresses" : "WithoutAddresses";
                         });

TEST(WriterFixture, HandWrittenFileSurvivesRewrite) {
  LoadResult r =
      loadTopologyFile(std::string(NETDIAG_FIXTURES) + "/topologies/good_leaf_spine.yaml");
  ASSERT_TRUE(r.ok()) << dump(r);
  expectRoundTrip(r.topology);
}

TEST(WriterFixture, WriteToFileAndLoadFile) {
  LeafSpineParams p;
  p.spines = 2;
  p.leaves = 2;
  p.hosts_per_leaf = 2;
  Topology t = generateLeafSpine(p);
  t.name = "file round trip";
  const auto dir = std::filesystem::path(::testing::TempDir()) / "netdiag_writer_test";
  std::filesystem::create_directories(dir);
  for (bool json : {false, true}) {
    const std::string path = (dir / (json ? "t.json" : "t.yaml")).string();
    {
      std::ofstream out(path, std::ios::binary);
      json ? writeJson(t, out) : writeYaml(t, out);
    }
    LoadResult r = loadTopologyFile(path);
    ASSERT_TRUE(r.ok()) << dump(r);
    expectSameTopology(t, r.topology);
  }
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------------------
// Weird but valid values.

Node makeNode(std::string name, std::string role_name, std::string addr = "",
              std::optional<int64_t> pod = std::nullopt) {
  Node n;
  n.name = std::move(name);
  n.role = roleFromName(role_name);
  n.role_name = std::move(role_name);
  n.addr = std::move(addr);
  n.pod = pod;
  return n;
}

// A chain of nodes n0 - n1 - ... with one link between neighbours.
Topology chain(const std::vector<Node>& nodes, const std::vector<std::string>& port_addrs = {},
               const std::vector<double>& speeds = {}) {
  Topology t;
  for (const Node& n : nodes) EXPECT_NE(t.addNode(n), kNone) << n.name;
  size_t next_addr = 0;
  for (NodeId i = 0; i + 1 < t.nodeCount(); ++i) {
    PortId a = t.addPort(i, "p" + std::to_string(i) + "a");
    PortId b = t.addPort(i + 1, "p" + std::to_string(i) + "b");
    double speed = speeds.empty() ? 0 : speeds[i % speeds.size()];
    t.addLink(a, b, speed);
    if (!port_addrs.empty()) {
      t.mutablePort(a).addr = port_addrs[next_addr++ % port_addrs.size()];
      t.mutablePort(b).addr = port_addrs[next_addr++ % port_addrs.size()];
    }
  }
  t.finalize();
  return t;
}

TEST(WriterWeirdValues, RoleWordsThatLookLikeOtherYaml) {
  const std::vector<std::string> roles = {"null",
                                          "Null",
                                          "NULL",
                                          "~",
                                          "true",
                                          "false",
                                          "True",
                                          "yes",
                                          "no",
                                          "on",
                                          "off",
                                          "y",
                                          "n",
                                          "-x",
                                          "-",
                                          "--",
                                          "a b",
                                          " lead",
                                          "trail ",
                                          "x: y",
                                          "x:",
                                          ":x",
                                          "#hash",
                                          "a #b",
                                          "'sq'",
                                          "\"dq\"",
                                          "it's",
                                          "[x]",
                                          "{y}",
                                          "a,b",
                                          "&anc",
                                          "*ali",
                                          "!tag",
                                          "!!str",
                                          "%pct",
                                          "@at",
                                          "`bt",
                                          "|",
                                          ">",
                                          "?",
                                          "? k",
                                          "0",
                                          "-1",
                                          "0x1F",
                                          "0o17",
                                          "1e3",
                                          ".inf",
                                          "-.inf",
                                          ".nan",
                                          "...",
                                          "---",
                                          "<<",
                                          "=",
                                          "back\\slash",
                                          "tab\there",
                                          "new\nline",
                                          "cr\rx",
                                          "\xc3\xbc"
                                          "n\xc3\xaf"
                                          "c\xc3\xb6"
                                          "d\xc3\xa9",
                                          "\x01"
                                          "ctl",
                                          "del\x7f"};
  std::vector<Node> nodes;
  for (size_t i = 0; i < roles.size(); ++i) {
    nodes.push_back(makeNode("n" + std::to_string(i), roles[i]));
  }
  Topology t = chain(nodes);
  t.name = "roles";
  // One at a time first, so a failure names the role that broke.
  for (size_t i = 0; i < roles.size(); ++i) {
    SCOPED_TRACE("role '" + roles[i] + "'");
    Topology one = chain({makeNode("a", roles[i]), makeNode("b", "leaf")});
    expectRoundTrip(one);
  }
  expectRoundTrip(t);
}

TEST(WriterWeirdValues, Ipv6AndOtherAddresses) {
  const std::vector<std::string> addrs = {"fe80::1",
                                          "::1",
                                          "::",
                                          "2001:db8::1",
                                          "2001:db8:0:1::",
                                          "fe80::1%eth0",
                                          "::ffff:10.0.0.1",
                                          "10.0.0.1/31",
                                          "1::",
                                          "host.example.com",
                                          "a b",
                                          "null",
                                          "~",
                                          "-",
                                          "#x"};
  for (const std::string& addr : addrs) {
    SCOPED_TRACE("addr '" + addr + "'");
    Topology t = chain({makeNode("h1", "host", addr), makeNode("leaf1", "leaf")}, {addr, "x"});
    expectRoundTrip(t);
  }
  std::vector<Node> nodes;
  for (size_t i = 0; i < addrs.size(); ++i) {
    nodes.push_back(makeNode("n" + std::to_string(i), "spine", addrs[i]));
  }
  expectRoundTrip(chain(nodes, addrs));
}

TEST(WriterWeirdValues, FabricNames) {
  for (const std::string& name :
       {std::string("pod a"), std::string("my \"fabric\" 'x'"), std::string("a: b # c"),
        std::string("- x"), std::string("null"), std::string("~"), std::string("[x]"),
        std::string("line1\nline2"), std::string("back\\slash \t tab"), std::string(" pad "),
        std::string("\xe2\x9c\x93 ok"), std::string("'"), std::string("\"")}) {
    SCOPED_TRACE("name '" + name + "'");
    Topology t = chain({makeNode("a", "leaf"), makeNode("b", "spine")});
    t.name = name;
    expectRoundTrip(t);
  }
}

TEST(WriterWeirdValues, NodeAndPortNamesThatLookLikeOtherYaml) {
  // All valid per the contract: node [A-Za-z0-9._-]+, port [A-Za-z0-9._/-]+.
  const std::vector<std::string> names = {
      "null", "Null", "NULL", "true", "false", "yes",  "no",   "-x",   "-", "--",     "---",
      "...",  ".",    "0",    "-1",   "1e3",   "0x1F", ".inf", ".nan", "_", "a.b-c_d"};
  for (const std::string& name : names) {
    SCOPED_TRACE("node '" + name + "'");
    Topology t;
    NodeId a = t.addNode(makeNode(name, "leaf"));
    NodeId b = t.addNode(makeNode("other", "spine"));
    t.addLink(t.addPort(a, "p1"), t.addPort(b, name));
    t.addLink(t.addPort(a, "p2/0"), t.addPort(b, name == "null" ? "q" : "null"));
    t.finalize();
    expectRoundTrip(t);
  }
}

TEST(WriterWeirdValues, SpeedsAndPods) {
  const std::vector<double> speeds = {0.1,    1e-9, 123456.789, 1e300, 25, 3.0000000000000004,
                                      1.0 / 3};
  std::vector<Node> nodes;
  const std::vector<std::optional<int64_t>> pods = {std::nullopt,
                                                    0,
                                                    -1,
                                                    42,
                                                    std::numeric_limits<int64_t>::max(),
                                                    std::numeric_limits<int64_t>::min()};
  for (size_t i = 0; i < 10; ++i) {
    nodes.push_back(makeNode("n" + std::to_string(i), "leaf", "", pods[i % pods.size()]));
  }
  expectRoundTrip(chain(nodes, {}, speeds));
  expectRoundTrip(chain(nodes, {"10.0.0.1", "fe80::2"}, speeds));
}

TEST(WriterWeirdValues, EmptyFabric) {
  Topology t;
  t.finalize();
  const std::string yaml = toYaml(t);
  LoadResult r = load(yaml, "empty.yaml");
  EXPECT_TRUE(r.ok()) << dump(r) << yaml;
  EXPECT_EQ(r.topology.nodeCount(), 0u);
  EXPECT_TRUE(nlohmann::json::accept(toJson(t)));
  LoadResult rj = load(toJson(t), "empty.json");
  EXPECT_TRUE(rj.ok()) << dump(rj);
}

TEST(WriterWeirdValues, NodesWithoutLinksSurvive) {
  Topology t;
  t.addNode(makeNode("s1", "spine"));
  t.addNode(makeNode("s2", "core", "10.0.0.1", 3));
  t.finalize();
  expectRoundTrip(t);
}

TEST(WriterFormat, OneLinkALineAndLongFormOnlyWhenNeeded) {
  Topology t;
  NodeId a = t.addNode(makeNode("a", "leaf"));
  NodeId b = t.addNode(makeNode("b", "spine"));
  t.addLink(t.addPort(a, "p1"), t.addPort(b, "q1"));
  t.addLink(t.addPort(a, "p2"), t.addPort(b, "q2"), 400);
  t.finalize();
  const std::string yaml = toYaml(t);
  EXPECT_THAT(yaml, HasSubstr("[a:p1, b:q1]"));
  EXPECT_THAT(yaml, HasSubstr("speed_gbps: 400"));
  LoadResult r = load(yaml, "t.yaml");
  ASSERT_TRUE(r.ok()) << dump(r);
  // Each link on its own line, in order.
  EXPECT_LT(r.topology.link(0).line, r.topology.link(1).line);
}

}  // namespace
}  // namespace netdiag::topology
