#include "topology/loader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "topology/display_text.h"
#include "topology/yaml_doc.h"

namespace netdiag::topology {
namespace {

using Kind = YamlDoc::Kind;
using Index = YamlDoc::Index;

class Loader {
 public:
  Loader(const YamlDoc& doc, std::string_view file, LoadResult& out)
      : doc_(doc), file_(file), out_(out), topo_(out.topology) {}

  void run() {
    if (doc_.empty() || doc_.kind(doc_.root()) == Kind::kNull) {
      error(1, "the file is empty; expected a mapping with 'nodes' and 'links'");
      return;
    }
    Index root = doc_.root();
    if (doc_.kind(root) != Kind::kMap) {
      error(doc_.line(root), "the top level must be a mapping with 'nodes' and 'links'");
      return;
    }
    warnAboutDuplicateKeys(root);
    if (Index name = doc_.find(root, "name");
        name != YamlDoc::kMissing && doc_.kind(name) != Kind::kNull) {
      if (auto s = scalar(name, "'name'")) topo_.name = *s;
    }
    Index nodes = doc_.find(root, "nodes");
    Index links = doc_.find(root, "links");
    reserveFor(nodes, links);
    if (nodes == YamlDoc::kMissing) {
      error(doc_.line(root), "missing 'nodes': a topology declares its nodes");
    } else if (doc_.kind(nodes) == Kind::kSequence) {
      for (Index n : doc_.children(nodes)) loadNode(n);
    } else if (doc_.kind(nodes) != Kind::kNull) {  // `nodes:` with nothing is an empty list
      error(doc_.line(nodes), "'nodes' must be a sequence");
    }
    if (links != YamlDoc::kMissing && doc_.kind(links) != Kind::kNull) {
      if (doc_.kind(links) != Kind::kSequence) {
        error(doc_.line(links), "'links' must be a sequence");
      } else {
        for (Index l : doc_.children(links)) loadLink(l);
      }
    }
    topo_.finalize();
    // Warnings about a broken file mostly echo its errors; keep them for valid ones.
    if (!out_.errors.empty()) return;
    warnAboutAddresses();
    warnAboutUnlinkedHosts();
  }

 private:
  void reserveFor(Index nodes, Index links) {
    auto count = [&](Index i) {
      return i != YamlDoc::kMissing && doc_.kind(i) == Kind::kSequence ? doc_.children(i).size()
                                                                       : size_t{0};
    };
    topo_.reserve(count(nodes), 2 * count(links), count(links));
  }

  void error(uint32_t line, std::string message) {
    out_.errors.push_back({std::string(file_), line, std::move(message)});
  }
  void warning(uint32_t line, std::string message) {
    out_.warnings.push_back({std::string(file_), line, std::move(message)});
  }

  // YAML wants the keys of a mapping unique, but yaml-cpp keeps repeats and
  // find() takes the first: say so rather than silently drop the later value
  // (the JSONL reader, by contrast, takes the last). Maps the loader reads
  // are small (a node, a link, the top level) unless a file is hostile, so
  // pairwise up to a few dozen keys, a hash map beyond.
  void warnAboutDuplicateKeys(Index map) {
    auto kids = doc_.children(map);
    constexpr size_t kPairwiseUpTo = 32;
    auto report = [&](Index first, Index again) {
      warning(doc_.line(again), "duplicate key '" + std::string(doc_.text(again)) + "' at line " +
                                    std::to_string(doc_.line(again)) + " repeats line " +
                                    std::to_string(doc_.line(first)) +
                                    "; the first is used, this one ignored");
    };
    if (kids.size() / 2 <= kPairwiseUpTo) {
      for (size_t k = 0; k + 1 < kids.size(); k += 2) {
        if (doc_.kind(kids[k]) != Kind::kScalar) continue;
        for (size_t j = 0; j < k; j += 2) {
          if (doc_.kind(kids[j]) == Kind::kScalar && doc_.text(kids[j]) == doc_.text(kids[k])) {
            report(kids[j], kids[k]);
            break;
          }
        }
      }
      return;
    }
    std::unordered_map<std::string_view, Index> first;
    for (size_t k = 0; k + 1 < kids.size(); k += 2) {
      if (doc_.kind(kids[k]) != Kind::kScalar) continue;
      auto [it, inserted] = first.emplace(doc_.text(kids[k]), kids[k]);
      if (!inserted) report(it->second, kids[k]);
    }
  }

  // The text of a scalar, or an error naming `what` when it is not one.
  std::optional<std::string_view> scalar(Index i, std::string_view what) {
    if (doc_.kind(i) == Kind::kScalar) return doc_.text(i);
    error(doc_.line(i), std::string(what) + " must be a single value");
    return std::nullopt;
  }

