#include "server/http_api.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string_view>

#include <httplib.h>
#include <prometheus/text_serializer.h>

namespace netdiag::server {
namespace {

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

constexpr const char* kLanding = R"(<!doctype html>
<html><head><title>netdiag analyzer</title></head>
<body><h1>netdiag analyzer</h1>
<p>Fault localization for the fabric. Endpoints:</p>
<ul>
<li><a href="/api/v1/locate">/api/v1/locate</a>: incidents open now</li>
<li><a href="/api/v1/incidents">/api/v1/incidents</a>: every incident (<code>?since=T&amp;kind=K&amp;state=open|all</code>)</li>
<li><code>/api/v1/incidents/&lt;id&gt;</code>, <code>/api/v1/links/&lt;X:p-&gt;Y:q&gt;</code></li>
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

HttpApi::HttpApi(LiveAnalyzer& analyzer, std::shared_ptr<prometheus::Registry> registry,
                 std::function<bool()> ready)
    : analyzer_(analyzer),
      registry_(std::move(registry)),
      ready_(std::move(ready)),
      server_(std::make_unique<httplib::Server>()) {
  routes();
}

HttpApi::~HttpApi() { stop(); }

void HttpApi::routes() {
  httplib::Server& s = *server_;
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
    prometheus::TextSerializer serializer;
    res.set_content(registry_ ? serializer.Serialize(registry_->Collect()) : std::string(),
                    "text/plain; version=0.0.4; charset=utf-8");
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
