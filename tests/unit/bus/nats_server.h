#pragma once

// A real nats-server with JetStream on loopback for tests, where Debian's
// nats-server is installed (tests skip with a message elsewhere). Restart
// keeps its port and store directory, as a server restart in production.

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/collector/free_port.h"

namespace netdiag::bus::testing {

inline const char* kNatsServer = "/usr/sbin/nats-server";

inline bool natsServerInstalled() { return ::access(kNatsServer, X_OK) == 0; }

class NatsServer {
 public:
  NatsServer() {
    static int n = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("netdiag_nats_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    std::filesystem::create_directories(dir_);
    port_ = freeTcpPort();
  }
  ~NatsServer() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  // `config`: the body of a server config file (accounts, users) to add;
  // the listen address, JetStream and its store are set here.
  void start(const std::string& config = "") {
    const std::string conf = (dir_ / "nats.conf").string();
    {
      std::ofstream f(conf);
      f << "listen: 127.0.0.1:" << port_ << "\njetstream { store_dir: \"" << (dir_ / "js").string()
        << "\" }\n"
        << config << '\n';
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a test that crashes takes its server along
      const std::string log = (dir_ / "nats.log").string();
      ::execl(kNatsServer, "nats-server", "-c", conf.c_str(), "-l", log.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  // SIGTERM (a clean shutdown), or SIGKILL (a crash).
  void stop(int sig = SIGTERM) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  int port() const { return port_; }
  std::string url(const std::string& userinfo = "") const {
    return "nats://" + (userinfo.empty() ? "" : userinfo + "@") +
           "127.0.0.1:" + std::to_string(port_);
  }

 private:
  friend class NatsCluster;
  static int freeTcpPort() { return collector::testing::freePort(SOCK_STREAM); }

  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// Three servers clustered on loopback (JetStream replicas up to 3), each
// with its own store; url() lists all three, as clients of a cluster do.
class NatsCluster {
 public:
  NatsCluster() {
    for (int i = 0; i < 3; ++i) routes_[i] = NatsServer::freeTcpPort();
  }
  void start() {
    for (int i = 0; i < 3; ++i) {
      std::string config =
          "server_name: n" + std::to_string(i) +
          "\ncluster { name: netdiag, listen: 127.0.0.1:" + std::to_string(routes_[i]) +
          ", routes: [";
      for (int j = 0, n = 0; j < 3; ++j) {
        if (j == i) continue;
        config += (n++ ? ", \"" : "\"") + std::string("nats://127.0.0.1:") +
                  std::to_string(routes_[j]) + "\"";
      }
      servers_[i].start(config + "] }");
    }
  }
  NatsServer& server(int i) { return servers_[i]; }
  std::string url() const {
    std::string out;
    for (const NatsServer& s : servers_) out += (out.empty() ? "" : ",") + s.url();
    return out;
  }

 private:
  NatsServer servers_[3];
  int routes_[3] = {};
};

}  // namespace netdiag::bus::testing
