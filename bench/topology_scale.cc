// Whole-process scale run for the topology engine: load a topology file,
// validate it and answer ECMP path queries, reporting wall time and the
// process's peak RSS. One process per measurement, so peak RSS is honest.
//
//   topology_scale netdiag FILE      netdiag's loader (yaml-cpp events)
//   topology_scale yamlcpp-tree FILE yaml-cpp's YAML::LoadFile, tree only
//
// Prints one JSON object per run on stdout.

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <yaml-cpp/yaml.h>

#include "topology/ecmp.h"
#include "topology/loader.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace netdiag::topology;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double peakRssMiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

int runNetdiag(const char* file) {
  auto t0 = Clock::now();
  LoadResult r = loadTopologyFile(file);
  double load_s = secondsSince(t0);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.errors.front().str().c_str());
    return 2;
  }
  const Topology& t = r.topology;
  std::vector<PortId> host_ports;
  for (PortId p = 0; p < t.portCount(); ++p) {
    if (t.node(t.port(p).node).isHost()) host_ports.push_back(p);
  }
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<size_t> pick(0, host_ports.size() - 1);
  Router router(t);

  // Counting queries between random host ports (distance fields cached per
  // destination switch, as the analyzer will use them).
  constexpr int kCountQueries = 20000;
  uint64_t total_paths = 0;
  auto t1 = Clock::now();
  for (int i = 0; i < kCountQueries; ++i) {
    PortId a = host_ports[pick(rng)], b = host_ports[pick(rng)];
    if (a != b) total_paths += router.paths(a, b).count();
  }
  double count_s = secondsSince(t1);

  // Full enumeration of every path of random pairs.
  constexpr int kEnumQueries = 200;
  uint64_t enumerated = 0;
  std::vector<DirLinkId> path;
  auto t2 = Clock::now();
  for (int i = 0; i < kEnumQueries; ++i) {
    PortId a = host_ports[pick(rng)], b = host_ports[pick(rng)];
    if (a == b) continue;
    PathSet set = router.paths(a, b);
    for (auto c = set.cursor(); c.next(path);) ++enumerated;
  }
  double enum_s = secondsSince(t2);

  std::printf(
      "{\"parser\": \"netdiag\", \"file\": \"%s\", \"nodes\": %zu, \"host_ports\": %zu, "
      "\"links\": %zu, \"load_validate_s\": %.3f, \"count_query_us\": %.2f, "
      "\"mean_paths\": %.1f, \"enumerate_query_us\": %.2f, \"paths_enumerated\": %llu, "
      "\"peak_rss_mib\": %.1f}\n",
      file, t.nodeCount(), host_ports.size(), t.linkCount(), load_s, 1e6 * count_s / kCountQueries,
      static_cast<double>(total_paths) / kCountQueries, 1e6 * enum_s / kEnumQueries,
      static_cast<unsigned long long>(enumerated), peakRssMiB());
  return 0;
}

int runYamlCppTree(const char* file) {
  auto t0 = Clock::now();
  YAML::Node doc = YAML::LoadFile(file);
  size_t links = doc["links"].size();
  double load_s = secondsSince(t0);
  std::printf(
      "{\"parser\": \"yamlcpp-tree\", \"file\": \"%s\", \"links\": %zu, \"parse_only_s\": %.3f, "
      "\"peak_rss_mib\": %.1f}\n",
      file, links, load_s, peakRssMiB());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s netdiag|yamlcpp-tree FILE\n", argv[0]);
    return 2;
  }
  if (std::strcmp(argv[1], "netdiag") == 0) return runNetdiag(argv[2]);
  if (std::strcmp(argv[1], "yamlcpp-tree") == 0) return runYamlCppTree(argv[2]);
  std::fprintf(stderr, "unknown mode %s\n", argv[1]);
  return 2;
}
