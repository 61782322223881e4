#include "topology/display_text.h"

#include <cstdint>

namespace netdiag::topology {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void appendByteEscape(std::string& out, unsigned char c) {
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xF];
}

void appendCodePointEscape(std::string& out, uint32_t cp) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 0xF];
}

// Code points that change how the text around them is shown.
bool isHiddenControl(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) ||      // C1 controls (e.g. U+009B, CSI)
         cp == 0x061C ||                    // Arabic letter mark
         cp == 0x200E || cp == 0x200F ||    // LRM, RLM
         (cp >= 0x2028 && cp <= 0x202E) ||  // line/paragraph separators, LRE..RLO
         (cp >= 0x2066 && cp <= 0x2069) ||  // LRI..PDI
         cp == 0xFEFF;                      // zero-width no-break space (BOM)
}

// The length of the well-formed UTF-8 sequence at s[i] (2..4) and its code
// point, or 0 when it is not one (overlong, surrogate, beyond U+10FFFF, cut).
size_t decodeUtf8(std::string_view s, size_t i, uint32_t& cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  uint32_t min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

}  // namespace

void appendEscapedForDisplay(std::string& out, std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // Copy the plain printable ASCII run in one go: the common case.
    size_t run = i;
    while (run < s.size() && s[run] >= 0x20 && s[run] < 0x7F) ++run;
    out.append(s.substr(i, run - i));
    i = run;
    if (i == s.size()) break;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else {
        appendByteEscape(out, c);
      }
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t len = decodeUtf8(s, i, cp);
    if (len == 0) {
      appendByteEscape(out, c);
      ++i;
    } else if (isHiddenControl(cp)) {
      appendCodePointEscape(out, cp);
      i += len;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
}

std::string escapeForDisplay(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  appendEscapedForDisplay(out, s);
  return out;
}

}  // namespace netdiag::topology
