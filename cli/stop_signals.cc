#include "cli/stop_signals.h"

#include <atomic>
#include <ctime>
#include <thread>

#include <pthread.h>

namespace netdiag::cli {

StopSignals::StopSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

void StopSignals::runUntilStopped(const std::function<void()>& work,
                                  const std::function<void()>& stop,
                                  const std::function<void(const std::string&)>& log) {
  std::atomic<bool> done{false};
  // Wakes every 200 ms to notice that `work` returned on its own.
  std::thread waiter([&] {
    const timespec tick{0, 200 * 1000 * 1000};
    while (!done.load()) {
      const int sig = sigtimedwait(&signals_, nullptr, &tick);
      if (sig == SIGTERM || sig == SIGINT) {
        log(std::string("got ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + ", shutting down");
        stop();
        return;
      }
    }
  });
  work();
  done = true;
  waiter.join();
}

}  // namespace netdiag::cli
