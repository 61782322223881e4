#include "actuator/frr_executor.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace netdiag::actuator {
namespace {

// The shutdown message: printable ASCII without quotes, bounded (vtysh
// reads it as words; RFC 8203 allows 128 bytes in all).
std::string message(const v1::DrainAction& action) {
  std::string out = "netdiag incident " + std::to_string(action.incident());
  std::string reason;
  for (char c : action.reason()) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\'' && c != '\\') reason += c;
  }
  if (!reason.empty()) out += ": " + reason;
  if (out.size() > 120) out.resize(120);
  return out;
}

}  // namespace

std::vector<std::string> frrCommands(const v1::DrainAction& action, std::string_view ifname,
                                     bool admin_down) {
  const std::string ifn(ifname);
  std::vector<std::string> c{"configure terminal"};
  if (action.op() == v1::DrainAction::DRAIN) {
    c.insert(c.end(),
             {"router bgp", "neighbor " + ifn + " shutdown message " + message(action), "exit"});
    if (admin_down) c.insert(c.end(), {"interface " + ifn, "shutdown", "exit"});
  } else {
    if (admin_down) c.insert(c.end(), {"interface " + ifn, "no shutdown", "exit"});
    c.insert(c.end(), {"router bgp", "no neighbor " + ifn + " shutdown", "exit"});
  }
  return c;
}

std::vector<std::string> frrGracefulCommands(std::string_view ifname, bool on) {
  const std::string ifn(ifname), in(kGracefulIn), out(kGracefulOut);
  std::vector<std::string> c{"configure terminal"};
  const std::string no = on ? "" : "no ";
  if (on) {
    c.insert(c.end(), {"route-map " + in + " permit 10", "set local-preference 0", "exit",
                       "route-map " + out + " permit 10",
                       "set community graceful-shutdown additive", "exit"});
  }
  c.insert(c.end(),
           {"router bgp", "address-family ipv4 unicast",
            no + "neighbor " + ifn + " route-map " + in + " in",
            no + "neighbor " + ifn + " route-map " + out + " out", "exit-address-family", "exit"});
  return c;
}

int runProcess(const std::vector<std::string>& argv, double timeout_s, std::string* output) {
  output->clear();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *output = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    *output = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  bool timed_out = false;
  char buf[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      timed_out = n == 0;
      break;
    }
    const ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (output->size() < (64u << 10)) output->append(buf, static_cast<size_t>(got));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    *output = argv[0] + " did not finish within " + std::to_string(timeout_s) + " s";
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool FrrExecutor::vtysh(const std::vector<std::string>& commands, std::string* detail,
                        std::string* out) const {
  std::vector<std::string> argv{options_.vtysh};
  if (!options_.vty_socket.empty()) argv.insert(argv.end(), {"--vty_socket", options_.vty_socket});
  for (const std::string& c : commands) argv.insert(argv.end(), {"-c", c});
  std::string text;
  const int status = runProcess(argv, options_.timeout_s, &text);
  // vtysh reports a refused command as a line starting with '%' (and not
  // always in its exit status).
  std::string refused;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text[at] == '%' && refused.empty()) refused = text.substr(at, end - at);
    at = end + 1;
  }
  if (status == 0 && refused.empty()) {
    if (out) *out = std::move(text);
    return true;
  }
  if (status < 0) {
    *detail = text;
  } else {
    *detail = "vtysh exited " + std::to_string(status) + (refused.empty() ? "" : ": " + refused);
  }
  return false;
}

bool FrrExecutor::waitEstablished(std::string_view ifname) const {
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration<double>(std::max(options_.timeout_s, 30.0));
  while (std::chrono::steady_clock::now() < end) {
    std::string out, ignored;
    if (vtysh({"show bgp neighbors " + std::string(ifname) + " json"}, &ignored, &out)) {
      const auto j = nlohmann::json::parse(out, nullptr, false);
      const auto it = j.is_object() ? j.find(std::string(ifname)) : j.end();
      if (it != j.end() && it->is_object() && it->value("bgpState", "") == "Established") {
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return false;
}

bool FrrExecutor::execute(const v1::DrainAction& action, std::string_view, std::string_view ifname,
                          std::string* detail) {
  // vtysh reads each -c as words: an interface name is one word of these.
  const bool word = !ifname.empty() && ifname.size() <= 64 &&
                    ifname.find_first_not_of(
                        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                        "0123456789._/:-") == std::string_view::npos;
  if (!word) {
    *detail = "not an interface name FRR can take: \"" + std::string(ifname.substr(0, 64)) + "\"";
    return false;
  }
  const bool graceful = options_.graceful_s > 0;
  const auto pause = std::chrono::duration<double>(options_.graceful_s);
  if (action.op() == v1::DrainAction::DRAIN) {
    if (graceful) {
      if (!vtysh(frrGracefulCommands(ifname, true), detail)) return false;
      std::this_thread::sleep_for(pause);  // traffic leaves while the link forwards
    }
    return vtysh(frrCommands(action, ifname, options_.admin_down), detail);
  }
  if (!vtysh(frrCommands(action, ifname, options_.admin_down), detail)) return false;
  if (!graceful) return true;
  // Back up still marked, so traffic returns only once the routes are in;
  // a session that does not come up keeps no marks either.
  const bool up = waitEstablished(ifname);
  if (up) std::this_thread::sleep_for(pause);
  if (!vtysh(frrGracefulCommands(ifname, false), detail)) return false;
  if (!up) *detail = "the session was not Established within 30 s";
  return true;
}

}  // namespace netdiag::actuator
