// The executors against real processes and a real HTTP server: the FRR
// executor runs a stand-in vtysh (the real one is exercised on the e2e
// fabric), the webhook one posts to an httplib server on loopback.

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "actuator/frr_executor.h"
#include "actuator/webhook_executor.h"
#include "tests/unit/actuator/test_keys.h"

namespace netdiag::actuator {
namespace {

using testing::signedAction;

namespace fs = std::filesystem;

class Executors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("nd-exec-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // An executable shell script.
  std::string script(const std::string& name, const std::string& body) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << "#!/bin/sh\n" << body;
    ::chmod(path.c_str(), 0700);
    return path;
  }
  fs::path dir_;
};

TEST_F(Executors, FrrCommandsShutTheSessionAndOnlyOptionallyTheInterface) {
  v1::DrainAction a = signedAction("leaf0", "leaf0:swp3", 1, 1);
  a.set_reason("loss 3% \"quoted\"\nnext");
  EXPECT_EQ(frrCommands(a, "swp3", false),
            (std::vector<std::string>{
                "configure terminal", "router bgp",
                "neighbor swp3 shutdown message netdiag incident 42: loss 3% quotednext", "exit"}));
  a.set_op(v1::DrainAction::RESTORE);
  EXPECT_EQ(frrCommands(a, "swp3", true),
            (std::vector<std::string>{"configure terminal", "interface swp3", "no shutdown", "exit",
                                      "router bgp", "no neighbor swp3 shutdown", "exit"}));
}

TEST_F(Executors, FrrRunsVtyshWithEveryCommandAndReadsItsRefusals) {
  const std::string args = (dir_ / "args").string();
  const std::string ok =
      script("vtysh-ok", "for a in \"$@\"; do echo \"$a\" >> " + args + "; done\n");
  FrrExecutor exec(FrrOptions{ok, "/run/frr/leaf0", 10, false, 0});
  std::string detail;
  EXPECT_TRUE(exec.execute(signedAction("leaf0", "leaf0:swp3", 1, 1), "leaf0", "swp3", &detail))
      << detail;
  std::ifstream in(args);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[0], "--vty_socket");
  EXPECT_EQ(lines[1], "/run/frr/leaf0");
  EXPECT_EQ(lines[2], "-c");
  EXPECT_EQ(lines[3], "configure terminal");

  // FRR refuses a neighbor it does not have with a '%' line, exit status 0.
  FrrExecutor refusing(FrrOptions{
      script("vtysh-refuse", "echo '% Create the peer-group or neighbor first'\n"), "", 10, false});
  EXPECT_FALSE(
      refusing.execute(signedAction("leaf0", "leaf0:swp3", 1, 1), "leaf0", "swp3", &detail));
  EXPECT_NE(detail.find("Create the peer-group"), std::string::npos) << detail;

  // A port name that is not one word never reaches vtysh.
  EXPECT_FALSE(exec.execute(signedAction("leaf0", "leaf0:swp3", 1, 1), "leaf0", "swp3 remote-as 1",
                            &detail));
  EXPECT_NE(detail.find("not an interface name"), std::string::npos) << detail;

  FrrExecutor failing(FrrOptions{script("vtysh-fail", "exit 3\n"), "", 10, false, 0});
  EXPECT_FALSE(
      failing.execute(signedAction("leaf0", "leaf0:swp3", 1, 1), "leaf0", "swp3", &detail));
  EXPECT_NE(detail.find("exited 3"), std::string::npos) << detail;

  FrrExecutor missing(FrrOptions{(dir_ / "no-vtysh").string(), "", 10, false, 0});
  EXPECT_FALSE(
      missing.execute(signedAction("leaf0", "leaf0:swp3", 1, 1), "leaf0", "swp3", &detail));
  EXPECT_NE(detail.find("cannot run"), std::string::npos) << detail;

  FrrExecutor hanging(FrrOptions{script("vtysh-hang", "exec sleep 60\n"), "", 0.3, false, 0});
  EXPECT_FALSE(
      hanging.execute(signedAction("leaf0", "leaf0:swp3", 1, 1), "leaf0", "swp3", &detail));
  EXPECT_NE(detail.find("did not finish"), std::string::npos) << detail;
}

