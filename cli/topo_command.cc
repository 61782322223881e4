#include <climits>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "topology/ecmp.h"
#include "topology/generators.h"
#include "topology/loader.h"
#include "topology/summary.h"
#include "topology/writer.h"

namespace netdiag::cli {
namespace {

using nlohmann::json;
using namespace netdiag::topology;

// Diagnostics beyond this many are summarized: a broken generated file can
// have 100k of the same error, and the first ones tell the story.
constexpr size_t kMaxDiagnosticsShown = 200;

void printDiagnostics(const std::vector<Diagnostic>& diags, std::string_view level) {
  for (size_t i = 0; i < diags.size() && i < kMaxDiagnosticsShown; ++i) {
    std::cerr << diags[i].str(level) << '\n';
  }
  if (diags.size() > kMaxDiagnosticsShown) {
    std::cerr << "... and " << withCommas(diags.size() - kMaxDiagnosticsShown) << " more " << level
              << "s\n";
  }
}

json diagnosticsJson(const std::vector<Diagnostic>& diags) {
  json out = json::array();
  for (const Diagnostic& d : diags) {
    out.push_back({{"file", d.file}, {"line", d.line}, {"message", d.message}});
  }
  return out;
}

// Loads a file for commands that need a valid topology; prints why not.
std::unique_ptr<LoadResult> loadOrReport(const std::string& path) {
  auto result = std::make_unique<LoadResult>(loadTopologyFile(path));
  if (!result->ok()) {
    printDiagnostics(result->errors, "error");
    std::cerr << path << ": " << withCommas(result->errors.size())
              << " error(s); fix them and run again\n";
    return nullptr;
  }
  return result;
}

// ---- validate ------------------------------------------------------------

struct ValidateOptions {
  std::string file;
  bool json = false;
};

int runValidate(const ValidateOptions& o) {
  LoadResult r = loadTopologyFile(o.file);
  const Topology& t = r.topology;
  Summary s = r.ok() ? summarize(t) : Summary{};
  if (o.json) {
    json out = {{"file", o.file},
                {"valid", r.ok()},
                {"errors", diagnosticsJson(r.errors)},
                {"warnings", diagnosticsJson(r.warnings)}};
    if (r.ok()) {
      out["counts"] = {{"nodes", s.nodes},
                       {"hosts", s.hosts},
                       {"host_ports", s.host_ports},
                       {"ports", s.ports},
                       {"links", s.links}};
    }
    std::cout << out.dump(2) << '\n';
  } else {
    printDiagnostics(r.errors, "error");
    printDiagnostics(r.warnings, "warning");
    if (r.ok()) {
      std::cout << "ok: " << o.file << ": " << withCommas(s.nodes) << " nodes ("
                << withCommas(s.hosts) << " hosts, " << withCommas(s.host_ports) << " host ports), "
                << withCommas(s.ports) << " ports, " << withCommas(s.links) << " links";
      if (!r.warnings.empty()) std::cout << ", " << withCommas(r.warnings.size()) << " warning(s)";
      std::cout << '\n';
    } else {
      std::cerr << o.file << ": " << withCommas(r.errors.size()) << " error(s), not valid\n";
    }
  }
  if (!r.ok()) return kExitError;
  return r.warnings.empty() ? kExitOk : kExitFindings;
}

// ---- generate ------------------------------------------------------------

struct GenerateOptions {
  std::string output = "-";
  std::string format;  // yaml | json; default from the output's extension
  std::string name;
  bool no_addresses = false;
  LeafSpineParams leaf_spine;
  FatTreeParams fat_tree;
  RailParams rail;
};

int writeGenerated(Topology topo, const GenerateOptions& o, const std::string& default_name) {
  topo.name = o.name.empty() ? default_name : o.name;
  std::string format = o.format;
  if (format.empty()) {
    format = o.output.size() > 5 && o.output.ends_with(".json") ? "json" : "yaml";
  }
  std::string err = writeFileAtomically(o.output, [&](std::ostream& out) {
    if (format == "json") {
      writeJson(topo, out);
    } else {
      writeYaml(topo, out);
    }
  });
  if (!err.empty()) {
    std::cerr << "netdiag topo generate: " << err << '\n';
    return kExitError;
  }
  Summary s = summarize(topo);
  std::cerr << "generated " << topo.name << ": " << withCommas(s.nodes) << " nodes ("
            << withCommas(s.hosts) << " hosts, " << withCommas(s.host_ports) << " host ports), "
            << withCommas(s.links) << " links" << (o.output == "-" ? "" : " -> " + o.output)
            << '\n';
  return kExitOk;
}

template <typename Params, typename Generate>
int runGenerate(const Params& p, const GenerateOptions& o, Generate generate,
                const std::string& default_name) {
  auto problems = validate(p);
  if (!problems.empty()) {
    for (const auto& problem : problems) std::cerr << "netdiag topo generate: " << problem << '\n';
    return kExitError;
  }
  return writeGenerated(generate(p), o, default_name);
}

void addGenerate(CLI::App& topo, int& exit_code) {
  auto o = std::make_shared<GenerateOptions>();
  auto* gen = topo.add_subcommand("generate", "Generate a Clos fabric as a topology file");
  gen->require_subcommand(1);
  auto common = [o](CLI::App* sub) {
    sub->add_option("-o,--output", o->output, "Output file ('-' for stdout)")
        ->capture_default_str();
    sub->add_option("--format", o->format, "yaml or json (default: from the file extension)")
        ->check(CLI::IsMember({"yaml", "json"}));
    sub->add_option("--name", o->name, "Fabric name written into the file");
    sub->add_flag("--no-addresses", o->no_addresses, "Omit host and interface addresses");
  };

  auto* ls = gen->add_subcommand("leaf-spine", "2-tier leaf-spine fabric");
  ls->add_option("--spines", o->leaf_spine.spines, "Spine switches")->capture_default_str();
  ls->add_option("--leaves", o->leaf_spine.leaves, "Leaf switches")->capture_default_str();
  ls->add_option("--hosts-per-leaf", o->leaf_spine.hosts_per_leaf, "Hosts under each leaf")
      ->capture_default_str();
  ls->add_option("--nics-per-host", o->leaf_spine.nics_per_host, "NICs of each host (same leaf)")
      ->capture_default_str();
  ls->add_option("--parallel", o->leaf_spine.parallel, "Links per leaf-spine pair")
      ->capture_default_str();
  common(ls);
  ls->callback([o, &exit_code] {
    o->leaf_spine.addresses = !o->no_addresses;
    exit_code = runGenerate(o->leaf_spine, *o, generateLeafSpine, "leaf-spine");
  });

  auto* ft = gen->add_subcommand("fat-tree", "3-tier fat-tree(k): k^3/4 hosts");
  ft->add_option("-k,--k", o->fat_tree.k, "Switch radix (even)")->capture_default_str();
  common(ft);
  ft->callback([o, &exit_code] {
    o->fat_tree.addresses = !o->no_addresses;
    exit_code =
        runGenerate(o->fat_tree, *o, generateFatTree, "fat-tree-k" + std::to_string(o->fat_tree.k));
  });

  auto* rail = gen->add_subcommand("rail", "Rail-optimized fabric modeled on NVIDIA SuperPOD");
  rail->add_option("--sus", o->rail.sus, "Scalable units")->capture_default_str();
  rail->add_option("--hosts-per-su", o->rail.hosts_per_su, "Hosts per scalable unit")
      ->capture_default_str();
  rail->add_option("--rails", o->rail.rails, "Rails (NICs per host)")->capture_default_str();
  rail->add_option("--spines", o->rail.spines,
                   "Spines (in total without cores; per rail plane with cores)")
      ->capture_default_str();
  rail->add_option("--leaf-uplinks", o->rail.leaf_uplinks, "Uplinks per leaf")
      ->capture_default_str();
  rail->add_option("--cores", o->rail.cores, "Core switches (0: 2-tier)")->capture_default_str();
  common(rail);
  rail->callback([o, &exit_code] {
    o->rail.addresses = !o->no_addresses;
    exit_code = runGenerate(o->rail, *o, generateRail, "rail");
  });
}

// ---- show ----------------------------------------------------------------

struct ShowOptions {
  std::string file;
  bool json = false;
};

std::string levelText(int level) { return level == INT_MAX ? "-" : std::to_string(level); }

int runShow(const ShowOptions& o) {
  auto r = loadOrReport(o.file);
  if (!r) return kExitError;
  Summary s = summarize(r->topology);
  if (o.json) {
    json tiers = json::array();
    for (const TierSummary& t : s.tiers) {
      json tier = {
          {"role", t.role},         {"nodes", t.nodes},           {"down_links", t.down_links},
          {"up_links", t.up_links}, {"peer_links", t.peer_links}, {"down_gbps", t.down_gbps},
          {"up_gbps", t.up_gbps}};
      tier["level"] = t.level == INT_MAX ? json(nullptr) : json(t.level);
      tier["oversubscription"] = t.up_links ? json(t.oversubscription()) : json(nullptr);
      tiers.push_back(tier);
    }
    std::cout << json{{"file", o.file},   {"name", s.name},
                      {"nodes", s.nodes}, {"ports", s.ports},
                      {"links", s.links}, {"directed_links", 2 * s.links},
                      {"hosts", s.hosts}, {"host_ports", s.host_ports},
                      {"tiers", tiers}}
                     .dump(2)
              << '\n';
    return kExitOk;
  }
  std::cout << "fabric      " << (s.name.empty() ? "(unnamed)" : s.name) << '\n'
            << "nodes       " << withCommas(s.nodes) << '\n'
            << "hosts       " << withCommas(s.hosts) << " (" << withCommas(s.host_ports)
            << " host ports)\n"
            << "links       " << withCommas(s.links) << " (" << withCommas(2 * s.links)
            << " directed)\n"
            << "ports       " << withCommas(s.ports) << "\n\n";
  char line[160];
  std::snprintf(line, sizeof line, "%-12s %5s %9s %9s %9s %9s %10s\n", "ROLE", "LEVEL", "NODES",
                "DOWNLINKS", "UPLINKS", "PEERLINKS", "OVERSUB");
  std::cout << line;
  for (const TierSummary& t : s.tiers) {
    std::string over = "-";
    if (t.up_links > 0 && t.down_links > 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f:1", t.oversubscription());
      over = buf;
    }
    std::snprintf(line, sizeof line, "%-12s %5s %9s %9s %9s %9s %10s\n", t.role.c_str(),
                  levelText(t.level).c_str(), withCommas(t.nodes).c_str(),
                  withCommas(t.down_links).c_str(), withCommas(t.up_links).c_str(),
                  withCommas(t.peer_links).c_str(), over.c_str());
    std::cout << line;
  }
  std::cout << "\nOVERSUB is downlink over uplink capacity (by link count where speeds are "
               "missing).\n";
  return kExitOk;
}

// ---- paths ---------------------------------------------------------------

struct PathsOptions {
  std::string file, src, dst;
  std::vector<std::string> down;
  size_t limit = 64;
  bool json = false;
  bool shares = false;
};

// A link given as "X:p->Y:q" or as one of its ports "X:p".
std::optional<LinkId> parseLinkArg(const Topology& t, const std::string& s) {
  if (auto d = t.findDirLink(s)) return Topology::linkOf(*d);
  if (auto p = t.findPort(s); p && t.port(*p).link != kNone) return t.port(*p).link;
  return std::nullopt;
}

// One path for humans: "h1:eth0 -> leaf1[swp1>swp49] -> spine2[swp1>swp3] -> h9:eth0".
std::string describePath(const Topology& t, const std::vector<DirLinkId>& links) {
  std::string s = t.portRef(t.dirSrcPort(links.front()));
  for (size_t i = 0; i + 1 < links.size(); ++i) {
    const Port& in = t.port(t.dirDstPort(links[i]));
    const Port& out = t.port(t.dirSrcPort(links[i + 1]));
    s += " -> " + t.node(in.node).name + "[" + in.name + ">" + out.name + "]";
  }
  return s + " -> " + t.portRef(t.dirDstPort(links.back()));
}

int runPaths(const PathsOptions& o) {
  auto r = loadOrReport(o.file);
  if (!r) return kExitError;
  const Topology& t = r->topology;
  bool bad = false;
  auto port = [&](const std::string& ref, const char* what) -> PortId {
    auto p = t.findPort(ref);
    if (!p) {
      std::cerr << "netdiag topo paths: " << what << " port '" << ref << "' is not in " << o.file
                << " (expected node:port of a linked port)\n";
      bad = true;
      return kNone;
    }
    return *p;
  };
  PortId src = port(o.src, "source");
  PortId dst = port(o.dst, "destination");
  Router router(t);
  for (const std::string& d : o.down) {
    auto l = parseLinkArg(t, d);
    if (!l) {
      std::cerr << "netdiag topo paths: --down '" << d
                << "' is not a link (X:p->Y:q) or a linked port (X:p)\n";
      bad = true;
    } else {
      router.setLinkDown(*l, true);
    }
  }
  if (bad) return kExitError;

  PathSet set = router.paths(src, dst);
  if (set.badQuery()) {
    std::cerr << "netdiag topo paths: " << set.error() << '\n';
    return kExitError;
  }
  std::vector<std::vector<DirLinkId>> listed;
  auto cursor = set.cursor();
  std::vector<DirLinkId> path;
  while (listed.size() < o.limit && cursor.next(path)) listed.push_back(path);

  if (o.json) {
    json paths = json::array();
    for (const auto& p : listed) {
      json ports = json::array();
      for (PortId pp : pathPorts(t, p)) ports.push_back(t.portRef(pp));
      paths.push_back(ports);
    }
    json out = {{"src", o.src},
                {"dst", o.dst},
                {"count", set.count()},
                {"saturated", set.saturated()},
                {"hops", set.hops()},
                {"paths", paths},
                {"truncated", listed.size() < set.count()}};
    if (set.empty()) out["reason"] = set.error();
    if (o.shares) {
      json shares = json::array();
      for (auto [d, share] : set.linkShares()) {
        shares.push_back({{"link", t.dirLinkName(d)}, {"share", share}});
      }
      out["link_shares"] = shares;
    }
    std::cout << out.dump(2) << '\n';
    return set.empty() ? kExitFindings : kExitOk;
  }
  if (set.empty()) {
    std::cout << "0 paths from " << o.src << " to " << o.dst << ": " << set.error() << '\n';
    return kExitFindings;
  }
  std::cout << (set.saturated() ? ">= " : "") << withCommas(set.count()) << " ECMP path"
            << (set.count() == 1 ? "" : "s") << " from " << o.src << " to " << o.dst << ", "
            << set.hops() << " hops each\n";
  for (size_t i = 0; i < listed.size(); ++i) {
    std::cout << "  " << i + 1 << ". " << describePath(t, listed[i]) << '\n';
  }
  if (listed.size() < set.count()) {
    std::cout << "  ... " << (set.saturated() ? "more" : withCommas(set.count() - listed.size()))
              << " not shown (--limit)\n";
  }
  if (o.shares) {
    std::cout << "\nper-hop ECMP share of flows on each directed link:\n";
    for (auto [d, share] : set.linkShares()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%8.4f", share);
      std::cout << "  " << buf << "  " << t.dirLinkName(d) << '\n';
    }
  }
  return kExitOk;
}

}  // namespace

void addTopoCommands(CLI::App& app, int& exit_code) {
  auto* topo = app.add_subcommand("topo", "Topology files: validate, generate, show, paths");
  topo->require_subcommand(1);

  auto vo = std::make_shared<ValidateOptions>();
  auto* validate = topo->add_subcommand(
      "validate", "Check a topology file against the contract (exit 1: warnings, 2: errors)");
  validate->add_option("FILE", vo->file, "Topology file (YAML or JSON)")->required();
  validate->add_flag("--json", vo->json, "Print the result as JSON");
  validate->callback([vo, &exit_code] { exit_code = runValidate(*vo); });

  addGenerate(*topo, exit_code);

  auto so = std::make_shared<ShowOptions>();
  auto* show = topo->add_subcommand("show", "Counts by role and per-tier oversubscription");
  show->add_option("FILE", so->file, "Topology file")->required();
  show->add_flag("--json", so->json, "Print as JSON");
  show->callback([so, &exit_code] { exit_code = runShow(*so); });

  auto po = std::make_shared<PathsOptions>();
  auto* paths = topo->add_subcommand(
      "paths", "ECMP shortest paths between two host ports, and their count (exit 1: no path)");
  paths->add_option("FILE", po->file, "Topology file")->required();
  paths->add_option("SRC_PORT", po->src, "Source host port, node:port")->required();
  paths->add_option("DST_PORT", po->dst, "Destination host port, node:port")->required();
  paths->add_option("--limit", po->limit, "List at most this many paths")->capture_default_str();
  paths->add_option("--down", po->down, "Treat this link as down (X:p->Y:q or X:p); repeatable");
  paths->add_flag("--shares", po->shares, "Also print each link's per-hop ECMP share");
  paths->add_flag("--json", po->json, "Print as JSON");
  paths->callback([po, &exit_code] { exit_code = runPaths(*po); });
}

}  // namespace netdiag::cli
