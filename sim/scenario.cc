#include "sim/scenario.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "topology/yaml_doc.h"

namespace netdiag::sim {
namespace {

using topology::YamlDoc;
using Index = YamlDoc::Index;
using Kind = YamlDoc::Kind;

const char* const kFaultKinds[] = {"link_loss", "link_corruption", "link_down",
                                   "link_flap", "link_blackhole",  "link_latency"};
const char* const kTrapKinds[] = {"congestion", "dead_responder", "host_reboot", "miscabling",
                                  "busy_host"};

std::optional<double> toDouble(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> toInt(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Sets generator parameters from key/value pairs, shared by the scenario's
// `topology: {generate: ...}` map and the CLI's --fabric spec.
class FabricParams {
 public:
  explicit FabricParams(FabricSpec& spec) : spec_(spec) {}

  // Returns an error message, empty when the key was applied.
  std::string set(std::string_view key, std::string_view value) {
    auto* target = find(key);
    if (!target) {
      return "unknown parameter '" + std::string(key) + "' for fabric " + spec_.generator +
             " (known: " + known() + ")";
    }
    auto v = toInt(value);
    if (!v || *v < 0 || *v > 1'000'000) {
      return "'" + std::string(key) + "' must be a whole number, got '" + std::string(value) + "'";
    }
    *target = static_cast<int>(*v);
    return "";
  }

 private:
  std::map<std::string, int*, std::less<>> table() {
    auto& ls = spec_.leaf_spine;
    auto& rail = spec_.rail;
    if (spec_.generator == "leaf-spine") {
      return {{"spines", &ls.spines},
              {"leaves", &ls.leaves},
              {"hosts_per_leaf", &ls.hosts_per_leaf},
              {"nics_per_host", &ls.nics_per_host},
              {"parallel", &ls.parallel},
              {"parallel_max", &ls.parallel_max}};
    }
    if (spec_.generator == "fat-tree") return {{"k", &spec_.fat_tree.k}};
    return {{"sus", &rail.sus},       {"hosts_per_su", &rail.hosts_per_su}, {"rails", &rail.rails},
            {"spines", &rail.spines}, {"leaf_uplinks", &rail.leaf_uplinks}, {"cores", &rail.cores}};
  }
  int* find(std::string_view key) {
    auto t = table();
    auto it = t.find(key);
    return it == t.end() ? nullptr : it->second;
  }
  std::string known() {
    std::string s;
    for (const auto& [k, v] : table()) s += (s.empty() ? "" : ", ") + k;
    return s;
  }
  FabricSpec& spec_;
};

bool isGenerator(std::string_view g) { return g == "leaf-spine" || g == "fat-tree" || g == "rail"; }

class ScenarioParser {
 public:
  ScenarioParser(const YamlDoc& doc, ScenarioLoad& out) : doc_(doc), out_(out), s_(out.scenario) {}

  void run() {
    if (doc_.empty() || doc_.kind(doc_.root()) != Kind::kMap) {
      error(doc_.empty() ? 1 : doc_.line(doc_.root()), "a scenario must be a mapping");
      return;
    }
    Index root = doc_.root();
    if (auto v = text(root, "name")) s_.name = *v;
    if (Index t = doc_.find(root, "topology"); present(t)) parseTopology(t);
    // Times are bounded so that the simulator's step arithmetic stays exact
    // and its counts fit their integers: 1e11 s is over three thousand years
    // of Unix time.
    number(root, "start", s_.start, -kMaxTime, kMaxTime);
    number(root, "duration_s", s_.duration_s, 1, kMaxDuration);
    number(root, "window_s", s_.window_s, 0.1, 3600);
    if (auto h = text(root, "ecmp_hash")) {
      if (*h == "mix" || *h == "crc") {
        s_.ecmp_hash = *h;
      } else {
        error(doc_.line(doc_.find(root, "ecmp_hash")),
              "'ecmp_hash' must be mix or crc, got '" + *h + "'");
      }
    }
    if (Index b = doc_.find(root, "budget"); present(b)) parseBudget(b);
    if (Index n = doc_.find(root, "noise"); present(n)) parseNoise(n);
    if (Index f = doc_.find(root, "faults"); present(f)) {
      if (doc_.kind(f) != Kind::kSequence) {
        error(doc_.line(f), "'faults' must be a sequence");
      } else {
        for (Index item : doc_.children(f)) parseFault(item);
      }
    }
  }

 private:
  bool present(Index i) const { return i != YamlDoc::kMissing && doc_.kind(i) != Kind::kNull; }

  void error(uint32_t line, std::string message) {
    out_.errors.push_back({s_.file, line, std::move(message)});
  }

  std::optional<std::string> text(Index map, std::string_view key) {
    Index v = doc_.find(map, key);
    if (!present(v)) return std::nullopt;
    if (doc_.kind(v) != Kind::kScalar) {
      error(doc_.line(v), "'" + std::string(key) + "' must be a single value");
      return std::nullopt;
    }
    return std::string(doc_.text(v));
  }

  // Reads an optional number into `out`, checking [lo, hi].
  void number(Index map, std::string_view key, double& out, double lo = -1e18, double hi = 1e18) {
    Index v = doc_.find(map, key);
    if (!present(v)) return;
    auto d = doc_.kind(v) == Kind::kScalar ? toDouble(doc_.text(v)) : std::nullopt;
    if (!d) {
      error(doc_.line(v), "'" + std::string(key) + "' must be a number");
    } else if (*d < lo || *d > hi) {
      std::ostringstream m;
      m << "'" << key << "' must be in [" << lo << ", " << hi << "], got " << *d;
      error(doc_.line(v), m.str());
    } else {
      out = *d;
    }
  }

  void integer(Index map, std::string_view key, int& out, int lo, int hi) {
    double d = out;
    number(map, key, d, lo, hi);
    if (d != std::floor(d)) {
      error(doc_.line(doc_.find(map, key)), "'" + std::string(key) + "' must be a whole number");
      return;
    }
    out = static_cast<int>(d);
  }

  void flag(Index map, std::string_view key, bool& out) {
    auto v = text(map, key);
    if (!v) return;
    if (*v == "true" || *v == "yes") {
      out = true;
    } else if (*v == "false" || *v == "no") {
      out = false;
    } else {
      error(doc_.line(doc_.find(map, key)), "'" + std::string(key) + "' must be true or false");
    }
  }

  void parseTopology(Index t) {
    s_.fabric_line = doc_.line(t);
    if (doc_.kind(t) != Kind::kMap) {
      error(doc_.line(t), "'topology' must be a mapping with 'file' or 'generate'");
      return;
    }
    auto file = text(t, "file");
    auto gen = text(t, "generate");
    if (file && gen) error(doc_.line(t), "'topology' takes either 'file' or 'generate', not both");
    if (file) {
      std::filesystem::path p(*file);
      if (p.is_relative() && !s_.file.empty()) {
        p = std::filesystem::path(s_.file).parent_path() / p;
      }
      s_.fabric.file = p.string();
      return;
    }
    if (!gen) {
      error(doc_.line(t), "'topology' needs 'file' or 'generate' (leaf-spine, fat-tree, rail)");
      return;
    }
    if (!isGenerator(*gen)) {
      error(doc_.line(doc_.find(t, "generate")),
            "unknown generator '" + *gen + "' (leaf-spine, fat-tree, rail)");
      return;
    }
    s_.fabric.generator = *gen;
    FabricParams params(s_.fabric);
    auto kids = doc_.children(t);
    for (size_t k = 0; k + 1 < kids.size(); k += 2) {
      std::string_view key = doc_.text(kids[k]);
      if (key == "generate" || key == "file") continue;
      if (doc_.kind(kids[k + 1]) != Kind::kScalar) {
        error(doc_.line(kids[k + 1]), "'" + std::string(key) + "' must be a number");
        continue;
      }
      if (auto e = params.set(key, doc_.text(kids[k + 1])); !e.empty()) {
        error(doc_.line(kids[k]), e);
      }
    }
  }

  void parseBudget(Index b) {
    s_.budget_line = doc_.line(b);
    if (doc_.kind(b) != Kind::kMap) {
      error(doc_.line(b), "'budget' must be a mapping");
      return;
    }
    number(b, "probes_per_second", s_.budget.probes_per_second);
    integer(b, "flows_per_peer", s_.budget.flows_per_peer, -1000000, 1000000);
    integer(b, "peers", s_.budget.peers, -1000000, 1000000);
    number(b, "redraw_s", s_.redraw_s, 0, 1e9);
  }

  void parseNoise(Index n) {
    if (doc_.kind(n) != Kind::kMap) {
      error(doc_.line(n), "'noise' must be a mapping");
      return;
    }
    Noise& z = s_.noise;
    number(n, "background_loss", z.background_loss, 0, 1);
    number(n, "missing_records", z.missing_records, 0, 1);
    number(n, "late_records", z.late_records, 0, 1);
    number(n, "late_max_s", z.late_max_s, 0, 30);
    number(n, "path_unknown", z.path_unknown, 0, 1);
    number(n, "path_partial", z.path_partial, 0, 1);
    number(n, "lossy_path_failure", z.lossy_path_failure, 0, 1);
    number(n, "reply_path_known", z.reply_path_known, 0, 1);
    number(n, "one_way", z.one_way, 0, 1);
    if (auto k = text(n, "path_knowledge")) {
      if (*k == "record" || *k == "flow") {
        z.path_knowledge = *k;
      } else {
        error(doc_.line(doc_.find(n, "path_knowledge")),
              "'path_knowledge' must be record or flow, got '" + *k + "'");
      }
    }
    number(n, "counter_interval_s", z.counter_interval_s, 0.1, 86400);
    flag(n, "counter_reset", z.counter_reset);
    number(n, "hop_latency_us", z.hop_latency_us, 0, 1e6);
    number(n, "host_latency_us", z.host_latency_us, 0, 1e6);
    number(n, "rtt_jitter", z.rtt_jitter, 0, 10);
    number(n, "packets_per_second", z.packets_per_second, 0, 1e10);
  }

  void parseLinkSelector(Index v, LinkSelector& sel) {
    if (doc_.kind(v) == Kind::kScalar) {
      std::string_view t = doc_.text(v);
      if (t == "random") return;
      if (t.find("->") == std::string_view::npos) {
        error(doc_.line(v), "'link' must be X:p->Y:q, random, or {from: ROLE, to: ROLE}; got '" +
                                std::string(t) + "'");
        return;
      }
      sel.exact = std::string(t);
      return;
    }
    if (doc_.kind(v) != Kind::kMap) {
      error(doc_.line(v), "'link' must be X:p->Y:q, random, or {from: ROLE, to: ROLE}");
      return;
    }
    if (auto f = text(v, "from")) sel.from = *f;
    if (auto t = text(v, "to")) sel.to = *t;
  }

  void parseFault(Index item) {
    const uint32_t line = doc_.line(item);
    if (doc_.kind(item) != Kind::kMap) {
      error(line, "a fault must be a mapping with 'kind'");
      return;
    }
    FaultSpec f;
    f.line = line;
    auto kind = text(item, "kind");
    if (!kind) {
      error(line, "fault has no 'kind'");
      return;
    }
    f.kind = *kind;
    if (!isFaultKind(f.kind) && !isTrapKind(f.kind)) {
      error(doc_.line(doc_.find(item, "kind")),
            "unknown fault kind '" + f.kind +
                "' (link_loss, link_corruption, link_down, link_flap, link_blackhole, "
                "link_latency, congestion, dead_responder, host_reboot, miscabling, busy_host)");
      return;
    }
    number(item, "onset", f.onset, -kMaxTime, kMaxTime);
    number(item, "end", f.end, -kMaxTime, kMaxTime);
    if (f.end <= f.onset) {
      error(line,
            "fault '" + f.kind + "': onset " + fmt(f.onset) + " is not before end " + fmt(f.end));
    }
    integer(item, "count", f.count, 1, 10000);
    const bool on_link = isFaultKind(f.kind) || f.kind == "congestion";
    if (on_link) {
      Index l = doc_.find(item, "link");
      if (present(l)) parseLinkSelector(l, f.link);
    }
    if (f.kind == "dead_responder" || f.kind == "host_reboot" || f.kind == "busy_host") {
      if (auto h = text(item, "host"); h && *h != "random") f.host.exact = *h;
    }
    if (f.kind == "link_loss" || f.kind == "link_corruption" || f.kind == "congestion") {
      f.loss = 0.01;
      number(item, "loss", f.loss, 0, 1);
      if (f.loss == 0) error(line, "fault '" + f.kind + "' needs a 'loss' above 0");
    }
    if (f.kind == "link_blackhole") {
      f.share = 0.25;
      number(item, "share", f.share, 0, 1);
      if (f.share == 0) error(line, "link_blackhole needs a 'share' of flows above 0");
    }
    if (f.kind == "link_latency") {
      f.latency_us = 200;
      number(item, "latency_us", f.latency_us, 0, 1e7);
    }
    if (f.kind == "link_flap") {
      number(item, "period_s", f.period_s, 0.1, 86400);
      number(item, "down_s", f.down_s, 0.01, 86400);
      if (f.down_s >= f.period_s) error(line, "link_flap: 'down_s' must be below 'period_s'");
    }
    if (f.kind == "congestion") number(item, "tx_drops_per_s", f.tx_drops_per_s, 0, 1e12);
    if (f.kind == "busy_host") {
      f.loss = 0.01;
      f.delay = 0.01;
      f.latency_us = 300;
      number(item, "drop", f.loss, 0, 1);
      number(item, "delay", f.delay, 0, 1);
      number(item, "latency_us", f.latency_us, 0, 1e7);
      if (f.loss + f.delay > 1) error(line, "busy_host: 'drop' + 'delay' must be at most 1");
    }
    if (f.kind == "miscabling") {
      Index p = doc_.find(item, "ports");
      if (present(p)) {
        if (doc_.kind(p) != Kind::kSequence || doc_.children(p).size() != 2) {
          error(doc_.line(p), "miscabling 'ports' must be two ports of one node, [X:p, X:q]");
        } else {
          for (Index port : doc_.children(p)) f.ports.emplace_back(doc_.text(port));
        }
      }
      if (auto r = text(item, "on")) f.on_role = *r;
    }
    s_.faults.push_back(std::move(f));
  }

  static std::string fmt(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }

  const YamlDoc& doc_;
  ScenarioLoad& out_;
  Scenario& s_;
};

}  // namespace

bool isFaultKind(const std::string& kind) {
  for (const char* k : kFaultKinds) {
    if (kind == k) return true;
  }
  return false;
}

bool isTrapKind(const std::string& kind) {
  for (const char* k : kTrapKinds) {
    if (kind == k) return true;
  }
  return false;
}

std::vector<std::string> parseFabricSpec(const std::string& text, FabricSpec& spec) {
  std::vector<std::string> problems;
  auto colon = text.find(':');
  spec.generator = text.substr(0, colon);
  if (!isGenerator(spec.generator)) {
    problems.push_back("unknown fabric '" + spec.generator + "' (leaf-spine, fat-tree, rail)");
    return problems;
  }
  if (colon == std::string::npos) return problems;
  FabricParams params(spec);
  std::stringstream rest(text.substr(colon + 1));
  std::string item;
  while (std::getline(rest, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) {
      problems.push_back("fabric parameter '" + item + "' must be key=value");
      continue;
    }
    std::string key = item.substr(0, eq);
    for (char& c : key) c = c == '-' ? '_' : c;
    if (auto e = params.set(key, item.substr(eq + 1)); !e.empty()) problems.push_back(e);
  }
  return problems;
}

std::optional<topology::Topology> buildFabric(const FabricSpec& spec,
                                              std::vector<Diagnostic>& errors) {
  using namespace topology;
  if (!spec.file.empty()) {
    LoadResult r = loadTopologyFile(spec.file);
    if (!r.ok()) {
      errors.insert(errors.end(), r.errors.begin(), r.errors.end());
      return std::nullopt;
    }
    return std::move(r.topology);
  }
  std::vector<std::string> problems;
  std::optional<Topology> t;
  if (spec.generator == "leaf-spine") {
    problems = validate(spec.leaf_spine);
    if (problems.empty()) t = generateLeafSpine(spec.leaf_spine);
  } else if (spec.generator == "fat-tree") {
    problems = validate(spec.fat_tree);
    if (problems.empty()) t = generateFatTree(spec.fat_tree);
  } else if (spec.generator == "rail") {
    problems = validate(spec.rail);
    if (problems.empty()) t = generateRail(spec.rail);
  } else {
    problems.push_back("no fabric: give --topology FILE, --fabric SPEC or a scenario 'topology'");
  }
  for (auto& p : problems) errors.push_back({"fabric " + spec.generator, 0, p});
  if (t) t->name = spec.generator;
  return t;
}

ScenarioLoad loadScenario(std::istream& in, const std::string& source_name) {
  ScenarioLoad out;
  out.scenario.file = source_name;
  YamlDoc doc;
  if (!doc.parse(in)) {
    out.errors.push_back({source_name, doc.errorLine(), "syntax error: " + doc.error()});
    return out;
  }
  ScenarioParser(doc, out).run();
  return out;
}

ScenarioLoad loadScenarioFile(const std::string& path) {
  std::error_code ec;
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path, ec)) {
    ScenarioLoad out;
    out.errors.push_back({path, 0, "cannot open the scenario file"});
    return out;
  }
  return loadScenario(in, path);
}

}  // namespace netdiag::sim
