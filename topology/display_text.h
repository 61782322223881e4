#pragma once

// Text from a file or the network, made safe to show in a diagnostic. A
// node name or LLDP string can carry ESC (terminal control sequences), CR
// (overwrites the line) or bidi controls such as U+202E (shows the rest of
// the line reversed, "Trojan Source"); echoed raw into an error message they
// reach the operator's terminal or log viewer. Diagnostics are built with
// their offending values verbatim and escaped once, where they are formatted
// (Diagnostic::str(), the JSONL reader's quoting, the agent config's errors).

#include <string>
#include <string_view>

namespace netdiag::topology {

// Appends `s` with C0 and C1 control characters, DEL, bidi and line/paragraph
// separators and bytes that are not well-formed UTF-8 written as escapes
// (\n \r \t, \x1b for a byte, \u202e for a code point); everything else,
// other UTF-8 included, is copied. For display only: a backslash is not
// escaped, so the result is not meant to be parsed back.
void appendEscapedForDisplay(std::string& out, std::string_view s);
std::string escapeForDisplay(std::string_view s);

}  // namespace netdiag::topology
