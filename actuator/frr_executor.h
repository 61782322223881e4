#pragma once

// Drains a port of an FRR switch by its BGP session: `neighbor IF shutdown`
// (with an RFC 8203 message naming the incident) withdraws every route over
// the link in both directions, so traffic moves to the other ECMP paths;
// with admin_down the interface is shut as well. Restore undoes both, the
// interface first. The session is named by the interface, as in BGP
// unnumbered fabrics (`neighbor swp1 interface ...`, RFC 7938 style).
//
// FRR 8.4 has graceful shutdown (RFC 8326) only for a whole instance or
// VRF, not for one peer. With graceful_s set, the executor does it for the
// one session with route-maps first: the routes it sends carry the
// GRACEFUL_SHUTDOWN community (peers that honour it prefer other paths)
// and those it receives get local preference 0, so traffic leaves the
// link while it still forwards; the session is shut graceful_s later. A
// restore brings the session back so marked and lifts the marks once it is
// Established and graceful_s has passed (docs/operations.md, "Drain
// actions on FRR").

#include <string>
#include <string_view>
#include <vector>

#include "actuator/executor.h"

namespace netdiag::actuator {

struct FrrOptions {
  std::string vtysh = "vtysh";
  std::string vty_socket;  // vtysh --vty_socket DIR; empty: FRR's default
  double timeout_s = 10;   // one vtysh run at most
  bool admin_down = false;
  double graceful_s = 0;  // RFC 8326 marks this long around the shutdown; 0: off
};

// The route-maps a gracefully drained session carries (made by the drain).
inline constexpr const char* kGracefulIn = "NETDIAG-GSHUT-IN";
inline constexpr const char* kGracefulOut = "NETDIAG-GSHUT-OUT";

// The vtysh commands that set (`on`) or lift the graceful-shutdown marks
// on the IPv4 unicast session of `ifname`.
std::vector<std::string> frrGracefulCommands(std::string_view ifname, bool on);

// The vtysh commands (each one -c) that carry out `action` on `ifname`.
std::vector<std::string> frrCommands(const v1::DrainAction& action, std::string_view ifname,
                                     bool admin_down);

class FrrExecutor final : public Executor {
 public:
  explicit FrrExecutor(FrrOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "frr"; }
  bool execute(const v1::DrainAction& action, std::string_view agent, std::string_view ifname,
               std::string* detail) override;

 private:
  // Runs vtysh with `commands` (each one -c); false and *detail when it
  // fails or refuses one. Its output in *out when given.
  bool vtysh(const std::vector<std::string>& commands, std::string* detail,
             std::string* out = nullptr) const;
  // Waits up to timeout_s for the session of `ifname` to be Established.
  bool waitEstablished(std::string_view ifname) const;

  FrrOptions options_;
};

// Runs `argv` (no shell) with stdout and stderr captured into *output (at
// most 64 KiB kept), killing it after timeout_s. Its exit status, or -1
// (and *output says why) when it could not be run or timed out.
int runProcess(const std::vector<std::string>& argv, double timeout_s, std::string* output);

}  // namespace netdiag::actuator
