#include "topology/yaml_doc.h"

#include <unordered_map>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

namespace netdiag::topology {

// Receives yaml-cpp events and lays out YamlDoc: children of an open
// container are collected on a stack and copied into one contiguous slot
// range when the container closes.
class YamlDocBuilder : public YAML::EventHandler {
 public:
  explicit YamlDocBuilder(YamlDoc& doc) : doc_(doc) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    add(YamlDoc::Kind::kNull, mark, anchor);
  }
  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    // yaml-cpp rejects unknown aliases itself; be safe anyway.
    attach(it == anchors_.end() ? newNode(YamlDoc::Kind::kNull, 0) : it->second);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    YamlDoc::Index i = add(YamlDoc::Kind::kScalar, mark, anchor);
    doc_.nodes_[i].first = static_cast<uint32_t>(doc_.text_.size());
    doc_.nodes_[i].size = static_cast<uint32_t>(value.size());
    doc_.text_ += value;
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(add(YamlDoc::Kind::kSequence, mark, anchor));
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(add(YamlDoc::Kind::kMap, mark, anchor));
  }
  void OnMapEnd() override { close(); }

 private:
  YamlDoc::Index newNode(YamlDoc::Kind kind, uint32_t line) {
    auto i = static_cast<YamlDoc::Index>(doc_.nodes_.size());
    doc_.nodes_.push_back(YamlDoc::Node{kind, line, 0, 0});
    return i;
  }
  YamlDoc::Index add(YamlDoc::Kind kind, const YAML::Mark& mark, YAML::anchor_t anchor) {
    YamlDoc::Index i = newNode(kind, static_cast<uint32_t>(mark.line + 1));
    if (anchor != YAML::NullAnchor) anchors_[anchor] = i;
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
  std::unordered_map<YAML::anchor_t, YamlDoc::Index> anchors_;
};

bool YamlDoc::parse(std::istream& in) {
  *this = YamlDoc();
  try {
    YAML::Parser parser(in);
    YamlDocBuilder builder(*this);
    parser.HandleNextDocument(builder);
  } catch (const YAML::Exception& e) {
    error_ = e.msg;
    error_line_ = static_cast<uint32_t>(e.mark.line + 1);
    return false;
  } catch (const std::exception& e) {  // a stream read error (EISDIR, EIO)
    error_ = std::string("cannot read: ") + e.what();
    error_line_ = 0;
    return false;
  }
  return true;
}

YamlDoc::Index YamlDoc::find(Index map, std::string_view key) const {
  auto kids = children(map);
  for (size_t k = 0; k + 1 < kids.size(); k += 2) {
    if (nodes_[kids[k]].kind == Kind::kScalar && text(kids[k]) == key) return kids[k + 1];
  }
  return kMissing;
}

}  // namespace netdiag::topology
