// The agent's uplink against a real in-process gRPC server on 127.0.0.1:
// delivery, acknowledgement, resend after a broken stream, an analyzer that
// is down at first, the spool's bound dropping batches in flight, batches of
// an earlier run, GetPlan, and TLS / mutual TLS with certificates made by
// openssl.

#include "collector/uplink.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace netdiag::collector {
namespace {

using namespace std::chrono_literals;

// A spool bounded by a number of batches (0: unbounded), oldest dropped.
class CountSpool final : public Spool {
 public:
  explicit CountSpool(size_t max = 0) : max_(max) {}
  bool push(std::string batch) override {
    std::lock_guard lk(mu_);
    q_.push_back(std::move(batch));
    while (max_ > 0 && q_.size() > max_) {
      q_.pop_front();
      ++dropped_;
    }
    return true;
  }
  std::optional<std::string> peek(size_t i) const override {
    std::lock_guard lk(mu_);
    if (i >= q_.size()) return std::nullopt;
    return q_[i];
  }
  void pop(size_t n) override {
    std::lock_guard lk(mu_);
    for (size_t k = 0; k < n && !q_.empty(); ++k) q_.pop_front();
  }
  size_t batches() const override {
    std::lock_guard lk(mu_);
    return q_.size();
  }
  uint64_t bytes() const override { return 0; }
  uint64_t dropped() const override {
    std::lock_guard lk(mu_);
    return dropped_;
  }

 private:
  mutable std::mutex mu_;
  size_t max_;
  std::deque<std::string> q_;
  uint64_t dropped_ = 0;
};

using Key = std::tuple<std::string, uint64_t, uint64_t>;

// A Collector that records what it gets and acks it, with knobs to break
// the stream, hold acks back and serve a plan.
class FakeCollector final : public v1::Collector::Service {
 public:
  grpc::Status Stream(grpc::ServerContext* ctx,
                      grpc::ServerReaderWriter<v1::Ack, v1::Batch>* stream) override {
    std::deque<v1::Ack> pending;
    bool done = false;
    std::thread writer([&] {
      std::unique_lock lk(mu_);
      while (true) {
        cv_.wait(lk, [&] { return done || (!pending.empty() && !hold_acks); });
        if (pending.empty() || hold_acks) return;
        v1::Ack a = pending.front();
        pending.pop_front();
        lk.unlock();
        stream->Write(a);
        lk.lock();
      }
    });
    v1::Batch b;
    grpc::Status result = grpc::Status::OK;
    while (stream->Read(&b)) {
      std::lock_guard lk(mu_);
      Key key{b.agent(), b.epoch(), b.seq()};
      received.push_back(key);
      bool dup = !unique.insert(key).second;
      if (!dup) {
        unique_records += static_cast<size_t>(b.probes_size() + b.ports_size() + b.lldp_size());
        largest = std::max(largest, b.ByteSizeLong());
      }
      if (break_after > 0 && received.size() == break_after) {
        break_after = 0;  // once; this batch stays unacknowledged
        result = grpc::Status(grpc::StatusCode::UNAVAILABLE, "test: stream broken");
        break;
      }
      v1::Ack a;
      a.set_epoch(b.epoch());
      a.set_seq(b.seq());
      a.set_duplicate(dup);
      for (const v1::DrainAction& act : actions) *a.add_actions() = act;
      actions.clear();
      for (const v1::ActionResult& r : b.action_results()) results.push_back(r.nonce());
      pending.push_back(a);
      cv_.notify_all();
    }
    {
      std::lock_guard lk(mu_);
      done = true;
      if (!result.ok()) pending.clear();
    }
    cv_.notify_all();
    writer.join();
    (void)ctx;
    return result;
  }