  // An optional scalar field of a map: nullopt when absent or null.
  std::optional<std::string_view> optionalField(Index map, std::string_view key,
                                                std::string_view owner, bool& bad) {
    Index v = doc_.find(map, key);
    if (v == YamlDoc::kMissing || doc_.kind(v) == Kind::kNull) return std::nullopt;
    auto s = scalar(v, "'" + std::string(key) + "' of " + std::string(owner));
    if (!s) bad = true;
    return s;
  }

  void loadNode(Index n) {
    const uint32_t line = doc_.line(n);
    if (doc_.kind(n) != Kind::kMap) {
      error(line, "a node must be a mapping with 'name' and 'role'");
      return;
    }
    warnAboutDuplicateKeys(n);
    Index name_i = doc_.find(n, "name");
    if (name_i == YamlDoc::kMissing || doc_.kind(name_i) == Kind::kNull) {
      error(line, "node has no 'name'");
      return;
    }
    auto name = scalar(name_i, "node 'name'");
    if (!name) return;
    std::string quoted = "'" + std::string(*name) + "'";
    bool bad = false;
    if (!isValidNodeName(*name)) {
      error(line, "invalid node name " + quoted + ": use only A-Z a-z 0-9 . _ -");
      bad = true;
    }
    Node node;
    node.name = std::string(*name);
    node.line = line;
    if (auto role = optionalField(n, "role", "node " + quoted, bad)) {
      node.role_name = std::string(*role);
      node.role = roleFromName(*role);
      if (role->empty()) {
        error(line, "node " + quoted + " has an empty 'role'");
        bad = true;
      }
    } else if (!bad) {
      error(line, "node " + quoted + " has no 'role' (host, leaf, spine, superspine, core, ...)");
      bad = true;
    }
    if (auto pod = optionalField(n, "pod", "node " + quoted, bad)) {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(pod->data(), pod->data() + pod->size(), v);
      if (ec != std::errc() || end != pod->data() + pod->size()) {
        error(doc_.line(doc_.find(n, "pod")),
              "node " + quoted + ": 'pod' must be an integer, got '" + std::string(*pod) + "'");
        bad = true;
      }
      node.pod = v;
    }
    if (auto addr = optionalField(n, "addr", "node " + quoted, bad)) node.addr = std::string(*addr);
    if (auto [it, inserted] = declared_.emplace(node.name, line); !inserted) {
      error(line, "duplicate node name " + quoted + " (first declared at line " +
                      std::to_string(it->second) + ")");
      return;
    }
    if (bad) return;  // declared_ keeps its name: links to it are not "undeclared"
    topo_.addNode(std::move(node));
  }

  struct End {
    std::string_view ref;
    std::string_view addr;
    NodeId node = kNone;
    std::string_view port;
  };

  void loadLink(Index l) {
    const uint32_t line = doc_.line(l);
    End a, b;
    double speed = 0;
    bool bad = false;
    if (doc_.kind(l) == Kind::kSequence) {
      auto ends = doc_.children(l);
      if (ends.size() != 2) {
        error(line, "a short-form link must name exactly two ports, [node:port, node:port]; got " +
                        std::to_string(ends.size()));
        return;
      }
      auto ra = scalar(ends[0], "a link end");
      auto rb = scalar(ends[1], "a link end");
      if (!ra || !rb) return;
      a.ref = *ra;
      b.ref = *rb;
    } else if (doc_.kind(l) == Kind::kMap) {
      warnAboutDuplicateKeys(l);
      auto ra = optionalField(l, "a", "link", bad);
      auto rb = optionalField(l, "b", "link", bad);
      if (!ra || !rb) {
        if (!bad) error(line, "a long-form link needs both 'a' and 'b' ports");
        return;
      }
      a.ref = *ra;
      b.ref = *rb;
      if (auto s = optionalField(l, "speed_gbps", "link", bad)) {
        auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), speed);
        if (ec != std::errc() || end != s->data() + s->size() || !std::isfinite(speed) ||
            speed < 0) {
          error(doc_.line(doc_.find(l, "speed_gbps")),
                "link " + std::string(a.ref) + " -- " + std::string(b.ref) +
                    ": 'speed_gbps' must be a non-negative number, got '" + std::string(*s) + "'");
          bad = true;
        }
      }
      if (auto s = optionalField(l, "addr_a", "link", bad)) a.addr = *s;
      if (auto s = optionalField(l, "addr_b", "link", bad)) b.addr = *s;
    } else {
      error(line, "a link must be [node:port, node:port] or a mapping with 'a' and 'b'");
      return;
    }
    bad |= !resolve(a, line);
    bad |= !resolve(b, line);
    if (a.node != kNone && a.node == b.node) {
      error(line, "link joins node '" + topo_.node(a.node).name + "' to itself (" +
                      std::string(a.ref) + ", " + std::string(b.ref) + ")");
      bad = true;
    }
    if (bad) return;
    PortId pa = topo_.addPort(a.node, a.port);
    PortId pb = topo_.addPort(b.node, b.port);
    bool taken = false;
    for (auto [p, ref] : {std::pair{pa, a.ref}, std::pair{pb, b.ref}}) {
      if (LinkId other = topo_.port(p).link; other != kNone) {
        error(line, "port '" + std::string(ref) + "' already belongs to the link at line " +
                        std::to_string(topo_.link(other).line));
        taken = true;
      }
    }
    if (taken) return;
    topo_.addLink(pa, pb, speed, line);
    topo_.mutablePort(pa).addr = std::string(a.addr);
    topo_.mutablePort(pb).addr = std::string(b.addr);
  }

