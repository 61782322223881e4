// The on-call commands' analyzer address: a replica pair "A,B" is tried in
// turn and the first analyzer that answers is the answer, its errors too.

#include "cli/incident_source.h"

#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "tests/unit/collector/free_port.h"

namespace netdiag::cli {
namespace {

class Analyzer {
 public:
  Analyzer() {
    server_.Get("/api/v1/locate", [](const httplib::Request&, httplib::Response& r) {
      r.set_content(R"({"generated_at": 5, "incidents": []})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~Analyzer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(AnalyzerUrls, TheFirstOfAPairThatAnswersIsUsed) {
  Analyzer live;
  const std::string dead = "http://127.0.0.1:" + std::to_string(collector::testing::freePort());
  std::string error;
  auto body = httpGetJson(dead + "," + live.url(), "/api/v1/locate", &error);
  ASSERT_TRUE(body) << error;
  EXPECT_EQ((*body)["generated_at"], 5);
  // The first answers: its answer (here an error) is the answer.
  int status = 0;
  EXPECT_FALSE(httpGetJson(live.url() + "," + dead, "/api/v1/nothing", &error, &status));
  EXPECT_EQ(status, 404);
  EXPECT_NE(error.find("404"), std::string::npos) << error;
}

TEST(AnalyzerUrls, NoneAnsweringNamesEach) {
  const std::string a = "127.0.0.1:" + std::to_string(collector::testing::freePort());
  const std::string b = "127.0.0.1:" + std::to_string(collector::testing::freePort());
  std::string error;
  EXPECT_FALSE(httpGetJson(a + "," + b, "/api/v1/locate", &error));
  EXPECT_NE(error.find(a), std::string::npos) << error;
  EXPECT_NE(error.find(b), std::string::npos) << error;
  EXPECT_FALSE(httpGetJson(",", "/api/v1/locate", &error));
  EXPECT_EQ(error, "no analyzer URL given");
}

}  // namespace
}  // namespace netdiag::cli