  grpc::Status GetPlan(grpc::ServerContext*, const v1::PlanRequest* req,
                       v1::AgentPlan* plan) override {
    if (req->agent().empty()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no agent");
    plan->set_version(req->known_version() + 1);
    plan->set_responder_port(7601);
    plan->add_monitored_ports(req->agent() + ":eth0");
    return grpc::Status::OK;
  }

  void releaseAcks() {
    {
      std::lock_guard lk(mu_);
      hold_acks = false;
    }
    cv_.notify_all();
  }
  std::vector<Key> receivedCopy() {
    std::lock_guard lk(mu_);
    return received;
  }
  size_t uniqueCount() {
    std::lock_guard lk(mu_);
    return unique.size();
  }
  size_t uniqueRecords() {
    std::lock_guard lk(mu_);
    return unique_records;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Key> received;
  std::set<Key> unique;
  size_t unique_records = 0;  // records of the batches received first time
  size_t largest = 0;         // serialized bytes of the largest batch received
  size_t break_after = 0;
  bool hold_acks = false;
  std::vector<v1::DrainAction> actions;  // sent with the next ack
  std::vector<uint64_t> results;         // nonces of the action results received
};

struct Server {
  FakeCollector service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  void start(int want_port = 0,
             std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials()) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(want_port), creds, &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    ASSERT_TRUE(server) << "cannot start the test gRPC server";
    ASSERT_GT(port, 0);
  }
  void stop() {
    if (server) server->Shutdown(std::chrono::system_clock::now() + 1s);
    server.reset();
  }
  ~Server() { stop(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
};

template <typename Pred>
bool waitFor(Pred pred, std::chrono::milliseconds limit = 15s) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

v1::Batch batchWithProbe(double t) {
  v1::Batch b;
  auto* p = b.add_probes();
  p->set_t(t);
  p->set_src("h0:eth0");
  p->set_dst("h1:eth0");
  p->set_sent(10);
  return b;
}

UplinkOptions options(const std::string& address) {
  UplinkOptions o;
  o.analyzer = address;
  o.agent = "h0";
  o.backoff_min_s = 0.05;
  o.backoff_max_s = 0.2;
  return o;
}

TEST(Uplink, DeliversInOrderAndEmptiesTheSpool) {
  Server s;
  s.start();
  CountSpool spool;
  Uplink up(options(s.address()), spool);
  for (int i = 0; i < 100; ++i) up.send(batchWithProbe(i));
  ASSERT_TRUE(waitFor([&] { return spool.batches() == 0 && up.stats().acked == 100; }))
      << "left in spool: " << spool.batches() << ", error: " << up.lastError();
  auto got = s.service.receivedCopy();
  ASSERT_EQ(got.size(), 100u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::get<0>(got[i]), "h0");
    EXPECT_EQ(std::get<1>(got[i]), up.epoch());
    EXPECT_EQ(std::get<2>(got[i]), i + 1);
  }
  UplinkStats st = up.stats();
  EXPECT_TRUE(st.connected);
  EXPECT_EQ(st.sent, 100u);
  EXPECT_EQ(st.duplicates, 0u);
  EXPECT_EQ(st.reconnects, 0u);
}

// Issue #15: the epoch was the wall clock at construction, so a clock
// stepped back gave a new start an epoch below its old ones. Now it comes
// from the spool's persistent state, or is random without one.
TEST(Uplink, EpochComesFromTheSpoolNotTheWallClock) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("netdiag_uplink_epoch_" + std::to_string(::getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  uint64_t first = 0;
  for (int start = 0; start < 3; ++start) {
    std::string error;
    auto spool = openDiskSpool(dir, 1 << 20, &error);
    ASSERT_TRUE(spool) << error;
    Uplink up(options("127.0.0.1:1"), *spool);
    if (start == 0) first = up.epoch();
    EXPECT_EQ(up.epoch(), first + start) << "each start of the agent takes the next epoch";
    EXPECT_EQ(up.epoch(), spool->epoch());
  }
  std::filesystem::remove_all(dir);

  // Without persistent state: a random 64-bit epoch per start, not the time.
  const auto now_ns = static_cast<uint64_t>(
      std::chrono::nanoseconds(std::chrono::system_clock::now().time_since_epoch()).count());
  CountSpool a, b;
  Uplink ua(options("127.0.0.1:1"), a);
  Uplink ub(options("127.0.0.1:1"), b);
  EXPECT_NE(ua.epoch(), ub.epoch());
  EXPECT_NE(ua.epoch(), 0u);
  const uint64_t day_ns = 86400ull * 1000000000ull;
  EXPECT_FALSE(ua.epoch() > now_ns - day_ns && ua.epoch() < now_ns + day_ns)
      << "the epoch looks like the wall clock";
}

TEST(Uplink, HandsTheActionsOfAnAckToItsHandlerAndSendsResultsInBatches) {
  Server s;
  s.start();
  v1::DrainAction act;
  act.set_port("h0:eth0");
  act.set_nonce(77);
  {
    std::lock_guard lk(s.service.mu_);
    s.service.actions = {act, act};
  }
  std::mutex mu;
  std::vector<uint64_t> got;
  UplinkOptions o = options(s.address());
  o.on_action = [&](const v1::DrainAction& a) {
    std::lock_guard lk(mu);
    got.push_back(a.nonce());
  };
  CountSpool spool;
  Uplink up(o, spool);
  v1::Batch b = batchWithProbe(1);
  b.add_action_results()->set_nonce(5);
  up.send(b);
  ASSERT_TRUE(waitFor([&] {
    std::lock_guard lk(mu);
    return got.size() == 2;
  })) << up.lastError();
  EXPECT_EQ(got, (std::vector<uint64_t>{77, 77}));
  std::lock_guard lk(s.service.mu_);
  EXPECT_EQ(s.service.results, (std::vector<uint64_t>{5}));
}

TEST(Uplink, ResendsUnacknowledgedBatchesAfterTheStreamBreaks) {
  Server s;
  s.service.break_after = 5;  // the 5th batch is received but never acked
  s.start();
  CountSpool spool;
  Uplink up(options(s.address()), spool);
  for (int i = 0; i < 20; ++i) up.send(batchWithProbe(i));
  ASSERT_TRUE(waitFor([&] { return spool.batches() == 0; }))
      << "left in spool: " << spool.batches() << ", error: " << up.lastError();
  EXPECT_EQ(s.service.uniqueCount(), 20u);
  EXPECT_GT(s.service.receivedCopy().size(), 20u) << "the unacknowledged batch must be resent";
  EXPECT_GE(up.stats().reconnects, 1u);
}

TEST(Uplink, KeepsBatchesWhileTheAnalyzerIsDownThenDeliversThem) {
  Server probe;
  probe.start();
  int port = probe.port;
  probe.stop();  // the port is now (very likely) free, and nothing listens

  CountSpool spool;
  Uplink up(options("127.0.0.1:" + std::to_string(port)), spool);
  for (int i = 0; i < 10; ++i) up.send(batchWithProbe(i));
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(spool.batches(), 10u);
  EXPECT_FALSE(up.stats().connected);

  Server s;
  s.start(port);
  ASSERT_TRUE(waitFor([&] { return spool.batches() == 0; }))
      << "left in spool: " << spool.batches() << ", error: " << up.lastError();
  EXPECT_EQ(s.service.uniqueCount(), 10u);
  EXPECT_TRUE(up.stats().connected);
}

TEST(Uplink, TheBoundDropsBatchesInFlightWithoutStallingTheSpool) {
  Server s;
  s.service.hold_acks = true;
  s.start();
  CountSpool spool(10);
  Uplink up(options(s.address()), spool);
  for (int i = 0; i < 10; ++i) up.send(batchWithProbe(i));
  ASSERT_TRUE(waitFor([&] { return s.service.receivedCopy().size() == 10; }));
  // Five more: the bound drops the five oldest, which are in flight.
  for (int i = 10; i < 15; ++i) up.send(batchWithProbe(i));
  EXPECT_EQ(spool.dropped(), 5u);
  s.service.releaseAcks();
  ASSERT_TRUE(waitFor([&] { return spool.batches() == 0; }))
      << "left in spool: " << spool.batches() << ", error: " << up.lastError();
  EXPECT_EQ(s.service.uniqueCount(), 15u);
  // Acks for the dropped batches matched nothing and popped nothing extra.
  EXPECT_EQ(up.stats().acked, 10u);
}

TEST(Uplink, BatchesOfAnEarlierRunKeepTheirEpochAndSeq) {
  CountSpool spool;
  v1::Batch old = batchWithProbe(1);
  old.set_agent("h0");
  old.set_epoch(7);
  old.set_seq(3);
  spool.push(old.SerializeAsString());
  spool.push("not a batch \xff\xff\xff");  // unreadable: dropped, never blocks the rest

  Server s;
  s.start();
  Uplink up(options(s.address()), spool);
  up.send(batchWithProbe(2));
  ASSERT_TRUE(waitFor([&] { return spool.batches() == 0; }))
      << "left in spool: " << spool.batches() << ", error: " << up.lastError();
  auto got = s.service.receivedCopy();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], Key("h0", 7, 3));
  EXPECT_EQ(got[1], Key("h0", up.epoch(), 1));
  EXPECT_NE(up.epoch(), 7u);
}

// ---- the message bound (issue #15, item 4) ----------------------------------

v1::Batch batchOfProbes(size_t n, double t0 = 0) {
  v1::Batch b;
  for (size_t i = 0; i < n; ++i) {
    auto* p = b.add_probes();
    p->set_t(t0 + static_cast<double>(i));
    p->set_src("h0:eth0");
    p->set_dst("h1:eth0");
    p->set_flow(40000 + i % 64);
    p->set_sent(10);
    p->add_path_addrs("10.0.0." + std::to_string(i % 250));
  }
  return b;
}

TEST(SplitBatch, PartsStayWithinTheBoundAndKeepEveryRecordInOrder) {
  // splitBatch copies every field but the three record lists: a new field
  // of Batch must be looked at here (is it a record list?).
  EXPECT_EQ(v1::Batch::descriptor()->field_count(), 9);  // topology (8) is copied with the head
  v1::Batch b = batchOfProbes(3000);
  for (int i = 0; i < 3; ++i) {
    auto* r = b.add_action_results();  // each in one part, not in every one
    r->set_nonce(static_cast<uint64_t>(i) + 1);
    r->set_port("h0:eth0");
  }
  for (int i = 0; i < 500; ++i) {
    auto* c = b.add_ports();
    c->set_port("h0:eth" + std::to_string(i));
    auto* l = b.add_lldp();
    l->set_port("h0:eth" + std::to_string(i));
    l->set_neighbor(std::string(static_cast<size_t>(i), 'n'));
  }
  b.set_agent("h0");
  b.set_epoch(5);
  b.set_seq(9);
  b.set_sent_at(123);
  const size_t whole = b.ByteSizeLong() + 16;  // room for any seq
  for (size_t max : {size_t{1024}, size_t{4096}, size_t{65536}, whole}) {
    uint64_t dropped = 0;
    auto parts = splitBatch(b, max, &dropped);
    EXPECT_EQ(dropped, 0u);
    v1::Batch joined;
    for (v1::Batch& p : parts) {
      EXPECT_EQ(p.agent(), "h0");
      EXPECT_EQ(p.epoch(), 5u);
      EXPECT_EQ(p.sent_at(), 123);
      p.set_seq(~uint64_t{0});  // the largest seq still fits
      EXPECT_LE(p.ByteSizeLong(), max);
      joined.MergeFrom(p);
    }
    EXPECT_EQ(parts.size() == 1, max == whole);
    joined.set_seq(9);
    EXPECT_EQ(joined.SerializeAsString(), b.SerializeAsString()) << "max " << max;
  }
  // A record that alone exceeds the bound is left out and counted.
  v1::Batch odd = batchOfProbes(2);
  odd.mutable_probes(1)->add_path("x" + std::string(5000, 'x'));
  uint64_t dropped = 0;
  auto parts = splitBatch(odd, 1024, &dropped);
  EXPECT_EQ(dropped, 1u);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].probes_size(), 1);
  // No records: one (empty) part.
  EXPECT_EQ(splitBatch(v1::Batch(), 1024, nullptr).size(), 1u);
}

