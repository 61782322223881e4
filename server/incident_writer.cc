#include "server/incident_writer.h"

#include <utility>
#include <vector>

#include "analyzer/persist.h"
#include "store/incident_store.h"

namespace netdiag::server {

IncidentWriter::IncidentWriter(const topology::Topology& topo, store::Database db,
                               std::function<double()> clock)
    : topo_(topo), path_(db.path()), clock_(std::move(clock)), db_(std::move(db)) {
  thread_ = std::thread([this] { run(); });
}

IncidentWriter::~IncidentWriter() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void IncidentWriter::submit(std::map<std::string, analyzer::Incident> changed, double updated_at) {
  {
    std::lock_guard lk(mu_);
    for (auto& [id, incident] : changed) pending_[id] = std::move(incident);
    updated_at_ = updated_at;
    ++submitted_;
  }
  cv_.notify_all();
}

std::string IncidentWriter::flush() {
  std::unique_lock lk(mu_);
  const uint64_t target = submitted_;
  done_cv_.wait(lk, [&] { return finished_ >= target; });
  return std::exchange(error_, {});
}

std::string IncidentWriter::takeError() {
  std::lock_guard lk(mu_);
  return std::exchange(error_, {});
}

void IncidentWriter::run() {
  std::unique_lock lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stopping_ || finished_ < submitted_; });
    if (finished_ >= submitted_ && stopping_) return;
    const uint64_t upto = submitted_;
    std::map<std::string, analyzer::Incident> batch = std::move(pending_);
    pending_.clear();
    const double t = updated_at_;
    lk.unlock();
    std::string err;
    if (!batch.empty()) {
      const auto wall_ms = static_cast<int64_t>(clock_() * 1000);
      std::vector<store::IncidentRow> rows;
      rows.reserve(batch.size());
      for (const auto& [id, incident] : batch) {
        store::IncidentRow row = analyzer::toRow(topo_, incident, t);
        row.created_wall = wall_ms;
        rows.push_back(std::move(row));
      }
      store::Status s = store::upsertIncidents(db_, rows);
      if (!s) err = "cannot save incidents to " + path_ + ": " + s.message();
    }
    lk.lock();
    if (!err.empty()) {
      error_ = err;
      // Kept for the next hand-over; a newer state of the same incident wins.
      for (auto& [id, incident] : batch) pending_.try_emplace(id, std::move(incident));
    }
    finished_ = upto;
    done_cv_.notify_all();
    if (stopping_ && finished_ >= submitted_) return;
  }
}

}  // namespace netdiag::server
