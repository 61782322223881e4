// Probe datagrams (collector/probe_packet.h) from untrusted bytes: decoding
// is strict, so whatever it accepts must encode back to the same 36 bytes,
// and the reply to it must decode as a reply.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "collector/probe_packet.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace netdiag::collector;
  ProbePacket p;
  DecodeError e = decodeProbe(std::span<const uint8_t>(data, size), p);
  (void)describe(e);
  if (e != DecodeError::kOk) return 0;
  ProbeBytes bytes = encodeProbe(p);
  if (size != bytes.size() || std::memcmp(bytes.data(), data, size) != 0) std::abort();
  if (p.type == ProbeType::kProbe) {
    ProbePacket reply;
    ProbeBytes rb = encodeProbe(makeReply(p, 1));
    if (decodeProbe(rb, reply) != DecodeError::kOk || reply.type != ProbeType::kReply) {
      std::abort();
    }
  }
  return 0;
}
