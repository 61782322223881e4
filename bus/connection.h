#pragma once

// One connection to a NATS server (or cluster) with its JetStream context:
// the only place netdiag calls nats.c's connection API. It reconnects for
// ever, and a server that is not up yet is retried in the background, so
// an agent or analyzer can start before the bus.
//
// Thread-safety: nats.c connections are safe to use from any thread; this
// wrapper adds only its own status, behind a mutex.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nats/nats.h>

#include "bus/subjects.h"

namespace netdiag::bus {

struct BusOptions {
  // nats://HOST:PORT, or several joined by commas; nats://USER:PASSWORD@...
  // for a server with user permissions (keep such a URL in a 0600 config
  // file, not on a command line).
  std::string url;
  std::string name;  // the connection's name on the server (its monitoring)
  Subjects subjects;
  // Authentication (docs/security.md, "The bus"): a NATS credentials file
  // (JWT and nkey seed), and TLS with an optional client certificate.
  std::string creds_file;
  std::string tls_ca, tls_cert, tls_key;
  // Replies (publish acks, plans) come to inboxes under this prefix;
  // empty: nats.c's _INBOX. Agents use _INBOX.<agent>, so each one's user
  // may subscribe only to its own replies (docs/security.md).
  std::string inbox_prefix;
  double connect_timeout_s = 2;
  double reconnect_wait_s = 1;
  double request_timeout_s = 5;  // JetStream API calls, publishes and plan requests
};

// "" or what is wrong: the URL's scheme, subjects, TLS files that go together.
std::string checkBusOptions(const BusOptions& o);

// The URL(s) with any user:password@ replaced by ***@, for logs.
std::string redactedUrl(const std::string& url);

// A nats.c status and, when given, JetStream's error code and text, in words.
std::string statusText(natsStatus s, const jsErrCode* code = nullptr);

class Connection {
 public:
  // Connects, or starts retrying in the background when no server answers
  // yet (connected() says which). nullptr and *error for bad options.
  static std::unique_ptr<Connection> open(const BusOptions& o, std::string* error);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  natsConnection* nats() const { return nc_; }
  jsCtx* jetStream() const { return js_; }
  const BusOptions& options() const { return options_; }
  bool connected() const;
  // The largest message the server takes (headers included), 0 while not
  // connected.
  int64_t maxPayload() const;
  // The last disconnect or asynchronous error, for logs ("" while none).
  std::string lastError() const;
  uint64_t reconnects() const { return status_->reconnects.load(); }
  // Closes the connection: calls waiting on the server return at once.
  void close();

 private:
  // What nats.c's callbacks write. They run on its own thread, possibly
  // after natsConnection_Close returned, so they hold this (shared) rather
  // than the Connection; the closed callback, always the last one, drops
  // their reference.
  struct Status {
    std::mutex mu;
    std::condition_variable cv;
    bool closed = false;
    std::string last_error;
    std::atomic<uint64_t> reconnects{0};
    void setError(std::string e);
  };
  using StatusRef = std::shared_ptr<Status>;

  explicit Connection(BusOptions o) : options_(std::move(o)) {}
  static void onDisconnected(natsConnection* nc, void* ref);
  static void onConnected(natsConnection* nc, void* ref);
  static void onReconnected(natsConnection* nc, void* ref);
  static void onClosed(natsConnection* nc, void* ref);
  static void onError(natsConnection* nc, natsSubscription* sub, natsStatus err, void* ref);

  const BusOptions options_;
  natsOptions* opts_ = nullptr;
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  StatusRef status_ = std::make_shared<Status>();
  StatusRef* callback_ref_ = nullptr;  // the callbacks' reference, until closed
};

}  // namespace netdiag::bus
