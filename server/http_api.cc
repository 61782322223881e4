#include "server/http_api.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string_view>
#include <vector>

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include "actuator/text.h"

namespace netdiag::server {
namespace {

using SteadyClock = std::chrono::steady_clock;

SteadyClock::time_point after(double seconds) {
  return SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                  std::chrono::duration<double>(std::max(0.0, seconds)));
}

// Set on the thread that answers connections beyond the bound.
thread_local bool t_shedding = false;

// cpp-httplib's task queue, bounded: at most `max_workers` threads, started
// as connections need them, each serving one connection at a time. A
// connection that would have to wait for a worker goes to one more thread
// that only answers it 503 and closes it (t_shedding), so connections never
// queue behind slow ones and the listener never blocks.
class BoundedPool final : public httplib::TaskQueue {
 public:
  explicit BoundedPool(size_t max_workers) : max_workers_(std::max<size_t>(1, max_workers)) {
    shedder_ = std::thread([this] { shedLoop(); });
  }
  ~BoundedPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lk(mu_);
      if (idle_ > jobs_.size()) {
        jobs_.push_back(std::move(fn));
      } else if (workers_.size() < max_workers_) {
        jobs_.push_back(std::move(fn));
        workers_.emplace_back([this] { workLoop(); });
      } else {
        shed_.push_back(std::move(fn));
      }
    }
    cv_.notify_all();
  }

  void shutdown() override {
    {
      std::lock_guard lk(mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    shedder_.join();
  }

 private:
  void workLoop() {
    std::unique_lock lk(mu_);
    while (true) {
      ++idle_;
      cv_.wait(lk, [&] { return stopped_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // stopped, nothing left
      std::function<void()> fn = std::move(jobs_.front());
      jobs_.pop_front();
      lk.unlock();
      fn();
      lk.lock();
    }
  }
  void shedLoop() {
    t_shedding = true;
    std::unique_lock lk(mu_);
    while (true) {
      cv_.wait(lk, [&] { return stopped_ || !shed_.empty(); });
      if (shed_.empty()) return;
      std::function<void()> fn = std::move(shed_.front());
      shed_.pop_front();
      lk.unlock();
      fn();
      lk.lock();
    }
  }

  const size_t max_workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_, shed_;
  std::vector<std::thread> workers_;
  std::thread shedder_;
  size_t idle_ = 0;
  bool stopped_ = false;
};

// One connection's socket as cpp-httplib's Stream, with the deadlines
// cpp-httplib lacks: each request must arrive within request_timeout_s of
// its first byte and within max_request_bytes, and its response must be
// taken within response_timeout_s. Waits are poll(2) in short slices that
// also end when the server stops.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int sock, const HttpLimits& limits, std::function<bool()> stopping)
      : sock_(sock), limits_(limits), stopping_(std::move(stopping)) {}

  // Waits up to keep_alive_timeout_s for the next request; then its clocks start.
  bool nextRequest() {
    if (len_ == pos_ && !wait(POLLIN, after(limits_.keep_alive_timeout_s))) return false;
    deadline_ = after(limits_.request_timeout_s);
    writing_ = false;
    request_bytes_ = 0;
    return true;
  }

  bool is_readable() const override {
    return pos_ < len_ || wait(POLLIN, std::min(after(limits_.read_timeout_s), deadline_));
  }
  bool is_writable() const override {
    return wait(POLLOUT, std::min(after(limits_.write_timeout_s), deadline_));
  }

  // A read or write failed by a bound (or the client): the connection ends
  // after this request, whatever cpp-httplib makes of it.
  bool failed() const { return failed_; }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == len_) {
      if (request_bytes_ >= limits_.max_request_bytes ||
          !wait(POLLIN, std::min(after(limits_.read_timeout_s), deadline_))) {
        failed_ = true;
        return -1;
      }
      const size_t want = std::min(sizeof buf_, limits_.max_request_bytes - request_bytes_);
      ssize_t n;
      do {
        n = ::recv(sock_, buf_, want, 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) {
        failed_ = true;
        return n;
      }
      pos_ = 0;
      len_ = static_cast<size_t>(n);
      request_bytes_ += len_;
    }
    const size_t n = std::min(size, len_ - pos_);
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!writing_) {  // the request is in: the response has its own deadline
      writing_ = true;
      deadline_ = after(limits_.response_timeout_s);
    }
    ssize_t n = -1;
    if (is_writable()) {
      do {
        n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
      } while (n < 0 && errno == EINTR);
    }
    if (n < 0) failed_ = true;
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address(::getsockname, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  bool wait(short events, SteadyClock::time_point until) const {
    while (true) {
      if (stopping_()) return false;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - SteadyClock::now());
      if (left.count() <= 0) return false;
      pollfd p{sock_, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
      if (r > 0) return (p.revents & (events | POLLHUP | POLLERR)) != 0;
      if (r < 0 && errno != EINTR) return false;
    }
  }
  template <typename Fn>
  void address(Fn fn, std::string& ip, int& port) const {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ip.clear();
    port = -1;
    if (fn(sock_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
      ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
      ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }

  const int sock_;
  const HttpLimits& limits_;
  std::function<bool()> stopping_;
  SteadyClock::time_point deadline_ = SteadyClock::now();
  bool writing_ = false;
  bool failed_ = false;
  size_t request_bytes_ = 0;
  char buf_[4096];
  size_t pos_ = 0, len_ = 0;
};

constexpr int kListenBacklog = 512;

constexpr char kOverloaded[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    "Content-Length: 74\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
    "{\"error\": \"too many HTTP connections at once (netdiag analyzer's bound)\"}\n";

// cpp-httplib's Server with its per-connection loop replaced (the virtual
// process_and_close_socket): the bounded pool, deadlines and byte limits of
// ConnectionStream, and the keep-alive bounds.
class BoundedServer final : public httplib::Server {
 public:
  explicit BoundedServer(const HttpLimits& limits) : limits_(limits) {
    new_task_queue = [this] { return new BoundedPool(limits_.max_connections); };
    set_payload_max_length(limits_.max_body_bytes);
    set_keep_alive_max_count(std::max<size_t>(1, limits_.keep_alive_max_requests));
    set_keep_alive_timeout(static_cast<time_t>(std::ceil(limits_.keep_alive_timeout_s)));
    set_read_timeout(std::chrono::duration<double>(limits_.read_timeout_s));
    set_write_timeout(std::chrono::duration<double>(limits_.write_timeout_s));
  }

  // cpp-httplib listens with a backlog of 5, so a burst of connections
  // (even a few dozen) has SYNs dropped and clients retrying after 1 s.
  // Linux takes a second listen() on the bound socket as a new backlog.
  void widenBacklog() {
    if (svr_sock_ != INVALID_SOCKET) ::listen(svr_sock_, kListenBacklog);
  }

 private:
  bool process_and_close_socket(socket_t sock) override {
    bool ok = false;
    if (t_shedding) {
      static_assert(sizeof kOverloaded - 1 - std::string_view(kOverloaded).find("\r\n\r\n") - 4 ==
                    74);
      (void)::send(sock, kOverloaded, sizeof kOverloaded - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      // Take what the client already sent, without waiting, so that closing
      // does not reset the connection before it reads the 503.
      ::shutdown(sock, SHUT_WR);
      char sink[4096];
      for (int i = 0; i < 16 && ::recv(sock, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
      }
    } else {
      ConnectionStream strm(sock, limits_, [this] { return svr_sock_ == INVALID_SOCKET; });
      const size_t max_requests = std::max<size_t>(1, limits_.keep_alive_max_requests);
      for (size_t n = 0; n < max_requests && strm.nextRequest(); ++n) {
        bool closed = false;
        ok = process_request(strm, n + 1 == max_requests, closed, nullptr);
        if (!ok || closed || strm.failed()) break;
      }
      if (strm.failed()) lingerBriefly(sock);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
  }

  // Closing with unread request bytes resets the connection, and the
  // client may then lose the error just sent: stop sending, take what
  // arrives for a moment (bounded), then close.
  static void lingerBriefly(int sock) {
    ::shutdown(sock, SHUT_WR);
    const auto end = after(0.5);
    char sink[4096];
    for (size_t taken = 0; taken < (size_t{256} << 10);) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - SteadyClock::now()).count();
      pollfd p{sock, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return;
      const ssize_t n = ::recv(sock, sink, sizeof sink, MSG_DONTWAIT);
      if (n <= 0) return;
      taken += static_cast<size_t>(n);
    }
  }

  const HttpLimits limits_;
};

constexpr const char* kJson = "application/json";

// Every body is dumped with invalid UTF-8 replaced (U+FFFD): a request path
// or an agent-supplied string must never make serialization throw, since a
// throw outside cpp-httplib's handler (the error handler) aborts the process.
void sendJson(httplib::Response& res, const nlohmann::json& body, int status = 200) {
  res.status = status;
  res.set_content(body.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", kJson);
}

// A client-supplied string as it may appear in an error message: control
// bytes escaped, at most 200 bytes (the rest is elided).
std::string printable(std::string_view raw) {
  constexpr size_t kMax = 200;
  std::string out;
  for (size_t i = 0; i < raw.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(raw[i]);
    if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (raw.size() > kMax) out += "...";
  return out;
}

void sendError(httplib::Response& res, int status, const std::string& message) {
  sendJson(res, {{"error", message}}, status);
}

// A string member of a JSON body: false when it is not a string, or
// missing and required.
bool textField(const nlohmann::json& body, const char* key, std::string& into, bool required) {
  auto it = body.find(key);
  if (it == body.end()) return !required;
  if (!it->is_string()) return false;
  into = it->get<std::string>();
  return true;
}

// Who asked, for the logs and the audit: the body's "by" as the token
// holder names themselves.
std::string operatorName(const nlohmann::json& body) {
  std::string by;
  if (!textField(body, "by", by, false) || by.empty()) by = "api";
  return "operator " + actuator::printableText(by, 64);
}

constexpr const char* kLanding = R"(<!doctype html>
<html><head><title>netdiag analyzer</title></head>
<body><h1>netdiag analyzer</h1>
<p>Fault localization for the fabric. Endpoints:</p>
<ul>
<li><a href="/api/v1/locate">/api/v1/locate</a>: incidents open now</li>
<li><a href="/api/v1/incidents">/api/v1/incidents</a>: every incident (<code>?since=T&amp;kind=K&amp;state=open|all</code>)</li>
<li><code>/api/v1/incidents/&lt;id&gt;</code>, <code>/api/v1/links/&lt;X:p-&gt;Y:q&gt;</code></li>
<li><a href="/api/v1/drain">/api/v1/drain</a>: the drain policy, links netdiag drained, actions</li>
<li><a href="/metrics">/metrics</a>: Prometheus metrics</li>
<li><a href="/healthz">/healthz</a>, <a href="/readyz">/readyz</a></li>
</ul></body></html>
)";

}  // namespace

bool splitHostPort(const std::string& address, std::string& host, int& port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) return false;
  host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string digits = address.substr(colon + 1);
  if (digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos)
    return false;
  port = std::stoi(digits);
  return port <= 65535 && !host.empty();
}

bool HttpApi::writable(const httplib::Request& req, httplib::Response& res,
                       nlohmann::json& body) const {
  if (!writes_.token) {
    sendError(res, 403, "writes are off: start the analyzer with --api-token-file");
    return false;
  }
  const std::string given = req.get_header_value("Authorization");
  const std::string want = "Bearer " + *writes_.token;
  if (given.size() != want.size() || CRYPTO_memcmp(given.data(), want.data(), want.size()) != 0) {
    res.set_header("WWW-Authenticate", "Bearer");
    sendError(res, 401, "missing or wrong bearer token");
    return false;
  }
  body = nlohmann::json::parse(req.body.empty() ? std::string("{}") : req.body, nullptr, false);
  if (!body.is_object()) {
    sendError(res, 400, "the body is not a JSON object");
    return false;
  }
  return true;
}

HttpApi::HttpApi(LiveAnalyzer& analyzer, std::shared_ptr<prometheus::Registry> registry,
                 std::function<bool()> ready, HttpLimits limits, HttpWrites writes)
    : analyzer_(analyzer),
      registry_(std::move(registry)),
      ready_(std::move(ready)),
      limits_(limits),
      writes_(std::move(writes)),
      server_(std::make_unique<BoundedServer>(limits_)) {
  routes();
}

HttpApi::~HttpApi() { stop(); }

void HttpApi::routes() {
  httplib::Server& s = *server_;
  // No byte ranges: cpp-httplib answers "Range: bytes=0-,0-,..." with one
  // copy of the body per range (a 7.9 KB header made /metrics 56 MB), so
  // every response is the whole body with 200. The parsed ranges are
  // dropped before routing; `req` is the server's own non-const Request.
  s.set_default_headers({{"Accept-Ranges", "none"}});
  s.set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    const_cast<httplib::Request&>(req).ranges.clear();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kLanding, "text/html; charset=utf-8");
  });
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    bool ok = ready_ && ready_();
    res.status = ok ? 200 : 503;
    res.set_content(ok ? "ready\n" : "not ready\n", "text/plain");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::string body;
    {
      // One at a time: concurrent scrapes do not multiply the memory of
      // building the body.
      std::lock_guard lk(metrics_mu_);
      if (registry_) body = prometheus::TextSerializer().Serialize(registry_->Collect());
    }
    if (body.size() > limits_.max_metrics_bytes) {
      return sendError(res, 503,
                       "/metrics would be " + std::to_string(body.size()) +
                           " bytes, more than the analyzer's bound of " +
                           std::to_string(limits_.max_metrics_bytes) +
                           " (docs/operations.md, Bounds)");
    }
    res.set_content(body, "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/api/v1/locate", [this](const httplib::Request&, httplib::Response& res) {
    sendJson(res, analyzer_.locate());
  });
  s.Get("/api/v1/incidents", [this](const httplib::Request& req, httplib::Response& res) {
    IncidentFilter f;
    if (req.has_param("since")) {
      const std::string v = req.get_param_value("since");
      try {
        size_t used = 0;
        f.since = std::stod(v, &used);
        if (used != v.size() || !std::isfinite(*f.since)) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        return sendError(res, 400,
                         "since: \"" + printable(v) + "\" is not a finite number (Unix seconds)");
      }
    }
    if (req.has_param("kind")) f.kind = req.get_param_value("kind");
    if (req.has_param("state")) {
      const std::string v = req.get_param_value("state");
      if (v != "open" && v != "all") {
        return sendError(res, 400, "state: \"" + printable(v) + "\" is not open or all");
      }
      f.only_open = v == "open";
    }
    sendJson(res, analyzer_.incidents(f));
  });
  s.Get(R"(/api/v1/incidents/([^/]+))", [this](const httplib::Request& req,
                                               httplib::Response& res) {
    auto body = analyzer_.incident(req.matches[1]);
    if (!body)
      return sendError(res, 404, "no incident \"" + printable(std::string(req.matches[1])) + "\"");
    sendJson(res, *body);
  });
  s.Get(R"(/api/v1/links/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string name = req.matches[1];
    auto body = analyzer_.link(name);
    if (!body) {
      return sendError(res, 404,
                       "no directed link \"" + printable(name) + "\" in topology " +
                           analyzer_.topology().name + " (write it as X:p->Y:q)");
    }
    sendJson(res, *body);
  });
  s.Get("/api/v1/drain/actions", [this](const httplib::Request&, httplib::Response& res) {
    if (!writes_.outbox) return sendJson(res, {{"actions", nlohmann::json::array()}});
    sendJson(res, writes_.outbox->list());
  });
  // The write endpoints (docs/operations.md, "Drain actions"): each needs
  // the API token; their bodies are JSON objects.
  s.Post("/api/v1/drain/actions", [this](const httplib::Request& req, httplib::Response& res) {
    nlohmann::json body;
    if (!writable(req, res, body)) return;
    if (!writes_.outbox) {
      return sendError(res, 409, "drain actions are off: start the analyzer with --drain-key");
    }
    DrainRequest r;
    std::string op;
    if (!textField(body, "port", r.port, true)) {
      return sendError(res, 400, "port: a string \"node:port\"");
    }
    if (!textField(body, "op", op, true) || (op != "drain" && op != "restore")) {
      return sendError(res, 400, "op: \"drain\" or \"restore\"");
    }
    r.op = op == "drain" ? v1::DrainAction::DRAIN : v1::DrainAction::RESTORE;
    if (!textField(body, "reason", r.reason, false)) return sendError(res, 400, "reason: a string");
    if (auto it = body.find("incident"); it != body.end()) {
      if (!it->is_number_unsigned()) return sendError(res, 400, "incident: a positive integer");
      r.incident = it->get<uint64_t>();
    }
    r.by = operatorName(body);
    std::string error;
    auto nonce = writes_.outbox->issue(r, &error);
    if (!nonce) return sendError(res, 422, printable(error));
    sendJson(res, {{"nonce", std::to_string(*nonce)}, {"state", "waiting"}}, 202);
  });
  s.Post(R"(/api/v1/incidents/([^/]+)/approve)",
         [this](const httplib::Request& req, httplib::Response& res) {
           nlohmann::json body;
           if (!writable(req, res, body)) return;
           std::string error;
           auto nonce = writes_.coordinator->approve(req.matches[1], analyzer_.snapshot()->report,
                                                     operatorName(body), &error);
           if (!nonce) return sendError(res, 422, printable(error));
           sendJson(res, {{"nonce", std::to_string(*nonce)}, {"state", "draining"}}, 202);
         });
  s.Post("/api/v1/drain/link", [this](const httplib::Request& req, httplib::Response& res) {
    nlohmann::json body;
    if (!writable(req, res, body)) return;
    std::string link, incident, error;
    if (!textField(body, "link", link, true)) return sendError(res, 400, "link: \"X:p->Y:q\"");
    if (!textField(body, "incident", incident, true)) {
      return sendError(res, 400, "incident: the id of the open incident it is drained for");
    }
    auto nonce = writes_.coordinator->drainLink(link, incident, analyzer_.snapshot()->report,
                                                operatorName(body), &error);
    if (!nonce) return sendError(res, 422, printable(error));
    sendJson(res, {{"nonce", std::to_string(*nonce)}, {"state", "draining"}}, 202);
  });
  s.Post("/api/v1/drain/undo", [this](const httplib::Request& req, httplib::Response& res) {
    nlohmann::json body;
    if (!writable(req, res, body)) return;
    std::string link, error;
    if (!textField(body, "link", link, true)) return sendError(res, 400, "link: \"X:p->Y:q\"");
    bool now = false;
    if (auto it = body.find("now"); it != body.end()) {
      if (!it->is_boolean()) return sendError(res, 400, "now: true or false");
      now = it->get<bool>();
    }
    auto nonce = writes_.coordinator->undo(link, operatorName(body), &error, now);
    if (!nonce) return sendError(res, 422, printable(error));
    if (*nonce == 0) return sendJson(res, {{"state", "awaiting_clean_counters"}}, 202);
    sendJson(res, {{"nonce", std::to_string(*nonce)}, {"state", "restoring"}}, 202);
  });
  s.Post("/api/v1/drain/freeze", [this](const httplib::Request& req, httplib::Response& res) {
    nlohmann::json body;
    if (!writable(req, res, body)) return;
    auto it = body.find("frozen");
    if (it == body.end() || !it->is_boolean()) return sendError(res, 400, "frozen: true or false");
    writes_.coordinator->setFrozen(it->get<bool>(), operatorName(body));
    sendJson(res, {{"frozen", it->get<bool>()}});
  });
  s.Get("/api/v1/drain", [this](const httplib::Request&, httplib::Response& res) {
    nlohmann::json out = writes_.coordinator ? writes_.coordinator->state() : nlohmann::json{};
    out["actions"] = writes_.outbox ? writes_.outbox->list()["actions"] : nlohmann::json::array();
    sendJson(res, out);
  });
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 && res.body.empty())
      sendError(res, 404, "no such endpoint: " + printable(req.path));
  });
  s.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        sendError(res, 500, what);
      });
}

std::string HttpApi::start(const std::string& address) {
  std::string host;
  int port = 0;
  if (!splitHostPort(address, host, port)) {
    return "web listen address \"" + address + "\" is not HOST:PORT";
  }
  if (port == 0) {
    port_ = server_->bind_to_any_port(host);
    if (port_ <= 0) return "cannot listen for HTTP on " + address;
  } else {
    if (!server_->bind_to_port(host, port)) {
      return "cannot listen for HTTP on " + address + " (address in use or not local?)";
    }
    port_ = port;
  }
  static_cast<BoundedServer&>(*server_).widenBacklog();
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() before the accept loop runs would be lost (httplib only stops a
  // running server) and join() would then wait forever.
  for (int i = 0; i < 5000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {};
}

void HttpApi::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace netdiag::server