  // Checks a port reference and finds its node; false (with an error) if bad.
  bool resolve(End& end, uint32_t line) {
    auto parts = splitPortRef(end.ref);
    if (!parts) {
      error(line, "bad port reference '" + std::string(end.ref) +
                      "': expected node:port with node [A-Za-z0-9._-]+ and port [A-Za-z0-9._/-]+");
      return false;
    }
    auto node = topo_.findNode(parts->first);
    if (!node) {
      if (declared_.find(parts->first) == declared_.end()) {
        error(line, "link names undeclared node '" + std::string(parts->first) + "' in '" +
                        std::string(end.ref) + "'");
      }
      return false;
    }
    end.node = *node;
    end.port = parts->second;
    return true;
  }

  void warnAboutAddresses() {
    StringMap<std::string> seen;  // address -> who has it
    auto check = [&](const std::string& addr, std::string who, uint32_t line) {
      if (addr.empty()) return;
      auto [it, inserted] = seen.emplace(addr, who);
      if (!inserted && it->second != who) {
        warning(line, "address " + addr + " of " + who + " is also used by " + it->second +
                          "; traceroute hops through it are ambiguous");
      }
    };
    for (LinkId l = 0; l < topo_.linkCount(); ++l) {
      const Link& link = topo_.link(l);
      check(topo_.port(link.a).addr, "port " + topo_.portRef(link.a), link.line);
      check(topo_.port(link.b).addr, "port " + topo_.portRef(link.b), link.line);
    }
    // A host's management address may equal one of its own interface addresses.
    for (NodeId n = 0; n < topo_.nodeCount(); ++n) {
      const Node& node = topo_.node(n);
      if (node.addr.empty()) continue;
      auto it = seen.find(node.addr);
      if (it != seen.end() && it->second.rfind("port " + node.name + ":", 0) != 0 &&
          it->second != "node " + node.name) {
        warning(node.line, "address " + node.addr + " of node '" + node.name +
                               "' is also used by " + it->second);
      } else {
        seen.emplace(node.addr, "node " + node.name);
      }
    }
  }

  void warnAboutUnlinkedHosts() {
    for (NodeId n = 0; n < topo_.nodeCount(); ++n) {
      if (topo_.node(n).isHost() && topo_.portsOf(n).empty()) {
        warning(topo_.node(n).line, "host '" + topo_.node(n).name + "' has no links");
      }
    }
  }

  const YamlDoc& doc_;
  std::string_view file_;
  LoadResult& out_;
  Topology& topo_;
  StringMap<uint32_t> declared_;  // every node name seen, valid or not -> its line
};

}  // namespace

std::string Diagnostic::str(std::string_view level) const {
  // Messages quote names from the file verbatim; escape once, here.
  std::string s = escapeForDisplay(file);
  if (line > 0) s += ":" + std::to_string(line);
  s += ": ";
  if (!level.empty()) {
    s += level;
    s += ": ";
  }
  appendEscapedForDisplay(s, message);
  return s;
}

LoadResult loadTopology(std::istream& in, std::string_view source_name) {
  LoadResult result;
  YamlDoc doc;
  if (!doc.parse(in)) {
    std::string what = doc.errorLine() > 0 ? "syntax error: " + doc.error() : doc.error();
    result.errors.push_back({std::string(source_name), doc.errorLine(), what});
    return result;
  }
  Loader(doc, source_name, result).run();
  auto byLine = [](const Diagnostic& x, const Diagnostic& y) { return x.line < y.line; };
  std::stable_sort(result.errors.begin(), result.errors.end(), byLine);
  std::stable_sort(result.warnings.begin(), result.warnings.end(), byLine);
  return result;
}

LoadResult loadTopologyFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    LoadResult result;
    result.errors.push_back({path, 0, "cannot open: it is a directory"});
    return result;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoadResult result;
    result.errors.push_back({path, 0, std::string("cannot open: ") + std::strerror(errno)});
    return result;
  }
  return loadTopology(in, path);
}

}  // namespace netdiag::topology
