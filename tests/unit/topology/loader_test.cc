#include "topology/loader.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace netdiag::topology {
namespace {

using ::testing::AllOf;
using ::testing::AllOfArray;
using ::testing::AnyOfArray;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Matcher;
using ::testing::Not;
using ::testing::Optional;
using ::testing::SizeIs;

std::string fixturePath(const std::string& name) {
  return std::string(NETDIAG_FIXTURES) + "/topologies/" + name;
}

LoadResult loadFixture(const std::string& name) { return loadTopologyFile(fixturePath(name)); }

LoadResult loadText(const std::string& text, std::string_view source = "test.yaml") {
  std::istringstream in(text);
  return loadTopology(in, source);
}

// Every diagnostic, one a line, for failure messages.
std::string dump(const LoadResult& r) {
  std::string s;
  for (const Diagnostic& d : r.errors) s += "error: " + d.str() + "\n";
  for (const Diagnostic& d : r.warnings) s += "warning: " + d.str() + "\n";
  return s;
}

// A diagnostic at `line` whose message contains every one of `parts`.
Matcher<const Diagnostic&> diagAt(uint32_t line, const std::vector<std::string>& parts) {
  std::vector<Matcher<const std::string&>> subs;
  for (const std::string& p : parts) subs.push_back(HasSubstr(p));
  return AllOf(Field(&Diagnostic::line, line), Field(&Diagnostic::message, AllOfArray(subs)));
}

const Node& nodeNamed(const Topology& t, std::string_view name) {
  auto id = t.findNode(name);
  EXPECT_TRUE(id.has_value()) << name;
  static const Node kMissingNode;
  return id ? t.node(*id) : kMissingNode;
}

std::string effectiveRole(const Node& n) {
  return n.role_name.empty() ? std::string(roleName(n.role)) : n.role_name;
}

// Same nodes, ports, links (order, ends, speeds, addresses) and name.
void expectSameTopology(const Topology& x, const Topology& y) {
  EXPECT_EQ(x.name, y.name);
  ASSERT_EQ(x.nodeCount(), y.nodeCount());
  for (NodeId n = 0; n < x.nodeCount(); ++n) {
    SCOPED_TRACE("node " + x.node(n).name);
    EXPECT_EQ(x.node(n).name, y.node(n).name);
    EXPECT_EQ(x.node(n).role, y.node(n).role);
    EXPECT_EQ(effectiveRole(x.node(n)), effectiveRole(y.node(n)));
    EXPECT_EQ(x.node(n).pod, y.node(n).pod);
    EXPECT_EQ(x.node(n).addr, y.node(n).addr);
  }
  ASSERT_EQ(x.linkCount(), y.linkCount());
  for (LinkId l = 0; l < x.linkCount(); ++l) {
    SCOPED_TRACE("link " + std::to_string(l));
    EXPECT_EQ(x.portRef(x.link(l).a), y.portRef(y.link(l).a));
    EXPECT_EQ(x.portRef(x.link(l).b), y.portRef(y.link(l).b));
    EXPECT_EQ(x.link(l).speed_gbps, y.link(l).speed_gbps);
    EXPECT_EQ(x.port(x.link(l).a).addr, y.port(y.link(l).a).addr);
    EXPECT_EQ(x.port(x.link(l).b).addr, y.port(y.link(l).b).addr);
  }
  ASSERT_EQ(x.portCount(), y.portCount());
  for (PortId p = 0; p < x.portCount(); ++p) {
    EXPECT_EQ(x.portRef(p), y.portRef(p));
    EXPECT_EQ(x.port(p).addr, y.port(p).addr);
  }
}

// ---------------------------------------------------------------------------
// One bad fixture per rule of formats.md §1.

struct BadCase {
  std::string file;
  std::vector<uint32_t> lines;     // the error is on one of these lines
  std::vector<std::string> parts;  // the message names these
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.file; }

class LoaderBadFixtureTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(LoaderBadFixtureTest, ReportsTheProblemWithFileLineAndName) {
  const BadCase& c = GetParam();
  const std::string path = fixturePath(c.file);
  LoadResult r;
  ASSERT_NO_THROW(r = loadTopologyFile(path));
  ASSERT_FALSE(r.ok()) << c.file << " loaded without error";
  std::vector<Matcher<const std::string&>> subs;
  for (const std::string& p : c.parts) subs.push_back(HasSubstr(p));
  EXPECT_THAT(r.errors, Contains(AllOf(Field(&Diagnostic::line, AnyOfArray(c.lines)),
                                       Field(&Diagnostic::message, AllOfArray(subs)))))
      << dump(r);
  for (const Diagnostic& d : r.errors) {
    EXPECT_EQ(d.file, path);
    EXPECT_THAT(d.str(), HasSubstr(path + ":" + std::to_string(d.line) + ": "));
    EXPECT_FALSE(d.message.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    LoaderBadFixtures, LoaderBadFixtureTest,
    ::testing::Values(BadCase{"bad_undeclared_node.yaml", {9}, {"spine9"}},
                      BadCase{"bad_port_reused.yaml", {11}, {"leaf1:swp1", "line 10"}},
                      BadCase{"bad_self_link.yaml", {9}, {"spine1", "itself"}},
                      BadCase{"bad_duplicate_node.yaml", {7}, {"spine1", "line 3"}},
                      BadCase{"bad_node_name_chars.yaml", {5}, {"spine#1"}},
                      BadCase{"bad_port_name.yaml", {8}, {"spine1:swp 1"}},
                      BadCase{"bad_port_ref_no_colon.yaml", {8}, {"spine1-swp1"}},
                      BadCase{"bad_port_ref_two_colons.yaml", {8}, {"leaf1:swp49:0"}},
                      BadCase{"bad_missing_role.yaml", {5}, {"leaf1", "role"}},
                      // Reported at the field's own line, not the node's first line.
                      BadCase{"bad_pod_not_integer.yaml", {7}, {"leaf7", "pod", "1.5"}},
                      BadCase{"bad_speed_negative.yaml", {10}, {"speed_gbps", "-400"}},
                      BadCase{"bad_speed_not_number.yaml", {9}, {"speed_gbps", "400G"}},
                      BadCase{"bad_short_link_three_ends.yaml", {10}, {"two", "3"}},
                      BadCase{"bad_long_link_missing_b.yaml", {10}, {"'b'"}},
                      // 'nodes:' is on line 3, the mapping given for it starts on line 4.
                      BadCase{"bad_nodes_not_sequence.yaml", {3, 4}, {"nodes", "sequence"}},
                      BadCase{"bad_top_level_not_mapping.yaml", {2}, {"mapping"}},
                      BadCase{"bad_empty.yaml", {1}, {"empty"}},
                      // The bracket opens on line 8; the parser notices on line 9.
                      BadCase{"bad_syntax.yaml", {8, 9}, {"syntax"}},
                      BadCase{"bad_syntax.json", {7}, {"syntax"}}),
    [](const ::testing::TestParamInfo<BadCase>& param_info) {
      std::string name = param_info.param.file;
      std::replace_if(
          name.begin(), name.end(), [](char ch) { return !std::isalnum(ch); }, '_');
      return name;
    });

TEST(LoaderBadFixture, BadFixturesLeaveTheGoodPartsOut) {
  // A rejected link is not added half-way: no link, and the other links stay.
  LoadResult r = loadFixture("bad_port_reused.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.errors, SizeIs(1)) << dump(r);
  EXPECT_EQ(r.topology.linkCount(), 1u);
}

TEST(LoaderBadFixture, ManyErrorsAreAllReportedInLineOrder) {
  LoadResult r = loadFixture("bad_many_errors.yaml");
  ASSERT_FALSE(r.ok());
  // Each problem on its own line, reported in the order of the file.
  EXPECT_THAT(r.errors,
              ::testing::ElementsAre(diagAt(7, {"leaf_a", "pod", "two"}),     // pod not an integer
                                     diagAt(8, {"h1", "role"}),               // missing role
                                     diagAt(10, {"spine1", "line 3"}),        // duplicate node
                                     diagAt(14, {"bad/name"}),                // invalid node name
                                     diagAt(17, {"ghost"}),                   // undeclared node
                                     diagAt(18, {"spine1", "itself"}),        // self link
                                     diagAt(20, {"spine1:swp3", "line 19"}),  // port on two links
                                     diagAt(21, {"speed_gbps", "-1"}),        // negative speed
                                     diagAt(22, {"two"}),            // short form with one end
                                     diagAt(23, {"'b'"}),            // long form without b
                                     diagAt(24, {"spine1:swp:6"})))  // two colons
      << dump(r);
  EXPECT_TRUE(
      std::is_sorted(r.errors.begin(), r.errors.end(),
                     [](const Diagnostic& x, const Diagnostic& y) { return x.line < y.line; }));
}

// ---------------------------------------------------------------------------
// Good files.

TEST(LoaderGood, LeafSpineYaml) {
  LoadResult r = loadFixture("good_leaf_spine.yaml");
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_THAT(r.warnings, IsEmpty()) << dump(r);
  const Topology& t = r.topology;
  EXPECT_EQ(t.name, "tiny-ls");
  EXPECT_EQ(t.nodeCount(), 8u);
  EXPECT_EQ(t.linkCount(), 8u);
  EXPECT_EQ(t.portCount(), 16u);
  EXPECT_EQ(t.dirLinkCount(), 16u);

  // Nodes in file order, roles, pods, addresses.
  const std::vector<std::string> names = {"spine1", "spine2", "leaf1", "leaf2",
                                          "h1",     "h2",     "h3",    "fw1"};
  for (NodeId n = 0; n < names.size(); ++n) {
    EXPECT_EQ(t.node(n).name, names[n]);
    EXPECT_EQ(t.findNode(names[n]), n);
  }
  EXPECT_EQ(nodeNamed(t, "spine1").role, Role::kSpine);
  EXPECT_EQ(nodeNamed(t, "spine1").role_name, "spine");
  EXPECT_EQ(nodeNamed(t, "leaf2").role, Role::kLeaf);
  EXPECT_EQ(nodeNamed(t, "h1").role, Role::kHost);
  EXPECT_TRUE(nodeNamed(t, "h1").isHost());
  EXPECT_FALSE(nodeNamed(t, "leaf1").isHost());
  EXPECT_EQ(nodeNamed(t, "fw1").role, Role::kOther);
  EXPECT_EQ(nodeNamed(t, "fw1").role_name, "firewall");

  EXPECT_EQ(nodeNamed(t, "spine1").pod, std::nullopt);
  EXPECT_THAT(nodeNamed(t, "spine2").pod, Optional(0));
  EXPECT_THAT(nodeNamed(t, "leaf1").pod, Optional(1));
  EXPECT_THAT(nodeNamed(t, "leaf2").pod, Optional(2));
  EXPECT_THAT(nodeNamed(t, "h3").pod, Optional(-2));
  EXPECT_EQ(nodeNamed(t, "fw1").pod, std::nullopt);

  EXPECT_EQ(nodeNamed(t, "spine1").addr, "");
  EXPECT_EQ(nodeNamed(t, "leaf1").addr, "10.0.0.11");
  EXPECT_EQ(nodeNamed(t, "h3").addr, "10.2.0.1");

  // Source lines.
  EXPECT_EQ(nodeNamed(t, "spine1").line, 7u);
  EXPECT_EQ(nodeNamed(t, "fw1").line, 35u);
  EXPECT_EQ(t.link(0).line, 38u);
  EXPECT_EQ(t.link(3).line, 43u);
  EXPECT_EQ(t.link(6).line, 59u);

  // Links in file order with their ends and speeds.
  const std::vector<std::pair<std::string, std::string>> ends = {
      {"h1:eth0", "leaf1:swp1"},      {"h2:eth0", "leaf1:swp2"},
      {"h3:eth0", "leaf2:swp1"},      {"leaf1:swp49", "spine1:swp1"},
      {"leaf1:swp50", "spine2:swp1"}, {"leaf2:swp49", "spine1:swp2"},
      {"leaf2:swp50", "spine2:swp2"}, {"leaf1:swp51/1", "fw1:eth1/1"}};
  const std::vector<double> speeds = {0, 0, 12.5, 400, 400, 400, 400, 0};
  for (LinkId l = 0; l < ends.size(); ++l) {
    EXPECT_EQ(t.portRef(t.link(l).a), ends[l].first) << l;
    EXPECT_EQ(t.portRef(t.link(l).b), ends[l].second) << l;
    EXPECT_EQ(t.link(l).speed_gbps, speeds[l]) << l;
  }

  // Interface addresses.
  auto portAddr = [&](std::string_view ref) {
    auto p = t.findPort(ref);
    EXPECT_TRUE(p.has_value()) << ref;
    return p ? t.port(*p).addr : std::string("<missing>");
  };
  EXPECT_EQ(portAddr("leaf1:swp49"), "10.0.1.0");
  EXPECT_EQ(portAddr("spine1:swp1"), "10.0.1.1");
  EXPECT_EQ(portAddr("leaf2:swp50"), "10.0.2.2");
  EXPECT_EQ(portAddr("spine2:swp2"), "10.0.2.3");
  EXPECT_EQ(portAddr("h1:eth0"), "");
  EXPECT_EQ(portAddr("fw1:eth1/1"), "");

  // Directed links: 2l for a->b, its reverse for b->a.
  auto d = t.findDirLink("leaf1:swp49->spine1:swp1");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, 2u * 3);
  EXPECT_EQ(Topology::linkOf(*d), 3u);
  EXPECT_EQ(t.findDirLink("spine1:swp1->leaf1:swp49"), Topology::reverse(*d));
  EXPECT_EQ(t.dirLinkName(*d), "leaf1:swp49->spine1:swp1");
  EXPECT_EQ(t.dirLinkName(Topology::reverse(*d)), "spine1:swp1->leaf1:swp49");
  EXPECT_EQ(t.findDirLink("leaf1:swp51/1->fw1:eth1/1"), 2u * 7);
  EXPECT_EQ(t.findDirLink("leaf1:swp49->spine2:swp1"), std::nullopt);  // not one link
  EXPECT_EQ(t.findDirLink("leaf1:swp49"), std::nullopt);
  for (DirLinkId dl = 0; dl < t.dirLinkCount(); ++dl) {
    EXPECT_EQ(t.findDirLink(t.dirLinkName(dl)), dl) << t.dirLinkName(dl);
  }
  EXPECT_EQ(t.outLinks(*t.findNode("leaf1")).size(), 5u);
  EXPECT_EQ(t.portsOf(*t.findNode("spine1")).size(), 2u);
}

TEST(LoaderGood, JsonLoadsToTheSameTopologyAsYaml) {
  LoadResult y = loadFixture("good_leaf_spine.yaml");
  LoadResult j = loadFixture("good_leaf_spine.json");
  ASSERT_TRUE(y.ok()) << dump(y);
  ASSERT_TRUE(j.ok()) << dump(j);
  EXPECT_THAT(j.warnings, IsEmpty()) << dump(j);
  expectSameTopology(y.topology, j.topology);
  // JSON keeps line numbers too.
  EXPECT_EQ(j.topology.node(0).line, 6u);
  EXPECT_EQ(j.topology.link(3).line, 20u);
}

TEST(LoaderGood, FormatsSpecExampleVerbatim) {
  LoadResult r = loadFixture("formats_example.yaml");
  ASSERT_TRUE(r.ok()) << dump(r);
  const Topology& t = r.topology;
  EXPECT_EQ(t.name, "pod-a");
  ASSERT_EQ(t.nodeCount(), 3u);
  ASSERT_EQ(t.linkCount(), 2u);
  EXPECT_EQ(nodeNamed(t, "spine1").role, Role::kSpine);
  EXPECT_THAT(nodeNamed(t, "leaf1").pod, Optional(0));
  EXPECT_EQ(nodeNamed(t, "leaf1").role, Role::kLeaf);
  EXPECT_EQ(nodeNamed(t, "h1").role, Role::kHost);
  EXPECT_EQ(nodeNamed(t, "h1").addr, "10.1.0.1");
  EXPECT_EQ(t.portRef(t.link(0).a), "h1:eth0");
  EXPECT_EQ(t.portRef(t.link(0).b), "leaf1:swp1");
  EXPECT_EQ(t.link(0).speed_gbps, 0);
  EXPECT_EQ(t.portRef(t.link(1).a), "leaf1:swp49");
  EXPECT_EQ(t.portRef(t.link(1).b), "spine1:swp1");
  EXPECT_EQ(t.link(1).speed_gbps, 400);
  EXPECT_EQ(t.port(t.link(1).a).addr, "10.0.1.0");
  EXPECT_EQ(t.port(t.link(1).b).addr, "10.0.1.1");
  EXPECT_EQ(t.findDirLink("leaf1:swp49->spine1:swp1"), 2u);
  EXPECT_EQ(t.findDirLink("spine1:swp1->leaf1:swp49"), Topology::reverse(2u));
}

TEST(LoaderGood, UnknownFieldsAreIgnoredWhateverTheirShape) {
  LoadResult r = loadText(R"(
version: 3
nodes:
  - name: a
    role: leaf
    rack: {row: 1, pos: [1, 2]}
    serial: ~
    links: [not, a, link]
  - name: b
    role: spine
    name2: c
links:
  - a: a:p1
    b: b:p1
    vendor: {x: [1, {y: 2}]}
    pod: nonsense
    c: zz:zz
extra: [1, 2, 3]
)");
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_EQ(r.topology.nodeCount(), 2u);
  EXPECT_EQ(r.topology.linkCount(), 1u);
  EXPECT_EQ(r.topology.portCount(), 2u);
}

TEST(LoaderGood, UnknownRoleWordKeptVerbatim) {
  LoadResult r = loadText(
      "nodes:\n"
      "  - {name: a, role: border-gw}\n"
      "  - {name: b, role: Spine}\n"
      "  - {name: c, role: superspine}\n"
      "  - {name: d, role: core}\n"
      "links: []\n");
  ASSERT_TRUE(r.ok()) << dump(r);
  const Topology& t = r.topology;
  EXPECT_EQ(t.node(0).role, Role::kOther);
  EXPECT_EQ(t.node(0).role_name, "border-gw");
  EXPECT_EQ(t.node(1).role, Role::kOther);  // role words are case-sensitive
  EXPECT_EQ(t.node(1).role_name, "Spine");
  EXPECT_EQ(t.node(2).role, Role::kSuperspine);
  EXPECT_EQ(t.node(3).role, Role::kCore);
}

TEST(LoaderGood, NoLinksAtAll) {
  for (const char* text :
       {"nodes: [{name: a, role: leaf}]\n", "nodes: [{name: a, role: leaf}]\nlinks: []\n",
        "nodes: [{name: a, role: leaf}]\nlinks:\n", "nodes: [{name: a, role: leaf}]\nlinks: ~\n"}) {
    LoadResult r = loadText(text);
    EXPECT_TRUE(r.ok()) << text << dump(r);
    EXPECT_EQ(r.topology.nodeCount(), 1u) << text;
    EXPECT_EQ(r.topology.linkCount(), 0u) << text;
  }
}

// ---------------------------------------------------------------------------
// Streams, files, YAML features.

TEST(LoaderStream, LoadsFromAnIstringstream) {
  std::istringstream in(
      "nodes:\n"
      "  - {name: leaf1, role: leaf}\n"
      "  - {name: h1, role: host, addr: 10.1.0.1}\n"
      "links:\n"
      "  - [h1:eth0, leaf1:swp1]\n");
  LoadResult r = loadTopology(in, "<memory>");
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_EQ(r.topology.nodeCount(), 2u);
  EXPECT_EQ(r.topology.link(0).line, 5u);
  EXPECT_EQ(r.topology.findDirLink("h1:eth0->leaf1:swp1"), 0u);
  EXPECT_EQ(r.topology.findDirLink("leaf1:swp1->h1:eth0"), 1u);
}

TEST(LoaderStream, DiagnosticsNameTheSource) {
  LoadResult r = loadText("nodes:\n  - {name: a, role: leaf}\nlinks: [[a:p, zz:q]]\n", "my.yaml");
  ASSERT_FALSE(r.ok());
  ASSERT_THAT(r.errors, SizeIs(1));
  EXPECT_EQ(r.errors[0].file, "my.yaml");
  EXPECT_EQ(r.errors[0].line, 3u);
  EXPECT_THAT(r.errors[0].str(), ::testing::StartsWith("my.yaml:3: "));
  EXPECT_THAT(r.errors[0].str(), HasSubstr("zz"));
}

TEST(LoaderFile, MissingFileIsAClearError) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "netdiag_loader_missing";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "no_such_topology.yaml").string();
  std::filesystem::remove(path);
  LoadResult r;
  ASSERT_NO_THROW(r = loadTopologyFile(path));
  ASSERT_FALSE(r.ok());
  ASSERT_THAT(r.errors, SizeIs(1));
  EXPECT_EQ(r.errors[0].file, path);
  EXPECT_THAT(r.errors[0].message, HasSubstr("cannot open"));
  EXPECT_THAT(r.errors[0].str(), HasSubstr(path));
  EXPECT_EQ(r.topology.nodeCount(), 0u);
}

TEST(LoaderFile, DirectoryIsAnErrorNotACrash) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "netdiag_loader_dir";
  std::filesystem::create_directories(dir);
  LoadResult r;
  ASSERT_NO_THROW(r = loadTopologyFile(dir.string()));
  EXPECT_FALSE(r.ok());
}

