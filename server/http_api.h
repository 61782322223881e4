#pragma once

// The analyzer's HTTP side (cpp-httplib): the JSON API of
// docs/architecture.md ("The live pipeline"), /metrics in the Prometheus
// text format, /healthz, /readyz and a small landing page at /.
//
// Bounds (docs/operations.md, "Bounds"): connections are served by at most
// `max_connections` threads, one each; a connection beyond that is answered
// 503 at once and closed, so the accept loop never waits. Every request must
// arrive whole within `request_timeout_s` of its first byte and its response
// be taken within `response_timeout_s` (cpp-httplib itself only bounds each
// single read, so a client that sends a byte every few seconds would hold a
// worker forever), with at most `max_request_bytes` of request line, headers
// and body (a body over `max_body_bytes` is read, discarded and answered 413). Range headers are
// ignored (every response is the whole body, `Accept-Ranges: none`): cpp-httplib would otherwise
// answer a multi-range request with one copy of the body per range. /metrics answers 503 with a
// JSON error instead of a body larger than `max_metrics_bytes`.
//
// Thread-safety: the server answers on its own threads; everything it reads
// is thread-safe (LiveAnalyzer, the registry's Collect()).

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <prometheus/registry.h>

#include "server/drain_coordinator.h"
#include "server/drain_outbox.h"
#include "server/live_analyzer.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace netdiag::server {

struct HttpLimits {
  size_t max_connections = 128;          // served at once, a thread each; beyond: 503, closed
  double keep_alive_timeout_s = 5;       // idle wait for a connection's next request
  size_t keep_alive_max_requests = 16;   // requests per connection, then it is closed
  double read_timeout_s = 5;             // longest wait for the client's next bytes
  double write_timeout_s = 5;            // longest wait for the client to take more bytes
  double request_timeout_s = 10;         // a request, from its first byte until read whole
  double response_timeout_s = 30;        // its response, from the first byte until written
  size_t max_request_bytes = 256 << 10;  // request line + headers + body
  size_t max_body_bytes = 64 << 10;      // a larger body is answered 413
  size_t max_metrics_bytes = 64 << 20;   // a larger /metrics body is refused (503)
};

// What the API may change, and who may: the drain outbox (null: no drain
// key), the drain coordinator (approvals, undo, freeze) and the bearer
// token of the write endpoints (unset: they answer 403).
struct HttpWrites {
  DrainOutbox* outbox = nullptr;
  DrainCoordinator* coordinator = nullptr;
  std::optional<std::string> token;
};

class HttpApi {
 public:
  // `ready` says whether /readyz answers 200 (topology loaded, gRPC up).
  HttpApi(LiveAnalyzer& analyzer, std::shared_ptr<prometheus::Registry> registry,
          std::function<bool()> ready, HttpLimits limits = {}, HttpWrites writes = {});
  ~HttpApi();  // stop()
  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  // Binds HOST:PORT (port 0: any free port) and serves on a thread. Error
  // text, empty on success.
  std::string start(const std::string& address);
  int port() const { return port_; }
  void stop();

 private:
  void routes();
  // The token holds and the body is a JSON object (into `body`); else the
  // error is answered and false.
  bool writable(const httplib::Request& req, httplib::Response& res, nlohmann::json& body) const;

  LiveAnalyzer& analyzer_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::function<bool()> ready_;
  const HttpLimits limits_;
  const HttpWrites writes_;
  std::mutex metrics_mu_;  // one /metrics serialization at a time
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// "HOST:PORT" -> host and port; false for anything else (an empty host,
// a port outside 0..65535, a missing colon).
bool splitHostPort(const std::string& address, std::string& host, int& port);

}  // namespace netdiag::server
