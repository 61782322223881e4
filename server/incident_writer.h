#pragma once

// Writes changed incidents to SQLite on a thread of its own, so a slow disk
// never holds the engine thread or a reader. The engine thread hands over
// what changed after each pass it publishes; the writer keeps only the
// newest state per incident until it is written (a failed write is retried
// with the next hand-over).
//
// Thread-safety: every method from any thread.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "analyzer/incident.h"
#include "store/sqlite.h"
#include "topology/model.h"

namespace netdiag::server {

class IncidentWriter {
 public:
  // `clock` gives wall-clock Unix seconds (each row's created_wall).
  IncidentWriter(const topology::Topology& topo, store::Database db, std::function<double()> clock);
  ~IncidentWriter();  // writes what is pending, then stops
  IncidentWriter(const IncidentWriter&) = delete;
  IncidentWriter& operator=(const IncidentWriter&) = delete;

  // Queues these incidents' state as of telemetry time `updated_at`.
  void submit(std::map<std::string, analyzer::Incident> changed, double updated_at);
  // Waits until everything submitted so far was written or failed; returns
  // the last error (empty: none) and forgets it.
  std::string flush();
  // The last error without waiting, and forgets it.
  std::string takeError();
  const std::string& path() const { return path_; }

 private:
  void run();

  const topology::Topology& topo_;
  const std::string path_;
  std::function<double()> clock_;
  store::Database db_;  // the writer thread's only

  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::map<std::string, analyzer::Incident> pending_;
  double updated_at_ = 0;
  uint64_t submitted_ = 0, finished_ = 0;  // hand-overs, for flush()
  std::string error_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace netdiag::server
