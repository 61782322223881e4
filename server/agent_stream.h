#pragma once

// One agent's stream on the analyzer: batches up, acks down, on gRPC's
// callback API, so an open stream costs memory and no thread of its own
// (16k agents are 16k streams, docs/operations.md, Bounds).
//
// The stream reads one batch at a time. Each is decoded on the gRPC thread
// that read it (in parallel with other streams), then offered to the engine's
// queue; the next read starts only once the queue took it, so a full queue
// slows the agent through HTTP/2 flow control and nothing is dropped. A batch
// is acked once its records are in the engine (BatchResult), in the order the
// engine finishes them; the agent keeps a window of batches in flight.
//
// A stream is one identity: the agent of its first batch, which under mutual
// TLS must be named by the client certificate. A batch as any other agent
// ends the stream with PERMISSION_DENIED (nothing of it is ingested or
// acknowledged; its records count as not_authorized), and so does a first
// batch the certificate does not name. A batch of an agent the analyzer does
// not know is acknowledged but not ingested (BatchResult::rejected).
//
// Thread-safety: gRPC's reactions, the engine thread's callbacks and the rate
// alarm may run concurrently; the read chain is sequential by construction
// and the rest sits behind the stream's own mutex.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include <google/protobuf/arena.h>
#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "netdiag/v1/collector.grpc.pb.h"
#include "server/agent_rate.h"
#include "server/drain_outbox.h"
#include "server/live_analyzer.h"

namespace netdiag::server {

using LogFn = std::function<void(const std::string&)>;

class AgentStream;

// What every stream of one service shares.
struct StreamShared {
  LiveAnalyzer& analyzer;
  LogFn log;
  bool require_client_identity = false;
  AgentRateLimiter& rate;
  size_t max_streams = 0;         // beyond it a stream is refused (RESOURCE_EXHAUSTED)
  double idle_timeout_s = 0;      // CollectorService::closeIdleStreams (0: never)
  DrainOutbox* outbox = nullptr;  // drain actions ride the acks (null: none)
  std::atomic<size_t> open{0};    // streams admitted and alive now
  // The admitted streams until gRPC is done with them (their context is
  // valid while listed), for the idle sweep. Recursive: a cancel may run a
  // stream's reactions, OnDone included, on the cancelling thread.
  std::recursive_mutex streams_mu{};
  std::unordered_set<AgentStream*> streams{};
  // Their metrics when exported (CollectorService::exportMetrics).
  prometheus::Gauge* open_gauge = nullptr;
  prometheus::Counter* refused_counter = nullptr;
  prometheus::Counter* idle_closed_counter = nullptr;
};

// The names a client certificate gives its holder: its SAN entries and CN,
// from the call's AuthContext (empty without an authenticated peer).
std::vector<std::string> peerIdentities(const grpc::ServerContextBase& context);

class AgentStream final : public grpc::ServerBidiReactor<v1::Batch, v1::Ack> {
 public:
  // Starts reading, or finishes at once when the stream may not open. Owns
  // itself: it is deleted once gRPC is done with it and the engine owes it
  // nothing.
  AgentStream(grpc::CallbackServerContext* context, StreamShared& shared);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // The idle sweep's, under StreamShared::streams_mu. Idle: its read has
  // waited `timeout_ns` or more for a batch by `now_ns` (a steadyNs() time),
  // since it began or the last ack was written, and it was not closed for
  // it yet. A stream waiting on the analyzer (its queue, its rate bound, an
  // ack it is owed) is not idle. closeIdle() cancels it.
  bool idleFor(int64_t now_ns, int64_t timeout_ns) const;
  void closeIdle();
  std::string describe() const;  // its agent and peer, for logs
  // Under StreamShared::streams_mu: when this stream is `agent`'s, writes
  // the drain actions waiting for it at once, on an ack of their own
  // (epoch and seq 0, which acknowledge no batch).
  void pushActions(const std::string& agent);
  static int64_t steadyNs();

 private:
  struct Header {
    std::string agent;
    uint64_t epoch = 0, seq = 0;
  };
  ~AgentStream() override;
  void handle();    // the batch just read: identity, rate, then submitIt()
  void submitIt();  // hands batch_ to the analyzer; the next read follows
  void deny(const std::string& why);
  void acked(const Header& h, BatchResult r);  // from the engine thread (or at once)
  void startWriteLocked(bool& start);
  void maybeFinish();
  void release();  // one reference less; the last deletes
  void report(const Header& h, const BatchResult& r) const;
  std::string certifiedNames() const;

  void startRead();  // the next batch, with the time the read begins

  StreamShared& shared_;
  grpc::CallbackServerContext* const context_;
  const std::string peer_;
  bool admitted_ = false;               // within max_streams: counted in `open`
  std::vector<std::string> certified_;  // under mTLS: the names the certificate gives

  // The read chain's own (one read at a time). Each batch is parsed into
  // an arena that is emptied before the next read: a cleared message would
  // keep its largest batch's records allocated, and 16k mostly idle
  // streams would hold gigabytes for nothing (docs/benchmarks.md).
  v1::Batch* nextBatch();
  google::protobuf::Arena arena_;
  v1::Batch* batch_ = nullptr;
  std::string agent_;  // the stream's identity, from its first batch
  bool opened_ = false;
  grpc::Alarm alarm_;  // a rate wait
  // When the pending read began (steadyNs), 0 while none is pending; set by
  // the read chain, read by the idle sweep. A clock read per batch, where a
  // timer per stream would cost gRPC timer-table walks (collector_service.cc).
  std::atomic<int64_t> reading_since_ns_{0};
  bool idle_closed_ = false;  // under shared_.streams_mu

  mutable std::mutex mu_;
  std::deque<v1::Ack> acks_;  // ready, not yet written
  v1::Ack writing_;
  bool write_in_flight_ = false, writes_failed_ = false;
  bool reads_done_ = false, cancelled_ = false, finished_ = false;
  size_t owed_ = 0;  // batches submitted whose result has not come back
  grpc::Status status_;
  size_t refs_ = 1;  // gRPC's (until OnDone), one per batch owed, one per alarm
};

}  // namespace netdiag::server
