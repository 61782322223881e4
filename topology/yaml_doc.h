#pragma once

// A compact, read-only document tree built from libyaml's event parser.
// A tree of yaml-cpp's YAML::Node costs about a kilobyte per node, and a
// 100k-host-port fabric has millions of YAML nodes, so we keep a flat array
// of small nodes, one text arena and each scalar's source line. JSON is
// read the same way (JSON is YAML flow syntax), so both keep line numbers.

#include <cstdint>
#include <istream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netdiag::topology {

class YamlDoc {
 public:
  enum class Kind : uint8_t { kNull, kScalar, kSequence, kMap };
  using Index = uint32_t;

  struct Node {
    Kind kind = Kind::kNull;
    uint32_t line = 0;   // 1-based
    uint32_t first = 0;  // scalar: text offset; containers: first child slot
    uint32_t size = 0;   // scalar: text length; containers: child slots (maps: 2 per entry)
  };

  // Parses the first document of `in`. On a syntax error returns false and
  // sets error() and errorLine().
  bool parse(std::istream& in);

  const std::string& error() const { return error_; }
  uint32_t errorLine() const { return error_line_; }
  bool empty() const { return nodes_.empty(); }

  Index root() const { return root_; }
  const Node& node(Index i) const { return nodes_[i]; }
  Kind kind(Index i) const { return nodes_[i].kind; }
  uint32_t line(Index i) const { return nodes_[i].line; }
  std::string_view text(Index i) const {
    return std::string_view(text_).substr(nodes_[i].first, nodes_[i].size);
  }
  // Children of a sequence, or key/value pairs (interleaved) of a map.
  std::span<const Index> children(Index i) const {
    return {slots_.data() + nodes_[i].first, nodes_[i].size};
  }
  // The value for `key` in map `i`; kMissing when absent.
  static constexpr Index kMissing = UINT32_MAX;
  Index find(Index map, std::string_view key) const;

 private:
  friend class YamlDocBuilder;
  std::vector<Node> nodes_;
  std::vector<Index> slots_;
  std::string text_;
  Index root_ = kMissing;
  std::string error_;
  uint32_t error_line_ = 0;
};

}  // namespace netdiag::topology
