#pragma once

// Text that crosses the drain path (reasons, switch output, names) as
// printable ASCII within a bound: a cut multi-byte character or a stray
// byte would otherwise make a proto3 string unparseable at the other end
// (and the batch carrying it with it) or a JSON body unprintable.

#include <cstddef>
#include <string>
#include <string_view>

namespace netdiag::actuator {

// `in` with tabs and line breaks as spaces, every other byte outside
// 0x20..0x7e as '?', cut to `max` bytes.
inline std::string printableText(std::string_view in, size_t max) {
  std::string out;
  out.reserve(in.size() < max ? in.size() : max);
  for (char c : in) {
    if (out.size() >= max) break;
    const auto u = static_cast<unsigned char>(c);
    out += c == '\n' || c == '\r' || c == '\t' ? ' ' : u >= 0x20 && u < 0x7f ? c : '?';
  }
  return out;
}

}  // namespace netdiag::actuator
