// Runs the real `netdiag` binary and checks exit codes and output streams:
// 0 ok, 1 findings, 2 usage or input error; data on stdout, diagnostics on
// stderr.

#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "tests/cli/cli_harness.h"

namespace {

namespace fs = std::filesystem;
using netdiag::testing::CliTest;
using netdiag::testing::Outcome;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr const char* kSmall = R"(name: tiny
nodes:
  - {name: spine1, role: spine}
  - {name: leaf1, role: leaf}
  - {name: leaf2, role: leaf}
  - {name: h1, role: host}
  - {name: h2, role: host}
links:
  - [h1:eth0, leaf1:swp1]
  - [h2:eth0, leaf2:swp1]
  - [leaf1:swp49, spine1:swp1]
  - [leaf2:swp49, spine1:swp2]
)";

TEST_F(CliTest, VersionAndHelp) {
  Outcome v = run("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_THAT(v.out, HasSubstr("netdiag "));
  Outcome h = run("--help");
  EXPECT_EQ(h.code, 0);
  EXPECT_THAT(h.out, HasSubstr("Exit codes"));
  EXPECT_THAT(h.out, HasSubstr("topo"));
}

TEST_F(CliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(run("").code, 2);
  EXPECT_EQ(run("--no-such-flag").code, 2);
  EXPECT_EQ(run("topo").code, 2);
  EXPECT_EQ(run("topo validate").code, 2);
  Outcome r = run("topo frobnicate x");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, IsEmpty());
}

