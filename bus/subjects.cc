#include "bus/subjects.h"

#include <cctype>

namespace netdiag::bus {
namespace {

bool plainByte(unsigned char c) { return std::isalnum(c) != 0 || c == '_' || c == '-'; }

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The token after `head` when `subject` is head + one token.
std::optional<std::string> lastToken(std::string_view subject, const std::string& head) {
  if (subject.size() <= head.size() || subject.substr(0, head.size()) != head) return std::nullopt;
  return unescapeToken(subject.substr(head.size()));
}

}  // namespace

std::string escapeToken(std::string_view name) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(name.size());
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (plainByte(c)) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::optional<std::string> unescapeToken(std::string_view token) {
  if (token.empty()) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < token.size(); ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (plainByte(c)) {
      out += token[i];
      continue;
    }
    if (c != '%' || i + 2 >= token.size()) return std::nullopt;
    const int hi = hexValue(token[i + 1]), lo = hexValue(token[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    const auto byte = static_cast<unsigned char>(hi * 16 + lo);
    if (plainByte(byte)) return std::nullopt;  // one spelling per name
    out += static_cast<char>(byte);
    i += 2;
  }
  return out;
}

std::string Subjects::batch(std::string_view agent) const {
  return prefix + "." + fabric + ".batch." + escapeToken(agent);
}
std::string Subjects::plan(std::string_view agent) const {
  return prefix + "." + fabric + ".plan." + escapeToken(agent);
}
std::string Subjects::allBatches() const { return prefix + "." + fabric + ".batch.*"; }
std::string Subjects::allPlans() const { return prefix + "." + fabric + ".plan.*"; }
std::string Subjects::tick() const { return prefix + "." + fabric + ".tick"; }

std::string Subjects::stream() const {
  std::string name = "NETDIAG_";
  for (char c : fabric) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

std::optional<std::string> Subjects::batchAgent(std::string_view subject) const {
  return lastToken(subject, prefix + "." + fabric + ".batch.");
}
std::optional<std::string> Subjects::planAgent(std::string_view subject) const {
  return lastToken(subject, prefix + "." + fabric + ".plan.");
}

std::string checkSubjects(const Subjects& s) {
  auto tokens = [](const std::string& text, bool dots) {
    if (text.empty() || text.front() == '.' || text.back() == '.') return false;
    char prev = 0;
    for (char c : text) {
      if (c == '.') {
        if (!dots || prev == '.') return false;
      } else if (!plainByte(static_cast<unsigned char>(c))) {
        return false;
      }
      prev = c;
    }
    return true;
  };
  if (!tokens(s.prefix, true)) {
    return "bus subject prefix \"" + s.prefix + "\": need tokens of [A-Za-z0-9_-] joined by dots";
  }
  if (!tokens(s.fabric, false)) {
    return "bus fabric \"" + s.fabric + "\": need one token of [A-Za-z0-9_-]";
  }
  return {};
}

std::string messageId(std::string_view agent, uint64_t epoch, uint64_t seq) {
  return std::string(agent) + ":" + std::to_string(epoch) + ":" + std::to_string(seq);
}

}  // namespace netdiag::bus
