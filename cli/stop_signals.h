#pragma once

// SIGTERM and SIGINT for the long-running commands (agent, poll): they go
// to one waiting thread, never to a thread in the middle of work.

#include <functional>
#include <string>

#include <signal.h>

namespace netdiag::cli {

class StopSignals {
 public:
  // Blocks SIGTERM and SIGINT in the calling thread, so every thread started
  // after it inherits the mask: construct before any thread starts.
  StopSignals();

  // Runs `work` on this thread; on the first stop signal meanwhile, logs it
  // and calls `stop`, which must make `work` return.
  void runUntilStopped(const std::function<void()>& work, const std::function<void()>& stop,
                       const std::function<void(const std::string&)>& log);

 private:
  sigset_t signals_;
};

}  // namespace netdiag::cli