TEST_F(CliTest, ValidateGoodFile) {
  write("t.yaml", kSmall);
  Outcome r = run("topo validate " + path("t.yaml"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ok:"));
  EXPECT_THAT(r.out, HasSubstr("5 nodes (2 hosts, 2 host ports)"));
  EXPECT_THAT(r.err, IsEmpty());
}

TEST_F(CliTest, ValidateBadFileReportsEveryProblemWithLineAndExitsTwo) {
  write("bad.yaml", R"(nodes:
  - {name: leaf1, role: leaf}
  - {name: leaf1, role: leaf}
  - {name: h1, role: host}
links:
  - [h1:eth0, leaf9:swp1]
  - [leaf1:swp1, leaf1:swp2]
)");
  Outcome r = run("topo validate " + path("bad.yaml"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, IsEmpty());
  EXPECT_THAT(r.err, HasSubstr(path("bad.yaml") + ":3: error: duplicate node name 'leaf1'"));
  EXPECT_THAT(r.err, HasSubstr(":6: error: link names undeclared node 'leaf9'"));
  EXPECT_THAT(r.err, HasSubstr(":7: error: link joins node 'leaf1' to itself"));
}

TEST_F(CliTest, ValidateJsonPutsDiagnosticsInTheData) {
  write("bad.yaml", "nodes:\n  - {name: h1}\n");
  Outcome r = run("topo validate --json " + path("bad.yaml"));
  EXPECT_EQ(r.code, 2);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["valid"].get<bool>());
  ASSERT_EQ(j["errors"].size(), 1u);
  EXPECT_EQ(j["errors"][0]["line"], 2);
  EXPECT_THAT(j["errors"][0]["message"].get<std::string>(), HasSubstr("'h1' has no 'role'"));
}

TEST_F(CliTest, ValidateWarningsExitOne) {
  write("w.yaml", R"(nodes:
  - {name: leaf1, role: leaf}
  - {name: h1, role: host}
  - {name: h2, role: host}
links:
  - {a: h1:eth0, b: leaf1:swp1, addr_a: 10.0.0.1, addr_b: 10.0.0.2}
  - {a: h2:eth0, b: leaf1:swp2, addr_a: 10.0.0.1, addr_b: 10.0.0.3}
)");
  Outcome r = run("topo validate " + path("w.yaml"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr(":7: warning: address 10.0.0.1"));
}

TEST_F(CliTest, ValidateMissingFile) {
  Outcome r = run("topo validate " + path("nope.yaml"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("cannot open"));
}

TEST_F(CliTest, GenerateEachKindThenValidate) {
  for (std::string args :
       {"leaf-spine --spines 2 --leaves 3 --hosts-per-leaf 2 -o ", "fat-tree -k 4 -o ",
        "rail --sus 2 --hosts-per-su 2 --rails 2 "
        "--spines 2 --leaf-uplinks 2 --cores 2 -o "}) {
    for (std::string ext : {".yaml", ".json"}) {
      std::string file = path("g" + ext);
      Outcome g = run("topo generate " + args + file);
      ASSERT_EQ(g.code, 0) << args << g.err;
      EXPECT_THAT(g.out, IsEmpty());
      EXPECT_THAT(g.err, HasSubstr("generated"));
      Outcome v = run("topo validate " + file);
      EXPECT_EQ(v.code, 0) << args << ext << v.err;
      if (ext == ".json") {
        EXPECT_TRUE(nlohmann::json::accept(slurp(file)));
      }
    }
  }
}

TEST_F(CliTest, GenerateToStdoutWritesTheFile) {
  Outcome g = run("topo generate fat-tree -k 2 --no-addresses");
  EXPECT_EQ(g.code, 0);
  EXPECT_THAT(g.out, HasSubstr("nodes:"));
  EXPECT_THAT(g.out, Not(HasSubstr("addr")));
}

TEST_F(CliTest, GenerateBadParametersWritesNothing) {
  Outcome g = run("topo generate fat-tree -k 3 -o " + path("x.yaml"));
  EXPECT_EQ(g.code, 2);
  EXPECT_THAT(g.err, HasSubstr("k must be even"));
  EXPECT_FALSE(fs::exists(path("x.yaml")));
  EXPECT_EQ(run("topo generate rail --spines 3 --leaf-uplinks 4 -o " + path("x.yaml")).code, 2);
  EXPECT_EQ(run("topo generate leaf-spine --spines abc").code, 2);
  EXPECT_FALSE(fs::exists(path("x.yaml")));
}

TEST_F(CliTest, ShowCountsAndOversubscription) {
  ASSERT_EQ(
      run("topo generate leaf-spine --spines 2 --leaves 4 --hosts-per-leaf 8 -o " + path("ls.yaml"))
          .code,
      0);
  Outcome r = run("topo show --json " + path("ls.yaml"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["hosts"], 32);
  EXPECT_EQ(j["links"], 32 + 8);
  bool saw_leaf = false;
  for (const auto& t : j["tiers"]) {
    if (t["role"] == "leaf") {
      saw_leaf = true;
      EXPECT_EQ(t["nodes"], 4);
      EXPECT_DOUBLE_EQ(t["oversubscription"].get<double>(), 4.0);  // 8 down, 2 up
    }
  }
  EXPECT_TRUE(saw_leaf);
  Outcome text = run("topo show " + path("ls.yaml"));
  EXPECT_EQ(text.code, 0);
  EXPECT_THAT(text.out, HasSubstr("4.00:1"));
}

TEST_F(CliTest, ShowInvalidFileExitsTwo) {
  write("bad.yaml", "nodes: 3\n");
  Outcome r = run("topo show " + path("bad.yaml"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(":1: error: 'nodes' must be a sequence"));
}

TEST_F(CliTest, PathsCountsAndLists) {
  write("t.yaml", kSmall);
  Outcome r = run("topo paths --json " + path("t.yaml") + " h1:eth0 h2:eth0");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["count"], 1);
  ASSERT_EQ(j["paths"].size(), 1u);
  EXPECT_EQ(j["paths"][0], nlohmann::json::parse(
                               R"(["h1:eth0","leaf1:swp1","leaf1:swp49","spine1:swp1",
                                   "spine1:swp2","leaf2:swp49","leaf2:swp1","h2:eth0"])"));
  Outcome text = run("topo paths " + path("t.yaml") + " h1:eth0 h2:eth0");
  EXPECT_THAT(text.out, HasSubstr("1 ECMP path from h1:eth0 to h2:eth0, 4 hops each"));
}

TEST_F(CliTest, PathsLimitAndFatTreeCount) {
  ASSERT_EQ(run("topo generate fat-tree -k 8 -o " + path("ft.yaml")).code, 0);
  Outcome r =
      run("topo paths --json --limit 3 " + path("ft.yaml") + " host1-1-1:eth0 host2-1-1:eth0");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["count"], 16);  // (k/2)^2 between pods
  EXPECT_EQ(j["paths"].size(), 3u);
  EXPECT_TRUE(j["truncated"].get<bool>());
}

TEST_F(CliTest, PathsNoPathIsAFindingAndBadPortIsAnError) {
  write("t.yaml", kSmall);
  Outcome down = run("topo paths " + path("t.yaml") + " h1:eth0 h2:eth0 --down leaf1:swp49");
  EXPECT_EQ(down.code, 1);
  EXPECT_THAT(down.out, HasSubstr("0 paths"));
  EXPECT_EQ(run("topo paths " + path("t.yaml") + " h1:eth0 nope:eth0").code, 2);
  EXPECT_EQ(run("topo paths " + path("t.yaml") + " h1:eth0 leaf1:swp49").code, 2);
  EXPECT_EQ(run("topo paths " + path("t.yaml") + " h1:eth0 h2:eth0 --down bogus").code, 2);
}

}  // namespace

namespace {

using netdiag::testing::CliTest;
using netdiag::testing::Outcome;

// Every malformed fixture gets exit 2 and a FILE:LINE message on stderr.
TEST_F(CliTest, EveryBadFixtureExitsTwoWithFileAndLine) {
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(NETDIAG_FIXTURES) / "topologies")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("bad_", 0) != 0) continue;
    ++seen;
    Outcome r = run("topo validate " + entry.path().string());
    EXPECT_EQ(r.code, 2) << name;
    EXPECT_THAT(r.out, IsEmpty()) << name;
    EXPECT_THAT(r.err, HasSubstr(entry.path().string() + ":")) << name;
    EXPECT_THAT(r.err, HasSubstr(": error: ")) << name;
  }
  EXPECT_GE(seen, 15);
}

}  // namespace

