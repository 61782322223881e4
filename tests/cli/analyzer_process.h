#pragma once

// `netdiag analyzer` as a background process of a CLI test: started on the
// ports it is given (0: any free one), ready once this start's "listening"
// line names the ports it bound, stopped with a signal. Its stderr is
// appended to one file across restarts, so a failure shows every run.

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli/cli_harness.h"

namespace netdiag::testing {

class AnalyzerProcess {
 public:
  AnalyzerProcess(std::string out_file, std::string err_file)
      : out_(std::move(out_file)), err_(std::move(err_file)) {}
  ~AnalyzerProcess() { stop(SIGKILL); }
  AnalyzerProcess(const AnalyzerProcess&) = delete;
  AnalyzerProcess& operator=(const AnalyzerProcess&) = delete;

  // Runs `netdiag analyzer ARGS --listen 127.0.0.1:<grpc_port>
  // --web.listen-address 127.0.0.1:<http_port>` and waits for its
  // listening line; the ports are then the ones it bound.
  ::testing::AssertionResult start(const std::string& args,
                                   std::chrono::seconds wait = std::chrono::seconds(120)) {
    const size_t before = readFile(err_).size();
    const std::string cmd = "exec " + std::string(NETDIAG_BIN) + " analyzer " + args +
                            " --listen 127.0.0.1:" + std::to_string(grpc_port) +
                            " --web.listen-address 127.0.0.1:" + std::to_string(http_port) + " >" +
                            out_ + " 2>>" + err_;
    pid_ = ::fork();
    if (pid_ < 0) return ::testing::AssertionFailure() << "fork failed";
    if (pid_ == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    static const std::regex re(R"(grpc=127\.0\.0\.1:(\d+).* http=http://127\.0\.0\.1:(\d+))");
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string err = readFile(err_);
      const std::string fresh = err.size() > before ? err.substr(before) : "";
      std::smatch m;
      if (std::regex_search(fresh, m, re)) {
        grpc_port = std::stoi(m[1]);
        http_port = std::stoi(m[2]);
        return ::testing::AssertionSuccess();
      }
      if (int status = 0; ::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return ::testing::AssertionFailure() << "analyzer exited: " << fresh;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return ::testing::AssertionFailure() << "analyzer did not start: " << readFile(err_);
  }

  // Sends `sig` and reaps it: the wait status, or -1 when not running.
  int stop(int sig = SIGTERM) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

  // The body of GET `target` on its HTTP port when it answers 200; "" else.
  std::string get(const std::string& target) const {
    httplib::Client c("127.0.0.1", http_port);
    c.set_read_timeout(10, 0);
    auto r = c.Get(target.c_str());
    return r && r->status == 200 ? r->body : "";
  }

  // Probe records this process's engine ingested (its counter starts at
  // 0), or -1 when /metrics does not answer.
  double probesIngested() const {
    static const std::regex re(R"(\nnetdiag_ingest_records_total\{kind="probe"\} ([0-9.e+]+))");
    const std::string m = get("/metrics");
    std::smatch s;
    return std::regex_search(m, s, re) ? std::stod(s[1]) : -1;
  }

  int grpc_port = 0, http_port = 0;

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
};

}  // namespace netdiag::testing
