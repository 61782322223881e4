#include "topology/writer.h"

#include <charconv>
#include <cstdio>
#include <string>
#include <string_view>

namespace netdiag::topology {
namespace {

bool isPlainSafe(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == '/' || c == ':';
}

void appendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    // DEL and the C1 controls (U+0080..U+009F but U+0085, UTF-8 C2 80..9F)
    // are not printable in YAML: a YAML parser rejects them raw.
    const auto b = static_cast<unsigned char>(c);
    if (b == 0x7f) {
      out += "\\u007f";
      continue;
    }
    if (b == 0xc2 && i + 1 < s.size()) {
      const auto b1 = static_cast<unsigned char>(s[i + 1]);
      if (b1 >= 0x80 && b1 <= 0x9f && b1 != 0x85) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(b1));
        out += buf;
        ++i;
        continue;
      }
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// Names are restricted to a plain-safe alphabet; other values (roles, the
// fabric name, addresses) are quoted when YAML would read them differently.
void appendYamlScalar(std::string& out, std::string_view s) {
  bool plain = !s.empty() && s != "~" && s != "null" && s != "Null" && s != "NULL" &&
               s.front() != '-' && s.front() != ':' && s.back() != ':';
  for (char c : s) plain = plain && isPlainSafe(c);
  if (plain) {
    out += s;
  } else {
    appendJsonString(out, s);  // a JSON string is a valid YAML double-quoted scalar
  }
}

void appendNumber(std::string& out, double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

void appendInt(std::string& out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

// Flushes the buffer every so often so huge fabrics do not double in memory.
void maybeFlush(std::string& buf, std::ostream& out) {
  if (buf.size() > (1u << 20)) {
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    buf.clear();
  }
}

}  // namespace

void writeYaml(const Topology& topo, std::ostream& out) {
  std::string buf;
  if (!topo.name.empty()) {
    buf += "name: ";
    appendYamlScalar(buf, topo.name);
    buf += '\n';
  }
  buf += topo.nodeCount() ? "nodes:\n" : "nodes: []\n";
  for (const Node& n : topo.nodes()) {
    buf += "  - {name: ";
    appendYamlScalar(buf, n.name);
    buf += ", role: ";
    appendYamlScalar(buf, n.role_name.empty() ? roleName(n.role) : n.role_name);
    if (n.pod) {
      buf += ", pod: ";
      appendInt(buf, *n.pod);
    }
    if (!n.addr.empty()) {
      buf += ", addr: ";
      appendYamlScalar(buf, n.addr);
    }
    buf += "}\n";
    maybeFlush(buf, out);
  }
  buf += topo.linkCount() ? "links:\n" : "links: []\n";
  for (const Link& l : topo.links()) {
    const Port& a = topo.port(l.a);
    const Port& b = topo.port(l.b);
    if (l.speed_gbps == 0 && a.addr.empty() && b.addr.empty()) {
      buf += "  - [";
      appendYamlScalar(buf, topo.portRef(l.a));
      buf += ", ";
      appendYamlScalar(buf, topo.portRef(l.b));
      buf += "]\n";
    } else {
      buf += "  - {a: ";
      appendYamlScalar(buf, topo.portRef(l.a));
      buf += ", b: ";
      appendYamlScalar(buf, topo.portRef(l.b));
      if (l.speed_gbps != 0) {
        buf += ", speed_gbps: ";
        appendNumber(buf, l.speed_gbps);
      }
      if (!a.addr.empty()) {
        buf += ", addr_a: ";
        appendYamlScalar(buf, a.addr);
      }
      if (!b.addr.empty()) {
        buf += ", addr_b: ";
        appendYamlScalar(buf, b.addr);
      }
      buf += "}\n";
    }
    maybeFlush(buf, out);
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

void writeJson(const Topology& topo, std::ostream& out) {
  std::string buf = "{";
  if (!topo.name.empty()) {
    buf += "\"name\": ";
    appendJsonString(buf, topo.name);
    buf += ",";
  }
  buf += "\n\"nodes\": [";
  for (size_t i = 0; i < topo.nodeCount(); ++i) {
    const Node& n = topo.node(static_cast<NodeId>(i));
    buf += i ? ",\n  {\"name\": " : "\n  {\"name\": ";
    appendJsonString(buf, n.name);
    buf += ", \"role\": ";
    appendJsonString(buf, n.role_name.empty() ? roleName(n.role) : n.role_name);
    if (n.pod) {
      buf += ", \"pod\": ";
      appendInt(buf, *n.pod);
    }
    if (!n.addr.empty()) {
      buf += ", \"addr\": ";
      appendJsonString(buf, n.addr);
    }
    buf += "}";
    maybeFlush(buf, out);
  }
  buf += "],\n\"links\": [";
  for (size_t i = 0; i < topo.linkCount(); ++i) {
    const Link& l = topo.link(static_cast<LinkId>(i));
    buf += i ? ",\n  {\"a\": " : "\n  {\"a\": ";
    appendJsonString(buf, topo.portRef(l.a));
    buf += ", \"b\": ";
    appendJsonString(buf, topo.portRef(l.b));
    if (l.speed_gbps != 0) {
      buf += ", \"speed_gbps\": ";
      appendNumber(buf, l.speed_gbps);
    }
    if (!topo.port(l.a).addr.empty()) {
      buf += ", \"addr_a\": ";
      appendJsonString(buf, topo.port(l.a).addr);
    }
    if (!topo.port(l.b).addr.empty()) {
      buf += ", \"addr_b\": ";
      appendJsonString(buf, topo.port(l.b).addr);
    }
    buf += "}";
    maybeFlush(buf, out);
  }
  buf += "]}\n";
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace netdiag::topology
