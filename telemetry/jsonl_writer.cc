#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>

#include "telemetry/jsonl.h"

namespace netdiag::telemetry {
namespace {

// Flush threshold: big enough that the ostream sees few large writes.
constexpr size_t kFlushBytes = size_t{1} << 20;

void appendUint(std::string& buf, uint64_t v) {
  char tmp[24];
  auto res = std::to_chars(tmp, tmp + sizeof tmp, v);
  buf.append(tmp, res.ptr);
}

// Shortest round-trip form. JSON has no NaN or infinity: those become null,
// which the reader treats as absent for optional fields.
void appendDouble(std::string& buf, double v) {
  if (!std::isfinite(v)) {
    buf += "null";
    return;
  }
  char tmp[32];
  auto res = std::to_chars(tmp, tmp + sizeof tmp, v);
  buf.append(tmp, res.ptr);
}

}  // namespace

namespace detail {

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs,
// no surrogates, nothing above U+10FFFF), 0 when it is not one.
size_t utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  unsigned char c1 = byte(i + 1);
  if (c == 0xE0 && c1 < 0xA0) return 0;   // overlong
  if (c == 0xED && c1 >= 0xA0) return 0;  // surrogate
  if (c == 0xF0 && c1 < 0x90) return 0;   // overlong
  if (c == 0xF4 && c1 >= 0x90) return 0;  // above U+10FFFF
  return n;
}

}  // namespace

void appendJsonEscaped(std::string& out, std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // Fast path: a run of printable ASCII that needs no escape.
    size_t run = i;
    while (run < s.size()) {
      auto c = static_cast<unsigned char>(s[run]);
      if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') break;
      ++run;
    }
    out.append(s.data() + i, run - i);
    i = run;
    if (i == s.size()) break;
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = utf8SequenceLength(s, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD: JSON text must be UTF-8
        ++i;
      } else {
        out.append(s.data() + i, n);
        i += n;
      }
      continue;
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
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
      }
    }
    ++i;
  }
}

}  // namespace detail

JsonlWriter::JsonlWriter(const topology::Topology& topo, std::ostream& out)
    : topo_(topo), out_(out) {
  buf_.reserve(kFlushBytes + 64 * 1024);
}

JsonlWriter::~JsonlWriter() { flush(); }

void JsonlWriter::flush() {
  if (!buf_.empty()) {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }
  out_.flush();
}

void JsonlWriter::endLine() {
  buf_ += "}\n";
  ++lines_;
  if (buf_.size() >= kFlushBytes) {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }
}

// "node:port". An id the topology does not have is written as "" so the line
// stays valid JSON and a reader reports it as an unknown port.
void JsonlWriter::appendPortRef(topology::PortId p) {
  buf_ += '"';
  if (p < topo_.portCount()) {
    const topology::Port& port = topo_.port(p);
    detail::appendJsonEscaped(buf_, topo_.node(port.node).name);
    buf_ += ':';
    detail::appendJsonEscaped(buf_, port.name);
  }
  buf_ += '"';
}

// The contract's port list: for links d0..dn, src(d0), dst(d0), src(d1), ...
void JsonlWriter::appendPath(std::string_view key, const std::vector<topology::DirLinkId>& path) {
  buf_ += ",\"";
  buf_ += key;
  buf_ += "\":[";
  bool first = true;
  for (topology::DirLinkId d : path) {
    if (!first) buf_ += ',';
    first = false;
    if (d < topo_.dirLinkCount()) {
      appendPortRef(topo_.dirSrcPort(d));
      buf_ += ',';
      appendPortRef(topo_.dirDstPort(d));
    } else {
      buf_ += "\"\",\"\"";
    }
  }
  buf_ += ']';
}

void JsonlWriter::onProbe(const ProbeRecord& r) {
  buf_ += "{\"t\":";
  appendDouble(buf_, r.t);
  buf_ += ",\"kind\":\"probe\",\"src\":";
  appendPortRef(r.src);
  buf_ += ",\"dst\":";
  appendPortRef(r.dst);
  buf_ += ",\"flow\":";
  appendUint(buf_, r.flow);
  buf_ += ",\"window_s\":";
  appendDouble(buf_, r.window_s);
  buf_ += ",\"sent\":";
  appendUint(buf_, r.sent);
  buf_ += ",\"lost\":";
  appendUint(buf_, r.lost);
  if (r.lost_fwd) {
    buf_ += ",\"lost_fwd\":";
    appendUint(buf_, *r.lost_fwd);
  }
  if (r.lost_rev) {
    buf_ += ",\"lost_rev\":";
    appendUint(buf_, *r.lost_rev);
  }
  if (!std::isnan(r.rtt_us_p50)) {
    buf_ += ",\"rtt_us_p50\":";
    appendDouble(buf_, r.rtt_us_p50);
  }
  if (!std::isnan(r.rtt_us_p99)) {
    buf_ += ",\"rtt_us_p99\":";
    appendDouble(buf_, r.rtt_us_p99);
  }
  if (!r.path.empty()) {
    appendPath("path", r.path);
    if (r.path_partial) buf_ += ",\"path_partial\":true";
  }
  if (!r.reply_path.empty()) appendPath("reply_path", r.reply_path);
  endLine();
}

void JsonlWriter::onPort(const PortRecord& r) {
  buf_ += "{\"t\":";
  appendDouble(buf_, r.t);
  buf_ += ",\"kind\":\"port\",\"port\":";
  appendPortRef(r.port);
  if (r.oper_up) buf_ += *r.oper_up ? ",\"oper_up\":true" : ",\"oper_up\":false";
  auto counter = [this](std::string_view key, const std::optional<uint64_t>& v) {
    if (!v) return;
    buf_ += ",\"";
    buf_ += key;
    buf_ += "\":";
    appendUint(buf_, *v);
  };
  counter("rx_packets", r.rx_packets);
  counter("tx_packets", r.tx_packets);
  counter("rx_errors", r.rx_errors);
  counter("rx_crc_errors", r.rx_crc_errors);
  counter("rx_drops", r.rx_drops);
  counter("tx_drops", r.tx_drops);
  counter("fec_uncorrectable", r.fec_uncorrectable);
  counter("carrier_changes", r.carrier_changes);
  endLine();
}

void JsonlWriter::onLldp(const LldpRecord& r) {
  buf_ += "{\"t\":";
  appendDouble(buf_, r.t);
  buf_ += ",\"kind\":\"lldp\",\"port\":";
  appendPortRef(r.port);
  buf_ += ",\"neighbor\":\"";
  detail::appendJsonEscaped(buf_, r.neighbor);
  buf_ += '"';
  endLine();
}

}  // namespace netdiag::telemetry