TEST(LoaderFile, WrittenTempFileLoads) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "netdiag_loader_tmp";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.yaml").string();
  {
    std::ofstream out(path, std::ios::binary);
    out << "nodes: [{name: a, role: leaf}, {name: b, role: spine}]\nlinks: [[a:1, b:1]]\n";
  }
  LoadResult r = loadTopologyFile(path);
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_EQ(r.topology.findDirLink("a:1->b:1"), 0u);
  std::filesystem::remove_all(dir);
}

TEST(LoaderYaml, AnchorsAndAliases) {
  LoadResult r = loadText(R"(
defaults:
  spine_role: &sp spine
  fast: &fast 400
  spare: &spare [leaf1:swp3, spine2:swp3]
nodes:
  - {name: spine1, role: *sp}
  - name: spine2
    role: *sp
  - &leafnode
    name: leaf1
    role: leaf
    pod: &pod 7
  - {name: leaf2, role: leaf, pod: *pod}
links:
  - {a: leaf1:swp1, b: spine1:swp1, speed_gbps: *fast}
  - {a: leaf1:swp2, b: spine2:swp1, speed_gbps: *fast}
  - *spare
  - [leaf2:swp1, spine1:swp2]
)");
  ASSERT_TRUE(r.ok()) << dump(r);
  const Topology& t = r.topology;
  ASSERT_EQ(t.nodeCount(), 4u);
  EXPECT_EQ(t.node(0).role, Role::kSpine);
  EXPECT_EQ(t.node(1).role, Role::kSpine);
  EXPECT_EQ(t.node(1).role_name, "spine");
  EXPECT_THAT(nodeNamed(t, "leaf2").pod, Optional(7));
  ASSERT_EQ(t.linkCount(), 4u);
  EXPECT_EQ(t.link(0).speed_gbps, 400);
  EXPECT_EQ(t.link(1).speed_gbps, 400);
  EXPECT_EQ(t.portRef(t.link(2).a), "leaf1:swp3");
  EXPECT_EQ(t.portRef(t.link(2).b), "spine2:swp3");
}