TEST(Uplink, SplitsABatchOverTheBoundIntoPartsWithSeqsOfTheirOwn) {
  Server s;
  s.start();
  CountSpool spool;
  UplinkOptions o = options(s.address());
  o.max_batch_bytes = 16 << 10;
  Uplink up(o, spool);
  up.send(batchOfProbes(5000));  // ~300 KB
  up.send(batchOfProbes(1));
  ASSERT_TRUE(waitFor([&] { return spool.batches() == 0; }))
      << "left in spool: " << spool.batches() << ", error: " << up.lastError();
  auto got = s.service.receivedCopy();
  ASSERT_GT(got.size(), 10u);
  std::set<uint64_t> seqs;
  for (const Key& k : got) {
    EXPECT_EQ(std::get<1>(k), up.epoch());
    seqs.insert(std::get<2>(k));
  }
  EXPECT_EQ(seqs.size(), got.size()) << "every part has a seq of its own";
  EXPECT_EQ(*seqs.rbegin(), got.size());
  EXPECT_EQ(s.service.uniqueRecords(), 5001u);
  EXPECT_LE(s.service.largest, o.max_batch_bytes);
  EXPECT_EQ(up.stats().split, 1u);
}

// "Say what happens to an oversized batch already in an agent's spool: split
// it, never resend it forever." A 6 MiB batch spooled earlier (by an older
// agent, with the old 64 MiB bound) against a server with gRPC's default
// 4 MiB receive limit, as the analyzer has: it used to break the stream on
// every send, forever. Now it is sent as parts and leaves the spool.
TEST(Uplink, AnOversizedBatchAlreadyInTheSpoolIsSplitNotResentForever) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("netdiag_uplink_oversized_" + std::to_string(::getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  std::string error;
  auto spool = openDiskSpool(dir, 64 << 20, &error);
  ASSERT_TRUE(spool) << error;
  v1::Batch old = batchOfProbes(100000);
  old.set_agent("h0");
  old.set_epoch(7);
  old.set_seq(3);
  ASSERT_GT(old.ByteSizeLong(), kMaxBatchBytes);
  ASSERT_TRUE(spool->push(old.SerializeAsString()));

  Server s;
  s.start();
  Uplink up(options(s.address()), *spool);
  up.send(batchOfProbes(1));
  ASSERT_TRUE(waitFor([&] { return spool->batches() == 0; }, 60s))
      << "left in spool: " << spool->batches() << ", error: " << up.lastError();
  EXPECT_EQ(s.service.uniqueRecords(), 100001u) << "every record delivered once";
  EXPECT_LE(s.service.largest, kMaxBatchBytes);
  auto got = s.service.receivedCopy();
  EXPECT_EQ(got.size(), s.service.uniqueCount()) << "nothing was sent twice";
  for (const Key& k : got) EXPECT_NE(k, Key("h0", 7, 3)) << "the whole batch was sent";
  EXPECT_EQ(up.stats().reconnects, 0u);
  EXPECT_EQ(up.stats().split, 1u);
  EXPECT_NE(up.lastSplit().find("sent as 2 parts"), std::string::npos) << up.lastSplit();
  std::filesystem::remove_all(dir);
}

TEST(Uplink, StopLeavesUnacknowledgedBatchesInTheSpool) {
  Server s;
  s.service.hold_acks = true;
  s.start();
  CountSpool spool;
  {
    Uplink up(options(s.address()), spool);
    for (int i = 0; i < 3; ++i) up.send(batchWithProbe(i));
    ASSERT_TRUE(waitFor([&] { return s.service.receivedCopy().size() == 3; }));
    auto t0 = std::chrono::steady_clock::now();
    up.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s) << "stop() must not hang";
  }
  EXPECT_EQ(spool.batches(), 3u);
}

