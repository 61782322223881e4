#include "topology/yaml_doc.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>

#include <yaml.h>

namespace netdiag::topology {
namespace {

// libyaml reads the stream through this. It keeps the last chunk read and
// the lines before it: libyaml names an encoding error by its byte offset
// only, and the chunk it decodes holds that offset.
struct Reader {
  std::istream& in;
  std::string chunk;
  uint64_t chunk_start = 0;   // bytes before the chunk
  uint32_t lines_before = 0;  // newlines before the chunk

  static int read(void* data, unsigned char* buffer, size_t size, size_t* size_read) {
    auto* r = static_cast<Reader*>(data);
    r->chunk_start += r->chunk.size();
    r->lines_before += static_cast<uint32_t>(std::count(r->chunk.begin(), r->chunk.end(), '\n'));
    r->in.read(reinterpret_cast<char*>(buffer), static_cast<std::streamsize>(size));
    *size_read = static_cast<size_t>(r->in.gcount());
    r->chunk.assign(reinterpret_cast<const char*>(buffer), *size_read);
    return r->in.bad() ? 0 : 1;  // 0: libyaml reports a reader error
  }
  // The 1-based line of a byte offset in the last chunk (else of its start).
  uint32_t lineAt(uint64_t offset) const {
    const uint64_t within =
        offset >= chunk_start ? std::min<uint64_t>(offset - chunk_start, chunk.size()) : 0;
    return lines_before + 1 +
           static_cast<uint32_t>(
               std::count(chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(within), '\n'));
  }
};

// A plain scalar YAML 1.1 reads as null (and a key or item with no value).
bool isNull(const yaml_event_t& e) {
  if (e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
  const std::string_view v(reinterpret_cast<const char*>(e.data.scalar.value),
                           e.data.scalar.length);
  return v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL";
}

const char* anchorOf(const yaml_event_t& e) {
  switch (e.type) {
    case YAML_SCALAR_EVENT:
      return reinterpret_cast<const char*>(e.data.scalar.anchor);
    case YAML_SEQUENCE_START_EVENT:
      return reinterpret_cast<const char*>(e.data.sequence_start.anchor);
    case YAML_MAPPING_START_EVENT:
      return reinterpret_cast<const char*>(e.data.mapping_start.anchor);
    default:
      return nullptr;
  }
}

}  // namespace

// Lays out YamlDoc from libyaml's events (libyaml: a C event parser, several
// times faster than yaml-cpp's on a topology file of 100k host ports):
// children of an open container are collected on a stack and copied into
// one contiguous slot range when the container closes.
class YamlDocBuilder {
 public:
  explicit YamlDocBuilder(YamlDoc& doc) : doc_(doc) {}

  // One event; false at the first document's end, or at an error (set in
  // the document).
  bool on(const yaml_event_t& e) {
    const auto line = static_cast<uint32_t>(e.start_mark.line + 1);
    switch (e.type) {
      case YAML_SCALAR_EVENT: {
        if (isNull(e)) {
          add(YamlDoc::Kind::kNull, line, anchorOf(e));
          break;
        }
        YamlDoc::Index i = add(YamlDoc::Kind::kScalar, line, anchorOf(e));
        doc_.nodes_[i].first = static_cast<uint32_t>(doc_.text_.size());
        doc_.nodes_[i].size = static_cast<uint32_t>(e.data.scalar.length);
        doc_.text_.append(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
        break;
      }
      case YAML_ALIAS_EVENT: {
        const char* name = reinterpret_cast<const char*>(e.data.alias.anchor);
        auto it = anchors_.find(name);
        if (it == anchors_.end()) {  // libyaml leaves this check to its caller
          doc_.error_ = std::string("unknown alias '*") + name + "'";
          doc_.error_line_ = line;
          return false;
        }
        attach(it->second);
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
        open(add(YamlDoc::Kind::kSequence, line, anchorOf(e)));
        break;
      case YAML_MAPPING_START_EVENT:
        open(add(YamlDoc::Kind::kMap, line, anchorOf(e)));
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        close();
        break;
      case YAML_DOCUMENT_END_EVENT:
      case YAML_STREAM_END_EVENT:
        return false;
      default:
        break;
    }
    return true;
  }

 private:
  YamlDoc::Index newNode(YamlDoc::Kind kind, uint32_t line) {
    auto i = static_cast<YamlDoc::Index>(doc_.nodes_.size());
    doc_.nodes_.push_back(YamlDoc::Node{kind, line, 0, 0});
    return i;
  }
  YamlDoc::Index add(YamlDoc::Kind kind, uint32_t line, const char* anchor) {
    YamlDoc::Index i = newNode(kind, line);
    if (anchor) anchors_[anchor] = i;
    attach(i);
    return i;
  }
  void attach(YamlDoc::Index i) {
    if (open_.empty()) {
      if (doc_.root_ == YamlDoc::kMissing) doc_.root_ = i;
      return;
    }
    pending_.push_back(i);
  }
  void open(YamlDoc::Index i) { open_.push_back({i, pending_.size()}); }
  void close() {
    if (open_.empty()) return;  // libyaml pairs them; be safe anyway
    auto [i, begin] = open_.back();
    open_.pop_back();
    doc_.nodes_[i].first = static_cast<uint32_t>(doc_.slots_.size());
    doc_.nodes_[i].size = static_cast<uint32_t>(pending_.size() - begin);
    doc_.slots_.insert(doc_.slots_.end(), pending_.begin() + static_cast<ptrdiff_t>(begin),
                       pending_.end());
    pending_.resize(begin);
  }

  YamlDoc& doc_;
  std::vector<std::pair<YamlDoc::Index, size_t>> open_;
  std::vector<YamlDoc::Index> pending_;
  std::unordered_map<std::string, YamlDoc::Index> anchors_;
};

bool YamlDoc::parse(std::istream& in) {
  *this = YamlDoc();
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    error_ = "cannot read: out of memory";
    return false;
  }
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> owner(&parser, yaml_parser_delete);
  Reader reader{in, {}, 0, 0};
  yaml_parser_set_input(&parser, Reader::read, &reader);
  YamlDocBuilder builder(*this);
  for (;;) {
    yaml_event_t e;
    if (!yaml_parser_parse(&parser, &e)) {
      if (parser.error == YAML_READER_ERROR && in.bad()) {
        error_ = "cannot read: the stream failed";
        error_line_ = 0;
      } else {
        error_ = parser.problem ? parser.problem : "malformed YAML";
        if (parser.context) error_ = std::string(parser.context) + ": " + error_;
        error_line_ = parser.error == YAML_READER_ERROR
                          ? reader.lineAt(parser.problem_offset)
                          : static_cast<uint32_t>(parser.problem_mark.line + 1);
      }
      return false;
    }
    const bool more = builder.on(e);
    yaml_event_delete(&e);
    if (!more) break;
  }
  return error_.empty();
}

YamlDoc::Index YamlDoc::find(Index map, std::string_view key) const {
  auto kids = children(map);
  for (size_t k = 0; k + 1 < kids.size(); k += 2) {
    if (nodes_[kids[k]].kind == Kind::kScalar && text(kids[k]) == key) return kids[k + 1];
  }
  return kMissing;
}

}  // namespace netdiag::topology