TEST(LoaderYaml, AliasedNodeIsADuplicate) {
  LoadResult r = loadText(
      "nodes:\n"
      "  - &n {name: a, role: leaf}\n"
      "  - *n\n"
      "links: []\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.errors, Contains(Field(&Diagnostic::message, HasSubstr("'a'")))) << dump(r);
}

TEST(LoaderYaml, UnknownAliasIsAnErrorAtItsLine) {
  LoadResult r = loadText("nodes:\n  - {name: a, role: leaf}\nlinks: *nowhere\n");
  ASSERT_FALSE(r.ok());
  ASSERT_THAT(r.errors, SizeIs(1));
  EXPECT_EQ(r.errors[0].line, 3u);
  EXPECT_THAT(r.errors[0].message, HasSubstr("unknown alias '*nowhere'"));
}

// Bytes that are not UTF-8 are named at their own line, though the parser
// finds them while it decodes ahead, by byte offset.
TEST(LoaderYaml, BadUtf8IsASyntaxErrorAtItsLine) {
  std::string text = "nodes:\n  - {name: a, role: leaf}\n";
  for (int i = 0; i < 3000; ++i) text += "  # filler line " + std::to_string(i) + "\n";
  text += "  - {name: b, role: \"caf\xe9\"}\n";
  LoadResult r = loadText(text);
  ASSERT_FALSE(r.ok());
  ASSERT_THAT(r.errors, SizeIs(1));
  EXPECT_EQ(r.errors[0].line, 3003u);
  EXPECT_THAT(r.errors[0].message, HasSubstr("UTF-8"));
}

TEST(LoaderYaml, JsonWithoutSpacesLoads) {
  LoadResult r = loadText(R"({"nodes":[{"name":"a","role":"leaf"},{"name":"h","role":"host"}],)"
                          R"("links":[["h:eth0","a:swp1"]]})");
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_EQ(r.topology.linkCount(), 1u);
}

TEST(LoaderYaml, NullValuesAreAbsent) {
  LoadResult r = loadText(R"(
nodes:
  - name: a
    role: leaf
    addr: ~
    pod: null
  - name: b
    role: spine
    addr:
    pod: ~
  - {name: h, role: host, addr: Null, pod: NULL}
links:
  - {a: a:p1, b: b:p1, speed_gbps: ~, addr_a: null, addr_b: ~}
  - {a: a:p2, b: b:p2, speed_gbps: , addr_a: , addr_b: 10.0.0.1}
  - [h:eth0, a:p3]
)");
  ASSERT_TRUE(r.ok()) << dump(r);
  const Topology& t = r.topology;
  for (const Node& n : t.nodes()) {
    EXPECT_EQ(n.addr, "") << n.name;
    EXPECT_EQ(n.pod, std::nullopt) << n.name;
  }
  EXPECT_EQ(t.link(0).speed_gbps, 0);
  EXPECT_EQ(t.port(t.link(0).a).addr, "");
  EXPECT_EQ(t.port(t.link(0).b).addr, "");
  EXPECT_EQ(t.link(1).speed_gbps, 0);
  EXPECT_EQ(t.port(t.link(1).a).addr, "");
  EXPECT_EQ(t.port(t.link(1).b).addr, "10.0.0.1");
}

TEST(LoaderYaml, NullFabricNameIsAbsent) {
  // 'name' is optional; a null value means absent, as for every other field.
  for (const char* text :
       {"name: ~\nnodes: [{name: a, role: leaf}]\n", "name: null\nnodes: [{name: a, role: leaf}]\n",
        "name:\nnodes: [{name: a, role: leaf}]\n"}) {
    LoadResult r = loadText(text);
    EXPECT_TRUE(r.ok()) << text << dump(r);
    EXPECT_EQ(r.topology.name, "") << text;
  }
}

TEST(LoaderYaml, NullRoleIsMissing) {
  LoadResult r = loadText("nodes:\n  - {name: a, role: leaf}\n  - {name: b, role: ~}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.errors, Contains(diagAt(3, {"'b'", "role"}))) << dump(r);
}

TEST(LoaderYaml, QuotedScalars) {
  LoadResult r = loadText(R"(
name: "pod a: #1"
nodes:
  - {name: "spine1", role: 'spine'}
  - {name: 'leaf1', role: "leaf", pod: 3, addr: "10.0.0.1"}
  - {name: x1, role: "null"}
  - {name: x2, role: 'it''s'}
  - {name: x3, role: "tab\there"}
  - {name: x4, role: "~"}
links:
  - ["leaf1:swp1", 'spine1:swp1']
  - {"a": "leaf1:swp2", 'b': "spine1:swp2", "speed_gbps": 100, addr_a: "fe80::1"}
)");
  ASSERT_TRUE(r.ok()) << dump(r);
  const Topology& t = r.topology;
  EXPECT_EQ(t.name, "pod a: #1");
  EXPECT_EQ(nodeNamed(t, "spine1").role, Role::kSpine);
  EXPECT_EQ(nodeNamed(t, "leaf1").addr, "10.0.0.1");
  EXPECT_EQ(nodeNamed(t, "x1").role_name, "null");  // quoted: a word, not a null
  EXPECT_EQ(nodeNamed(t, "x1").role, Role::kOther);
  EXPECT_EQ(nodeNamed(t, "x2").role_name, "it's");
  EXPECT_EQ(nodeNamed(t, "x3").role_name, "tab\there");
  EXPECT_EQ(nodeNamed(t, "x4").role_name, "~");
  ASSERT_EQ(t.linkCount(), 2u);
  EXPECT_EQ(t.findDirLink("leaf1:swp1->spine1:swp1"), 0u);
  EXPECT_EQ(t.link(1).speed_gbps, 100);
  EXPECT_EQ(t.port(t.link(1).a).addr, "fe80::1");
}

TEST(LoaderYaml, CrlfLineEndingsAndByteOrderMark) {
  LoadResult r = loadText(
      "\xef\xbb\xbfnodes:\r\n"
      "  - {name: a, role: leaf}\r\n"
      "  - {name: b, role: spine}\r\n"
      "links:\r\n"
      "  - [a:p, b:q]\r\n"
      "  - [a:r, c:q]\r\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.errors, ElementsAre(diagAt(6, {"'c'"}))) << dump(r);
  EXPECT_EQ(r.topology.node(0).name, "a");
  EXPECT_EQ(r.topology.link(0).line, 5u);
}

TEST(LoaderYaml, FlowAndBlockStylesMix) {
  LoadResult r = loadText(
      "{nodes: [{name: a, role: leaf}, {name: b, role: spine}],\n"
      " links: [{a: 'a:p', b: 'b:q', speed_gbps: 1e2}]}\n");
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_EQ(r.topology.link(0).speed_gbps, 100);
}

TEST(LoaderJson, CompactAndTabIndentedJson) {
  // What json.dumps(separators=(",", ":")) and Go's MarshalIndent("\t") write.
  for (const char* text :
       {R"({"nodes":[{"name":"a","role":"leaf","pod":0},{"name":"b","role":"spine"}],)"
        R"("links":[["a:p","b:q"],{"a":"a:r","b":"b:s","speed_gbps":25}]})",
        "{\n\t\"nodes\": [\n\t\t{\"name\": \"a\", \"role\": \"leaf\", \"pod\": 0},\n"
        "\t\t{\"name\": \"b\", \"role\": \"spine\"}\n\t],\n\t\"links\": [\n"
        "\t\t[\"a:p\", \"b:q\"],\n\t\t{\"a\": \"a:r\", \"b\": \"b:s\", \"speed_gbps\": 25}\n"
        "\t]\n}\n"}) {
    LoadResult r = loadText(text, "t.json");
    ASSERT_TRUE(r.ok()) << text << "\n" << dump(r);
    EXPECT_EQ(r.topology.nodeCount(), 2u);
    EXPECT_THAT(r.topology.node(0).pod, Optional(0));
    ASSERT_EQ(r.topology.linkCount(), 2u);
    EXPECT_EQ(r.topology.link(1).speed_gbps, 25);
  }
}

TEST(LoaderJson, EscapesInStrings) {
  LoadResult r = loadText(
      R"({"name": "f\"ab\\ric\/1 \u00e9", "nodes": [{"name": "a", "role": "x\/y"}], "links": []})",
      "t.json");
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_EQ(r.topology.name, "f\"ab\\ric/1 \xc3\xa9");
  EXPECT_EQ(r.topology.node(0).role_name, "x/y");
}

// ---------------------------------------------------------------------------
// Rules, each checked on a minimal text (complements the fixtures).

TEST(LoaderRules, DuplicateOfABrokenNodeIsStillReported) {
  // The first 'a' is broken (no role), the second is fine: the name is still
  // declared twice, which the contract forbids.
  LoadResult r = loadText(
      "nodes:\n"
      "  - {name: a}\n"
      "  - {name: a, role: leaf}\n"
      "links: []\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.errors, Contains(diagAt(2, {"'a'", "role"}))) << dump(r);
  EXPECT_THAT(r.errors, Contains(diagAt(3, {"duplicate", "'a'"}))) << dump(r);
}

TEST(LoaderRules, LinksToABrokenNodeAreNotAlsoUndeclared) {
  LoadResult r = loadText(
      "nodes:\n"
      "  - {name: a, role: leaf, pod: x}\n"
      "  - {name: b, role: spine}\n"
      "links:\n"
      "  - [a:p, b:q]\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.errors, SizeIs(1)) << dump(r);
  EXPECT_THAT(r.errors, Not(Contains(Field(&Diagnostic::message, HasSubstr("undeclared")))));
}

TEST(LoaderRules, SamePortTwiceInOneLinkIsRejected) {
  LoadResult r = loadText(
      "nodes: [{name: a, role: leaf}]\n"
      "links:\n"
      "  - [a:p, a:p]\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.errors, Contains(diagAt(3, {"a:p"}))) << dump(r);
}

TEST(LoaderRules, BothEndsOfALinkAlreadyTaken) {
  LoadResult r = loadText(
      "nodes: [{name: a, role: leaf}, {name: b, role: spine}]\n"
      "links:\n"
      "  - [a:p, b:q]\n"
      "  - [b:q, a:p]\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.errors, Contains(diagAt(4, {"a:p", "line 3"}))) << dump(r);
  EXPECT_THAT(r.errors, Contains(diagAt(4, {"b:q", "line 3"}))) << dump(r);
  EXPECT_EQ(r.topology.linkCount(), 1u);
}

TEST(LoaderRules, BadPortReferences) {
  for (const char* ref : {"a", "a:", ":p", "a:p:q", "a b:p", "a:p q", "a:p#", "\"\"", "a::p"}) {
    std::string text = "nodes: [{name: a, role: leaf}, {name: b, role: spine}]\nlinks:\n  - [" +
                       std::string(ref) + ", b:q]\n";
    LoadResult r = loadText(text);
    EXPECT_FALSE(r.ok()) << ref;
    EXPECT_THAT(r.errors, Contains(Field(&Diagnostic::line, 3u))) << ref << "\n" << dump(r);
  }
}

TEST(LoaderRules, BadNodeNames) {
  for (const char* name : {"\"a b\"", "\"a:b\"", "a/b", "\"\"", "\"a\\u00e9\"", "a*b"}) {
    std::string text = "nodes:\n  - {name: " + std::string(name) + ", role: leaf}\n";
    LoadResult r = loadText(text);
    EXPECT_FALSE(r.ok()) << name;
    EXPECT_THAT(r.errors, Contains(Field(&Diagnostic::line, 2u))) << name << "\n" << dump(r);
  }
}

TEST(LoaderRules, NodeAndLinkShapes) {
  struct Case {
    const char* text;
    uint32_t line;
  };
  for (const Case& c : std::vector<Case>{
           {"nodes:\n  - just-a-name\n", 2},
           {"nodes:\n  - [a, leaf]\n", 2},
           {"nodes:\n  - {role: leaf}\n", 2},
           {"nodes:\n  - {name: [a], role: leaf}\n", 2},
           {"nodes:\n  - {name: a, role: [leaf]}\n", 2},
           {"nodes:\n  - {name: a, role: ''}\n", 2},
           {"nodes: [{name: a, role: leaf}]\nlinks:\n  - a:p\n", 3},
           {"nodes: [{name: a, role: leaf}]\nlinks:\n  - []\n", 3},
           {"nodes: [{name: a, role: leaf}]\nlinks:\n  - {b: a:p}\n", 3},
           {"nodes: [{name: a, role: leaf}]\nlinks:\n  - [[a:p], a:q]\n", 3},
           {"nodes: [{name: a, role: leaf}]\nlinks: {x: y}\n", 2},
           {"nodes: [{name: a, role: leaf}]\nlinks: oops\n", 2},
           {"nodes: oops\n", 1},
           {"links: []\n", 1},
           {"name: [x]\nnodes: []\n", 1},
           {"just a scalar\n", 1},
       }) {
    LoadResult r = loadText(c.text);
    EXPECT_FALSE(r.ok()) << c.text;
    EXPECT_THAT(r.errors, Contains(Field(&Diagnostic::line, c.line))) << c.text << dump(r);
  }
}

TEST(LoaderRules, PodAndSpeedValues) {
  auto pod = [](const std::string& v) {
    return loadText("nodes:\n  - {name: a, role: leaf, pod: " + v + "}\n");
  };
  EXPECT_THAT(pod("0").topology.node(0).pod, Optional(0));
  EXPECT_THAT(pod("-3").topology.node(0).pod, Optional(-3));
  EXPECT_THAT(pod("9223372036854775807").topology.node(0).pod, Optional(INT64_MAX));
  for (const char* bad : {"1.5", "x", "1e3", "0x10", "99999999999999999999", "[1]", "'1 '"}) {
    LoadResult r = pod(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.errors, Contains(Field(&Diagnostic::line, 2u))) << bad << dump(r);
  }
  auto speed = [](const std::string& v) {
    return loadText(
        "nodes: [{name: a, role: leaf}, {name: b, role: spine}]\n"
        "links:\n  - {a: a:p, b: b:q, speed_gbps: " +
        v + "}\n");
  };
  EXPECT_EQ(speed("0").topology.link(0).speed_gbps, 0);
  EXPECT_EQ(speed("2.5").topology.link(0).speed_gbps, 2.5);
  EXPECT_EQ(speed("1e3").topology.link(0).speed_gbps, 1000);
  for (const char* bad : {"-1", "-0.5", "x", "100G", "inf", "nan", ".inf", "[1]", "1e999"}) {
    LoadResult r = speed(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.errors, Contains(Field(&Diagnostic::line, 3u))) << bad << dump(r);
  }
}

// ---------------------------------------------------------------------------
// Warnings: legal but probably a mistake; the topology still loads.

TEST(LoaderWarnings, DuplicatedInterfaceAddress) {
  LoadResult r = loadText(
      "nodes: [{name: a, role: leaf}, {name: b, role: spine}]\n"
      "links:\n"
      "  - {a: a:p1, b: b:p1, addr_a: 10.0.0.1, addr_b: 10.0.0.2}\n"
      "  - {a: a:p2, b: b:p2, addr_a: 10.0.0.3, addr_b: 10.0.0.1}\n");
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_THAT(r.warnings, Contains(diagAt(4, {"10.0.0.1"}))) << dump(r);
  EXPECT_EQ(r.topology.linkCount(), 2u);
}

TEST(LoaderWarnings, NodeAddressUsedByAnotherNodesPort) {
  LoadResult r = loadText(
      "nodes:\n"
      "  - {name: a, role: leaf}\n"
      "  - {name: b, role: spine, addr: 10.0.0.1}\n"
      "  - {name: h, role: host, addr: 10.9.0.1}\n"
      "links:\n"
      "  - {a: a:p1, b: b:p1, addr_a: 10.0.0.1}\n"
      "  - {a: h:eth0, b: a:p2, addr_a: 10.9.0.1}\n");
  ASSERT_TRUE(r.ok()) << dump(r);
  // b's address is a's interface: ambiguous. h's address is its own NIC's: fine.
  EXPECT_THAT(r.warnings, Contains(Field(&Diagnostic::message, HasSubstr("10.0.0.1")))) << dump(r);
  EXPECT_THAT(r.warnings, Not(Contains(Field(&Diagnostic::message, HasSubstr("10.9.0.1")))))
      << dump(r);
}

TEST(LoaderWarnings, HostWithoutLinks) {
  LoadResult r = loadText("nodes:\n  - {name: a, role: leaf}\n  - {name: h, role: host}\n");
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_THAT(r.warnings, Contains(diagAt(3, {"'h'"}))) << dump(r);
}

TEST(LoaderWarnings, DuplicateKeysNameBothLinesAndTheFirstWins) {
  LoadResult r = loadText(
      "name: one\n"                   // 1
      "nodes:\n"                      // 2
      "  - name: a\n"                 // 3
      "    role: leaf\n"              // 4
      "    role: spine\n"             // 5
      "  - {name: b, role: spine}\n"  // 6
      "links:\n"                      // 7
      "  - a: a:p1\n"                 // 8
      "    b: b:p1\n"                 // 9
      "    a: a:p9\n"                 // 10
      "name: two\n");                 // 11
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_THAT(r.warnings, Contains(diagAt(5, {"duplicate key 'role'", "line 5", "line 4"})))
      << dump(r);
  EXPECT_THAT(r.warnings, Contains(diagAt(10, {"duplicate key 'a'", "line 10", "line 8"})))
      << dump(r);
  EXPECT_THAT(r.warnings, Contains(diagAt(11, {"duplicate key 'name'", "line 11", "line 1"})))
      << dump(r);
  // The behaviour the warnings describe: the first value is used.
  EXPECT_EQ(r.topology.name, "one");
  EXPECT_EQ(nodeNamed(r.topology, "a").role, Role::kLeaf);
  EXPECT_TRUE(r.topology.findPort("a:p1").has_value());
  EXPECT_FALSE(r.topology.findPort("a:p9").has_value());
}

TEST(LoaderWarnings, DuplicateKeysInAWideMap) {
  // Past the pairwise check's size: the hash map path.
  std::string text = "nodes:\n  - name: a\n    role: leaf\n";
  for (int i = 0; i < 100; ++i) text += "    k" + std::to_string(i) + ": 1\n";
  text += "    k7: 2\n";  // line 104; k7 first at line 11
  LoadResult r = loadText(text);
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_THAT(r.warnings, ElementsAre(diagAt(104, {"duplicate key 'k7'", "line 11"}))) << dump(r);
}

TEST(LoaderDiagnostics, ControlAndBidiCharactersAreEscapedWhenShown) {
  // An ESC sequence (clear screen) and U+202E (right-to-left override) in
  // node names must not reach the terminal raw.
  LoadResult r = loadText(
      "nodes:\n"
      "  - {name: \"a\\e[2Jb\", role: leaf}\n"
      "  - {name: \"c\\u202Ed\", role: leaf}\n",
      "t\x1b.yaml");
  ASSERT_THAT(r.errors, SizeIs(2)) << dump(r);
  const std::string first = r.errors[0].str();
  const std::string second = r.errors[1].str("error");
  EXPECT_EQ(first.find('\x1b'), std::string::npos) << first;
  EXPECT_THAT(first, HasSubstr("t\\x1b.yaml:2: "));
  EXPECT_THAT(first, HasSubstr("'a\\x1b[2Jb'"));
  EXPECT_EQ(second.find("\xE2\x80\xAE"), std::string::npos) << second;
  EXPECT_THAT(second, HasSubstr("t\\x1b.yaml:3: error: invalid node name 'c\\u202ed'"));
  // The message itself keeps the name as written, for --json and callers.
  EXPECT_THAT(r.errors[0].message, HasSubstr("'a\x1b[2Jb'"));
}

// ---------------------------------------------------------------------------
// Robustness: whatever the bytes, an error list, never a crash.

constexpr const char* kSmallYaml = R"(name: t
nodes:
  - name: s1
    role: spine
  - name: l1
    role: leaf
    pod: 1
    addr: 10.0.0.1
  - {name: h1, role: host, addr: 10.1.0.1}
links:
  - [h1:eth0, l1:swp1]
  - a: l1:swp49
    b: s1:swp1
    speed_gbps: 400
    addr_a: 10.0.1.0
    addr_b: 10.0.1.1
)";

// Lines of `s`, counting a lone CR as a line break too (YAML does).
size_t lineCount(const std::string& s) {
  size_t n = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || (s[i] == '\r' && (i + 1 == s.size() || s[i + 1] != '\n'))) ++n;
  }
  return n;
}

// One random edit of `s`.
void mutate(std::string& s, std::mt19937& rng) {
  static const std::string kInteresting = "[]{}:,-#&*!|>'\"%@`?~ \t\n\r\\0123456789abcxyz.";
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n)(rng); };
  auto byte = [&]() -> char {
    if (pick(3) == 0) return static_cast<char>(pick(255));
    return kInteresting[pick(kInteresting.size() - 1)];
  };
  switch (pick(6)) {
    case 0:  // delete a range
      if (!s.empty()) {
        size_t at = pick(s.size() - 1);
        s.erase(at, 1 + pick(std::min<size_t>(8, s.size() - at - 1)));
      }
      break;
    case 1: {  // insert bytes
      size_t at = pick(s.size());
      std::string ins;
      for (size_t k = 0, n = 1 + pick(4); k < n; ++k) ins += byte();
      s.insert(at, ins);
      break;
    }
    case 2:  // replace a byte
      if (!s.empty()) s[pick(s.size() - 1)] = byte();
      break;
    case 3:  // truncate
      s.resize(pick(s.size()));
      break;
    case 4: {  // duplicate a line
      std::vector<std::string> lines;
      std::istringstream in(s);
      for (std::string l; std::getline(in, l);) lines.push_back(l);
      if (lines.empty()) break;
      size_t i = pick(lines.size() - 1);
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(pick(lines.size())), lines[i]);
      s.clear();
      for (const auto& l : lines) s += l + "\n";
      break;
    }
    case 5: {  // swap two lines
      std::vector<std::string> lines;
      std::istringstream in(s);
      for (std::string l; std::getline(in, l);) lines.push_back(l);
      if (lines.size() < 2) break;
      std::swap(lines[pick(lines.size() - 1)], lines[pick(lines.size() - 1)]);
      s.clear();
      for (const auto& l : lines) s += l + "\n";
      break;
    }
    default:  // duplicate a range in place
      if (!s.empty()) {
        size_t at = pick(s.size() - 1);
        s.insert(at, s.substr(at, 1 + pick(16)));
      }
      break;
  }
}