// Graceful (RFC 8326): a drain marks the session's routes first and shuts
// it after graceful_s; a restore opens it still marked, waits until it is
// Established, and lifts the marks graceful_s later.
TEST_F(Executors, AGracefulDrainMarksTheRoutesBeforeItShutsTheSession) {
  EXPECT_EQ(frrGracefulCommands("swp3", true),
            (std::vector<std::string>{
                "configure terminal", "route-map NETDIAG-GSHUT-IN permit 10",
                "set local-preference 0", "exit", "route-map NETDIAG-GSHUT-OUT permit 10",
                "set community graceful-shutdown additive", "exit", "router bgp",
                "address-family ipv4 unicast", "neighbor swp3 route-map NETDIAG-GSHUT-IN in",
                "neighbor swp3 route-map NETDIAG-GSHUT-OUT out", "exit-address-family", "exit"}));
  EXPECT_EQ(frrGracefulCommands("swp3", false)[3],
            "no neighbor swp3 route-map NETDIAG-GSHUT-IN in");

  // Each run logged as one line of its -c commands; `show bgp neighbors`
  // answers Established from the second time it is asked.
  const std::string runs = (dir_ / "runs").string(), asked = (dir_ / "asked").string();
  const std::string vtysh =
      script("vtysh-graceful",
             "line=''; for a in \"$@\"; do [ \"$a\" = -c ] || line=\"$line|$a\"; done\n"
             "echo \"$line\" >> " +
                 runs +
                 "\n"
                 "case \"$line\" in *'show bgp neighbors'*)\n"
                 "  echo x >> " +
                 asked +
                 "\n"
                 "  if [ $(wc -l < " +
                 asked +
                 ") -ge 2 ]; then s=Established; else s=Connect; fi\n"
                 "  echo \"{\\\"swp3\\\":{\\\"bgpState\\\":\\\"$s\\\"}}\";;\n"
                 "esac\n");
  FrrExecutor exec(FrrOptions{vtysh, "", 10, false, 0.05});
  std::string detail;
  v1::DrainAction a = signedAction("leaf0", "leaf0:swp3", 1, 1);
  ASSERT_TRUE(exec.execute(a, "leaf0", "swp3", &detail)) << detail;
  a.set_op(v1::DrainAction::RESTORE);
  ASSERT_TRUE(exec.execute(a, "leaf0", "swp3", &detail)) << detail;
  std::ifstream in(runs);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_NE(lines[0].find("|neighbor swp3 route-map NETDIAG-GSHUT-OUT out"), std::string::npos);
  EXPECT_NE(lines[1].find("|neighbor swp3 shutdown message"), std::string::npos);
  EXPECT_NE(lines[2].find("|no neighbor swp3 shutdown"), std::string::npos);
  EXPECT_NE(lines[3].find("show bgp neighbors swp3 json"), std::string::npos);
  EXPECT_NE(lines[4].find("show bgp neighbors swp3 json"), std::string::npos) << "asked again";
  EXPECT_NE(lines[5].find("|no neighbor swp3 route-map NETDIAG-GSHUT-OUT out"), std::string::npos);
}

TEST_F(Executors, WebhookPostsTheActionAndNeedsA2xx) {
  httplib::Server server;
  std::mutex mu;
  std::vector<std::string> bodies;
  int status = 200;
  server.Post("/drain", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lk(mu);
    bodies.push_back(req.body);
    res.status = status;
    if (status != 200) res.set_content("no change window", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread t([&] { server.listen_after_bind(); });
  // Bound means listening: the connection waits in the backlog until accepted.
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/drain";
  EXPECT_EQ(checkWebhookUrl(url), "");
  EXPECT_EQ(checkWebhookUrl("https://automation.example/drain"), "");
  EXPECT_NE(checkWebhookUrl("ftp://x/drain"), "");
  EXPECT_NE(checkWebhookUrl("http:///drain"), "");

  WebhookExecutor exec(WebhookOptions{url, 10});
  std::string detail;
  EXPECT_TRUE(exec.execute(signedAction("leaf0", "leaf0:swp3", 5, 9), "leaf0", "swp3", &detail))
      << detail;
  {
    std::lock_guard lk(mu);
    ASSERT_EQ(bodies.size(), 1u);
    const auto j = nlohmann::json::parse(bodies[0]);
    EXPECT_EQ(j["agent"], "leaf0");
    EXPECT_EQ(j["port"], "leaf0:swp3");
    EXPECT_EQ(j["interface"], "swp3");
    EXPECT_EQ(j["op"], "drain");
    EXPECT_EQ(j["incident"], 42);
    EXPECT_EQ(j["nonce"], 9);
    EXPECT_EQ(j["mac"].get<std::string>().size(), 64u);
    status = 409;
  }
  EXPECT_FALSE(exec.execute(signedAction("leaf0", "leaf0:swp3", 5, 10), "leaf0", "swp3", &detail));
  EXPECT_NE(detail.find("409: no change window"), std::string::npos) << detail;
  server.stop();
  t.join();
  EXPECT_FALSE(exec.execute(signedAction("leaf0", "leaf0:swp3", 5, 11), "leaf0", "swp3", &detail))
      << "nobody listening";
}

}  // namespace
}  // namespace netdiag::actuator
