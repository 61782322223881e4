#pragma once

// The analyzer's HTTP side (cpp-httplib): the JSON API of
// docs/architecture.md ("The live pipeline"), /metrics in the Prometheus
// text format, /healthz, /readyz and a small landing page at /.
//
// Thread-safety: the server answers on its own threads; everything it reads
// is thread-safe (LiveAnalyzer, the registry's Collect()).

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <prometheus/registry.h>

#include "server/live_analyzer.h"

namespace httplib {
class Server;
}

namespace netdiag::server {

class HttpApi {
 public:
  // `ready` says whether /readyz answers 200 (topology loaded, gRPC up).
  HttpApi(LiveAnalyzer& analyzer, std::shared_ptr<prometheus::Registry> registry,
          std::function<bool()> ready);
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

  LiveAnalyzer& analyzer_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::function<bool()> ready_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// "HOST:PORT" -> host and port; false for anything else (an empty host,
// a port outside 0..65535, a missing colon).
bool splitHostPort(const std::string& address, std::string& host, int& port);

}  // namespace netdiag::server
