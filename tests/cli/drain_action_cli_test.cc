// Drain actions end to end between real processes: `netdiag analyzer` with
// a drain key and an API token, `netdiag agent` on two switches with the
// webhook executor, and the webhook as an HTTP server in this test. An
// operator's action goes through the token-guarded API, rides an ack to
// its switch, is carried out, and its result comes back; an agent holding
// another key refuses it (bad_mac), and the API refuses what it must.

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli/analyzer_process.h"
#include "tests/cli/cli_harness.h"

namespace netdiag::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// `netdiag agent ARGS` in the background, stderr to a file, killed at the end.
class AgentProcess {
 public:
  AgentProcess(const std::string& args, const std::string& err) : err_(err) {
    const std::string cmd = "exec " + std::string(NETDIAG_BIN) + " agent " + args + " 2>" + err;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~AgentProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  std::string log() const { return readFile(err_); }

 private:
  std::string err_;
  pid_t pid_ = -1;
};

template <typename Pred>
bool waitFor(Pred pred, std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

class DrainActionCliTest : public CliTest {
 protected:
  std::string secret(const std::string& name, char fill) {
    const std::string p = path(name);
    std::ofstream(p) << std::string(40, fill) << "\n";
    ::chmod(p.c_str(), 0600);
    return p;
  }
  // A sysfs tree with the node's ports, so its counters make batches (and
  // the analyzer's acks carry its actions).
  std::string sysfs(const std::string& node) {
    for (const char* port : {"swp1", "swp2", "swp3", "swp4"}) {
      const fs::path d = fs::path(path(node + "-sys")) / "class/net" / port;
      fs::create_directories(d / "statistics");
      std::ofstream(d / "operstate") << "up\n";
      for (const char* f : {"rx_packets", "tx_packets", "rx_errors", "rx_dropped", "tx_dropped"})
        std::ofstream(d / "statistics" / f) << "5\n";
    }
    return path(node + "-sys");
  }
  httplib::Result post(const std::string& body, const std::string& token) {
    httplib::Client c("127.0.0.1", analyzer_.http_port);
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    return c.Post("/api/v1/drain/actions", h, body, "application/json");
  }
  // The action of `nonce` in the analyzer's list.
  json action(const std::string& nonce) {
    const json list = json::parse(analyzer_.get("/api/v1/drain/actions"), nullptr, false);
    if (list.is_object() && list.contains("actions")) {
      for (const json& a : list["actions"]) {
        if (a["nonce"] == nonce) return a;
      }
    }
    return json::object();
  }
  AnalyzerProcess analyzer_{path("analyzer.out"), path("analyzer.err")};
};

TEST_F(DrainActionCliTest, AnOperatorsDrainReachesItsSwitchSignedAndOnlyThere) {
  ASSERT_EQ(run("topo generate leaf-spine --spines 2 --leaves 2 --hosts-per-leaf 2 -o " +
                path("fabric.yaml"))
                .code,
            0);
  const std::string key = secret("drain.key", 'k');
  const std::string other_key = secret("other.key", 'o');
  const std::string token_file = secret("api.token", 't');
  const std::string token(40, 't');

  httplib::Server hook;
  std::mutex mu;
  std::vector<json> posted;
  hook.Post("/drain", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lk(mu);
    posted.push_back(json::parse(req.body, nullptr, false));
    res.status = 200;
  });
  const int hook_port = hook.bind_to_any_port("127.0.0.1");
  ASSERT_GT(hook_port, 0);
  std::thread hook_thread([&] { hook.listen_after_bind(); });
  struct Joined {  // stopped on every way out, failed assertions too
    httplib::Server& s;
    std::thread& t;
    ~Joined() {
      s.stop();
      t.join();
    }
  } joined{hook, hook_thread};
  const std::string url = "http://127.0.0.1:" + std::to_string(hook_port) + "/drain";

  ASSERT_TRUE(analyzer_.start("--topology " + path("fabric.yaml") + " --db '' --drain-key " + key +
                              " --api-token-file " + token_file));
  auto agent = [&](const std::string& node, const std::string& k) {
    return std::make_unique<AgentProcess>(
        "--node " + node + " --analyzer 127.0.0.1:" + std::to_string(analyzer_.grpc_port) +
            " --metrics-address '' --lldp false --batch-interval 0.2 --counters-interval 0.5" +
            " --sysfs-root " + sysfs(node) + " --drain-executor webhook --drain-webhook-url " +
            url + " --drain-key-file " + k,
        path(node + ".err"));
  };
  auto leaf1 = agent("leaf1", key);
  auto leaf2 = agent("leaf2", other_key);  // not the analyzer's key
  // Both have their plan (their own ports) once they say so.
  ASSERT_TRUE(waitFor([&] {
    return leaf1->log().find("plan version") != std::string::npos &&
           leaf2->log().find("plan version") != std::string::npos;
  })) << leaf1->log()
      << leaf2->log();

  // The API refuses without the token, a host's port, and bad bodies.
  auto r = post(R"({"port": "leaf1:swp3", "op": "drain"})", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = post(R"({"port": "leaf1:swp3", "op": "drain"})", std::string(40, 'x'));
  EXPECT_EQ(r->status, 401);
  r = post(R"({"port": "host1:eth0", "op": "drain"})", token);
  EXPECT_EQ(r->status, 422);
  EXPECT_NE(r->body.find("host's port"), std::string::npos) << r->body;
  r = post(R"({"port": "leaf9:swp3", "op": "drain"})", token);
  EXPECT_EQ(r->status, 422);
  r = post(R"({"port": "leaf1:swp3", "op": "shut"})", token);
  EXPECT_EQ(r->status, 400);
  r = post("not json", token);
  EXPECT_EQ(r->status, 400);

  // The drain: signed, carried out by leaf1's executor, reported done.
  r = post(R"({"port": "leaf1:swp3", "op": "drain", "incident": 7, "reason": "test", "by": "ann"})",
           token);
  ASSERT_EQ(r->status, 202) << r->body;
  const std::string nonce = json::parse(r->body)["nonce"];
  ASSERT_TRUE(waitFor([&] { return action(nonce).value("state", "") == "done"; }))
      << action(nonce).dump() << "\n"
      << leaf1->log();
  {
    std::lock_guard lk(mu);
    ASSERT_EQ(posted.size(), 1u);
    EXPECT_EQ(posted[0]["agent"], "leaf1");
    EXPECT_EQ(posted[0]["port"], "leaf1:swp3");
    EXPECT_EQ(posted[0]["interface"], "swp3");
    EXPECT_EQ(posted[0]["op"], "drain");
    EXPECT_EQ(posted[0]["incident"], 7);
  }
  const json done = action(nonce);
  EXPECT_EQ(done["agent"], "leaf1");
  EXPECT_EQ(done["by"], "operator ann");
  EXPECT_EQ(done["incident"], "7");

  // leaf2 holds another key: it refuses, and nothing reaches the webhook.
  r = post(R"({"port": "leaf2:swp4", "op": "drain"})", token);
  ASSERT_EQ(r->status, 202) << r->body;
  const std::string refused = json::parse(r->body)["nonce"];
  ASSERT_TRUE(waitFor([&] { return action(refused).value("state", "") == "refused"; }))
      << action(refused).dump();
  EXPECT_EQ(action(refused)["detail"], "bad_mac");
  EXPECT_NE(leaf2->log().find("refused: bad_mac"), std::string::npos) << leaf2->log();
  {
    std::lock_guard lk(mu);
    EXPECT_EQ(posted.size(), 1u);
  }
  // The on-call commands: list reads, the others need the token.
  const std::string a = " --analyzer 127.0.0.1:" + std::to_string(analyzer_.http_port);
  auto out = run("drain list" + a);
  EXPECT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.out.find("policy advise"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("done  drain leaf1:swp3  by operator ann"), std::string::npos) << out.out;
  out = run("drain freeze on" + a);
  EXPECT_EQ(out.code, 2) << "no --token-file";
  out = run("drain freeze on --token-file " + token_file + " --by ann" + a);
  EXPECT_EQ(out.code, 0) << out.err;
  EXPECT_EQ(json::parse(analyzer_.get("/api/v1/drain"))["policy"]["frozen"], true);
  out = run("drain undo 'leaf1:swp3->spine1:swp1' --token-file " + token_file + a);
  EXPECT_EQ(out.code, 1) << "an operator's own action is not the policy's drain";
  EXPECT_NE(out.err.find("not drained by netdiag"), std::string::npos) << out.err;
  out = run("drain approve inc-1 --token-file " + token_file + a);
  EXPECT_EQ(out.code, 1);
  EXPECT_NE(out.err.find("the drain policy is advise"), std::string::npos) << out.err;
  const std::string metrics = analyzer_.get("/metrics");
  EXPECT_NE(metrics.find("netdiag_drain_actions_total{result=\"done\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("netdiag_drain_actions_total{result=\"refused\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("netdiag_drain_actions_total{result=\"issued\"} 2"), std::string::npos);
}

TEST_F(DrainActionCliTest, WritesAreOffWithoutTheTokenAndActionsWithoutTheKey) {
  ASSERT_EQ(run("topo generate leaf-spine --spines 2 --leaves 2 --hosts-per-leaf 2 -o " +
                path("fabric.yaml"))
                .code,
            0);
  ASSERT_TRUE(analyzer_.start("--topology " + path("fabric.yaml") + " --db ''"));
  auto r = post(R"({"port": "leaf1:swp3", "op": "drain"})", std::string(40, 't'));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(json::parse(analyzer_.get("/api/v1/drain/actions")), json::parse(R"({"actions":[]})"));
  analyzer_.stop();
  const std::string token_file = secret("api.token", 't');
  ASSERT_TRUE(analyzer_.start("--topology " + path("fabric.yaml") + " --db '' --api-token-file " +
                              token_file));
  r = post(R"({"port": "leaf1:swp3", "op": "drain"})", std::string(40, 't'));
  EXPECT_EQ(r->status, 409);
  analyzer_.stop();
  // A policy that acts needs the key to sign with.
  auto keyless = run("analyzer --topology " + path("fabric.yaml") +
                     " --db '' --drain-policy auto --listen 127.0.0.1:0 --web.listen-address "
                     "127.0.0.1:0");
  EXPECT_NE(keyless.code, 0);
  EXPECT_NE(keyless.err.find("needs --drain-key"), std::string::npos) << keyless.err;
  // A key readable by others is refused at start, naming the file.
  const std::string loose = path("loose.key");
  std::ofstream(loose) << std::string(40, 'k');
  ::chmod(loose.c_str(), 0644);
  auto bad = run("analyzer --topology " + path("fabric.yaml") + " --db '' --drain-key " + loose +
                 " --listen 127.0.0.1:0 --web.listen-address 127.0.0.1:0");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("group or others"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace netdiag::testing
