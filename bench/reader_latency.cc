// Reader latency of a running analyzer's HTTP API (issue #12, "Readers"):
// GETs at a fixed rate over loopback, open loop (each request has a due time
// and its latency counts from then, so a slow answer delays the requests
// behind it and shows in them too), spread over a few keep-alive clients.
// Each request is tagged by whether it overlapped an engine pass: the passes
// are read from the analyzer's own /metrics answers
// (netdiag_engine_last_pass_start_timestamp_seconds and
// ..._duration_seconds), so the same run gives p99 with and without passes.
//
// usage: reader_latency http://HOST:PORT [--rate 100] [--duration 30]
//                       [--clients 8] [--paths /api/v1/locate,/metrics]
// Prints one key=value line per path; exit 1 when any request failed.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>

namespace {

using Clock = std::chrono::system_clock;  // pass times in /metrics are Unix time

double unixNow() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

struct Sample {
  size_t path = 0;
  double due = 0, start = 0, end = 0;
  bool ok = false;
};

// The value of an unlabeled series in a Prometheus text body, if present.
bool metricValue(const std::string& body, const std::string& name, double* out) {
  size_t at = 0;
  while ((at = body.find(name, at)) != std::string::npos) {
    const bool line_start = at == 0 || body[at - 1] == '\n';
    const size_t after = at + name.size();
    if (line_start && after < body.size() && body[after] == ' ') {
      *out = std::strtod(body.c_str() + after + 1, nullptr);
      return true;
    }
    at = after;
  }
  return false;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * v.size())) - 1);
  return v[i];
}

int usage() {
  std::fprintf(stderr,
               "usage: reader_latency http://HOST:PORT [--rate 100] [--duration 30] "
               "[--clients 8] [--paths /api/v1/locate,/metrics]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string base = argv[1];
  double rate = 100, duration = 30;
  int clients = 8;
  std::vector<std::string> paths = {"/api/v1/locate", "/metrics"};
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    char* end = nullptr;
    if (flag == "--rate") {
      rate = std::strtod(value.c_str(), &end);
    } else if (flag == "--duration") {
      duration = std::strtod(value.c_str(), &end);
    } else if (flag == "--clients") {
      clients = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (flag == "--paths") {
      paths.clear();
      for (size_t from = 0; from <= value.size();) {
        const size_t comma = std::min(value.find(',', from), value.size());
        if (comma > from) paths.push_back(value.substr(from, comma - from));
        from = comma + 1;
      }
      end = const_cast<char*>(value.c_str() + value.size());
    } else {
      return usage();
    }
    if (!end || *end != '\0') {
      std::fprintf(stderr, "reader_latency: %s: bad value \"%s\"\n", flag.c_str(), value.c_str());
      return 2;
    }
  }
  if ((argc - 2) % 2 != 0 || !(rate > 0) || !(duration > 0) || clients < 1 || paths.empty())
    return usage();

  const size_t total = static_cast<size_t>(std::llround(rate * duration));
  std::vector<Sample> samples(total);
  std::set<std::pair<double, double>> passes;  // (start, duration) from /metrics
  std::mutex passes_mu;
  std::atomic<size_t> next{0};
  const double t0 = unixNow() + 0.1;
  std::vector<std::thread> workers;
  for (int w = 0; w < clients; ++w) {
    workers.emplace_back([&] {
      httplib::Client client(base);
      client.set_keep_alive(true);
      client.set_read_timeout(10, 0);
      for (size_t i; (i = next.fetch_add(1)) < total;) {
        Sample& s = samples[i];
        s.path = i % paths.size();
        s.due = t0 + static_cast<double>(i) / rate;
        std::this_thread::sleep_until(Clock::time_point(
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.due))));
        s.start = unixNow();
        auto res = client.Get(paths[s.path]);
        s.end = unixNow();
        s.ok = res && res->status == 200;
        double started = 0, took = 0;
        if (s.ok && paths[s.path] == "/metrics" &&
            metricValue(res->body, "netdiag_engine_last_pass_start_timestamp_seconds", &started) &&
            metricValue(res->body, "netdiag_engine_last_pass_duration_seconds", &took) &&
            started > 0) {
          std::lock_guard lk(passes_mu);
          passes.emplace(started, took);
        }
      }
    });
  }
  for (auto& t : workers) t.join();

  // A pass's gauges appear only once it ended, so the passes seen are the
  // finished ones; requests overlapping one count as "during a pass".
  auto during = [&](const Sample& s) {
    for (auto [start, took] : passes) {
      if (s.start <= start + took && start <= s.end) return true;
    }
    return false;
  };
  double max_pass = 0;
  for (auto [start, took] : passes) max_pass = std::max(max_pass, took);
  std::printf(
      "reader_latency requests=%zu rate_per_s=%g clients=%d passes_seen=%zu max_pass_ms=%.1f\n",
      total, rate, clients, passes.size(), max_pass * 1000);
  bool failed = false;
  for (size_t p = 0; p < paths.size(); ++p) {
    std::vector<double> all, in_pass, outside;
    size_t errors = 0;
    for (const Sample& s : samples) {
      if (s.path != p) continue;
      if (!s.ok) ++errors;
      const double ms = (s.end - s.due) * 1000;
      all.push_back(ms);
      (during(s) ? in_pass : outside).push_back(ms);
    }
    failed |= errors > 0;
    std::printf(
        "reader_latency path=%s n=%zu errors=%zu p50_ms=%.2f p99_ms=%.2f max_ms=%.2f "
        "during_pass_n=%zu during_pass_p99_ms=%.2f outside_pass_n=%zu outside_pass_p99_ms=%.2f\n",
        paths[p].c_str(), all.size(), errors, quantile(all, 0.5), quantile(all, 0.99),
        all.empty() ? NAN : *std::max_element(all.begin(), all.end()), in_pass.size(),
        quantile(in_pass, 0.99), outside.size(), quantile(outside, 0.99));
  }
  return failed ? 1 : 0;
}