TEST(Uplink, FetchPlanReturnsThePlanOrANamedError) {
  Server s;
  s.start();
  CountSpool spool;
  Uplink up(options(s.address()), spool);
  std::string error;
  auto plan = up.fetchPlan(4, &error);
  ASSERT_TRUE(plan) << error;
  EXPECT_EQ(plan->version(), 5u);
  ASSERT_EQ(plan->monitored_ports_size(), 1);
  EXPECT_EQ(plan->monitored_ports(0), "h0:eth0");

  s.stop();
  UplinkOptions o = options(s.address());
  o.plan_timeout_s = 0.3;
  Uplink down(o, spool);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(down.fetchPlan(0, &error));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_NE(error.find("GetPlan"), std::string::npos) << error;
}

TEST(Uplink, CheckOptionsNamesTheProblem) {
  UplinkOptions o;
  o.agent = "h0";
  EXPECT_EQ(checkUplinkOptions(o), "");
  o.analyzer = "nohost";
  EXPECT_NE(checkUplinkOptions(o).find("HOST:PORT"), std::string::npos);
  o.analyzer = "127.0.0.1:7600";
  o.tls_cert = "/nonexistent/cert.pem";
  EXPECT_NE(checkUplinkOptions(o).find("--tls-key"), std::string::npos);
  o.tls_key = "/nonexistent/key.pem";
  EXPECT_NE(checkUplinkOptions(o).find("/nonexistent/cert.pem"), std::string::npos);
}

