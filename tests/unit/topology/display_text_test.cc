#include "topology/display_text.h"

#include <string>

#include <gtest/gtest.h>

namespace netdiag::topology {
namespace {

TEST(DisplayText, PlainTextAndUtf8AreCopied) {
  EXPECT_EQ(escapeForDisplay("leaf1:swp49 -> spine2:swp1"), "leaf1:swp49 -> spine2:swp1");
  EXPECT_EQ(escapeForDisplay("caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x98\x80"),
            "caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x98\x80");
  EXPECT_EQ(escapeForDisplay(""), "");
}

TEST(DisplayText, ControlBytesAreEscaped) {
  EXPECT_EQ(escapeForDisplay("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(escapeForDisplay("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(escapeForDisplay(std::string("x\0y\x7f", 4)), "x\\x00y\\x7f");
}

TEST(DisplayText, BidiAndC1ControlsAreEscaped) {
  EXPECT_EQ(escapeForDisplay("h1\xE2\x80\xAEtxt.exe"), "h1\\u202etxt.exe");     // U+202E RLO
  EXPECT_EQ(escapeForDisplay("\xE2\x81\xA6x\xE2\x81\xA9"), "\\u2066x\\u2069");  // LRI, PDI
  EXPECT_EQ(escapeForDisplay("\xE2\x80\x8F"), "\\u200f");                       // RLM
  EXPECT_EQ(escapeForDisplay("\xE2\x80\xA8"), "\\u2028");                       // line separator
  EXPECT_EQ(escapeForDisplay("\xC2\x9B"
                             "31m"),
            "\\u009b31m");  // C1 CSI
  EXPECT_EQ(escapeForDisplay("\xEF\xBB\xBFz"), "\\ufeffz");
}

TEST(DisplayText, MalformedUtf8BytesAreEscapedOneByOne) {
  EXPECT_EQ(escapeForDisplay("a\xFF"
                             "b"),
            "a\\xffb");
  EXPECT_EQ(escapeForDisplay("\xC0\xAF"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(escapeForDisplay("\xED\xA0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(escapeForDisplay("\xE2\x80"), "\\xe2\\x80");           // cut short
}

}  // namespace
}  // namespace netdiag::topology