// `-o` never replaces or writes through anything but a regular file: a
// symlink (to a file the attacker wants destroyed), a device or a FIFO is
// refused and left alone; a regular file is replaced whole, with no
// temporary file left beside it.
TEST_F(CliTest, OutputRefusesSymlinksAndSpecialFiles) {
  write("victim", "precious\n");
  fs::create_symlink(path("victim"), path("link.yaml"));
  Outcome g = run("topo generate fat-tree -k 2 -o " + path("link.yaml"));
  EXPECT_EQ(g.code, 2);
  EXPECT_THAT(g.err, HasSubstr("symbolic link"));
  EXPECT_TRUE(fs::is_symlink(path("link.yaml")));
  EXPECT_EQ(slurp(path("victim")), "precious\n");

  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  g = run("topo generate fat-tree -k 2 -o " + path("fifo"));
  EXPECT_EQ(g.code, 2);
  EXPECT_THAT(g.err, HasSubstr("not a regular file"));
  EXPECT_EQ(fs::status(path("fifo")).type(), fs::file_type::fifo);

  if (::geteuid() == 0) {  // as root the old code replaced /dev/null with a file
    g = run("topo generate fat-tree -k 2 -o /dev/null");
    EXPECT_EQ(g.code, 2);
    EXPECT_EQ(fs::status("/dev/null").type(), fs::file_type::character);
  }

  write("out.yaml", "old\n");
  g = run("topo generate fat-tree -k 2 -o " + path("out.yaml"));
  EXPECT_EQ(g.code, 0) << g.err;
  EXPECT_THAT(slurp(path("out.yaml")), HasSubstr("nodes:"));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path("out.yaml"))));
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  }
}