// ---- TLS ----------------------------------------------------------------

class TlsFiles {
 public:
  TlsFiles() {
    dir_ = std::filesystem::temp_directory_path() /
           ("netdiag_uplink_tls_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::string d = dir_.string();
    // A CA, and a server and a client certificate it signed; the server's
    // names 127.0.0.1 so the uplink connects by address.
    std::string cmd =
        "cd " + d +
        " && (openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
        "-days 1 -subj /CN=netdiag-test-ca && "
        "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=analyzer "
        "&& "
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost' > san.ext && "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem "
        "-days 1 -extfile san.ext && "
        "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=h0 && "
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem "
        "-days 1) >/dev/null 2>&1";
    ok_ = std::system(cmd.c_str()) == 0;
  }
  ~TlsFiles() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  bool ok() const { return ok_; }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::string read(const std::string& name) const {
    std::ifstream in(file(name));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::filesystem::path dir_;
  bool ok_ = false;
};

std::shared_ptr<grpc::ServerCredentials> serverTls(const TlsFiles& f, bool require_client) {
  grpc::SslServerCredentialsOptions o(
      require_client ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                     : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  o.pem_root_certs = f.read("ca.pem");
  o.pem_key_cert_pairs.push_back({f.read("server.key"), f.read("server.pem")});
  return grpc::SslServerCredentials(o);
}

TEST(UplinkTls, TlsAndMutualTls) {
  TlsFiles f;
  if (!f.ok()) GTEST_SKIP() << "openssl could not make test certificates";

  {
    Server s;
    s.start(0, serverTls(f, false));
    CountSpool spool;
    UplinkOptions o = options(s.address());
    o.tls_ca = f.file("ca.pem");
    ASSERT_EQ(checkUplinkOptions(o), "");
    Uplink up(o, spool);
    up.send(batchWithProbe(1));
    EXPECT_TRUE(waitFor([&] { return spool.batches() == 0; })) << up.lastError();
  }
  {
    Server s;
    s.start(0, serverTls(f, true));
    // Without a client certificate the mTLS server refuses the uplink.
    CountSpool refused;
    UplinkOptions o = options(s.address());
    o.tls_ca = f.file("ca.pem");
    Uplink anonymous(o, refused);
    anonymous.send(batchWithProbe(1));
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(refused.batches(), 1u);
    EXPECT_EQ(s.service.uniqueCount(), 0u);
    anonymous.stop();

    CountSpool spool;
    o.tls_cert = f.file("client.pem");
    o.tls_key = f.file("client.key");
    Uplink up(o, spool);
    up.send(batchWithProbe(1));
    EXPECT_TRUE(waitFor([&] { return spool.batches() == 0; })) << up.lastError();
  }
  {
    // A plaintext uplink cannot talk to a TLS listener.
    Server s;
    s.start(0, serverTls(f, false));
    CountSpool spool;
    Uplink up(options(s.address()), spool);
    up.send(batchWithProbe(1));
    std::this_thread::sleep_for(400ms);
    EXPECT_EQ(spool.batches(), 1u);
  }
}

}  // namespace
}  // namespace netdiag::collector