TEST(LoaderProperty, RandomMutationsNeverCrashAndGiveWellFormedErrors) {
  ASSERT_TRUE(loadText(kSmallYaml).ok()) << dump(loadText(kSmallYaml));
  std::mt19937 rng(20240601);
  int failures = 0;
  int ok_count = 0;
  constexpr int kIterations = 4000;
  for (int iter = 0; iter < kIterations && failures < 5; ++iter) {
    std::string text = kSmallYaml;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) mutate(text, rng);
    const size_t lines = lineCount(text);
    LoadResult r;
    try {
      r = loadText(text);
    } catch (const std::exception& ex) {
      ADD_FAILURE() << "iteration " << iter << " threw " << ex.what() << " on:\n" << text;
      ++failures;
      continue;
    } catch (...) {
      ADD_FAILURE() << "iteration " << iter << " threw a non-std exception on:\n" << text;
      ++failures;
      continue;
    }
    if (r.ok()) {
      ++ok_count;
      continue;
    }
    for (const Diagnostic& d : r.errors) {
      if (d.line < 1 || d.line > lines + 1 || d.message.empty()) {
        ADD_FAILURE() << "iteration " << iter << ": bad diagnostic '" << d.str() << "' (line "
                      << d.line << ", text has " << lines << " lines) on:\n"
                      << text;
        ++failures;
        break;
      }
    }
  }
  // The mutations keep some inputs valid and break most of them.
  EXPECT_GT(ok_count, 0);
  EXPECT_LT(ok_count, kIterations);
}

TEST(LoaderProperty, DeepNestingIsAnErrorNotACrash) {
  for (const std::string& text :
       {std::string(100000, '['), std::string(100000, '{'),
        std::string(100000, '[') + std::string(100000, ']'), "nodes: " + std::string(100000, '['),
        "nodes:\n  - " + std::string(100000, '[') + "\n"}) {
    LoadResult r;
    ASSERT_NO_THROW(r = loadText(text));
    ASSERT_FALSE(r.ok());
    for (const Diagnostic& d : r.errors) {
      EXPECT_GE(d.line, 1u);
      EXPECT_LE(d.line, lineCount(text) + 1);
      EXPECT_FALSE(d.message.empty());
    }
  }
}

TEST(LoaderProperty, DeepBlockNestingIsAnErrorNotACrash) {
  std::string indented = "nodes:\n";
  for (size_t i = 0; i < 2500; ++i) indented += std::string(i + 2, ' ') + "- \n";
  std::string compact = "nodes:\n  ";
  for (int i = 0; i < 100000; ++i) compact += "- ";
  for (const std::string& text : {indented, compact}) {
    LoadResult r;
    ASSERT_NO_THROW(r = loadText(text));
    EXPECT_FALSE(r.ok());
    for (const Diagnostic& d : r.errors) {
      EXPECT_GE(d.line, 1u);
      EXPECT_LE(d.line, lineCount(text) + 1);
    }
  }
}

TEST(LoaderProperty, BinaryGarbageIsAnError) {
  std::string text;
  std::mt19937 rng(7);
  for (int i = 0; i < 4096; ++i) text += static_cast<char>(rng() & 0xff);
  LoadResult r;
  ASSERT_NO_THROW(r = loadText(text));
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace netdiag::topology
