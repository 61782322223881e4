#include "collector/probe_packet.h"

namespace netdiag::collector {
namespace {

void put32(uint8_t* p, uint32_t v) {
  for (int i = 3; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | p[i];
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

const char* describe(DecodeError e) {
  switch (e) {
    case DecodeError::kOk:
      return "ok";
    case DecodeError::kLength:
      return "bad length";
    case DecodeError::kMagic:
      return "bad magic";
    case DecodeError::kVersion:
      return "unsupported version";
    case DecodeError::kType:
      return "bad type";
    case DecodeError::kFlags:
      return "unknown flags";
    case DecodeError::kReserved:
      return "reserved byte set";
    case DecodeError::kSendTime:
      return "zero send time";
    case DecodeError::kReceived:
      return "bad received count";
  }
  return "unknown";
}

ProbeBytes encodeProbe(const ProbePacket& p) {
  ProbeBytes b{};
  put32(&b[0], kProbeMagic);
  b[4] = kProbeVersion;
  b[5] = static_cast<uint8_t>(p.type);
  b[6] = p.flags;
  b[7] = 0;
  put32(&b[8], p.session);
  put32(&b[12], p.seq);
  put64(&b[16], p.flow);
  put64(&b[24], p.send_ns);
  put32(&b[32], p.received);
  return b;
}

DecodeError decodeProbe(std::span<const uint8_t> bytes, ProbePacket& out) {
  if (bytes.size() != kProbeSize) return DecodeError::kLength;
  const uint8_t* b = bytes.data();
  if (get32(b) != kProbeMagic) return DecodeError::kMagic;
  if (b[4] != kProbeVersion) return DecodeError::kVersion;
  if (b[5] != static_cast<uint8_t>(ProbeType::kProbe) &&
      b[5] != static_cast<uint8_t>(ProbeType::kReply)) {
    return DecodeError::kType;
  }
  if ((b[6] & ~kProbeFlagTrace) != 0) return DecodeError::kFlags;
  if (b[7] != 0) return DecodeError::kReserved;
  out.type = static_cast<ProbeType>(b[5]);
  out.flags = b[6];
  out.session = get32(b + 8);
  out.seq = get32(b + 12);
  out.flow = get64(b + 16);
  out.send_ns = get64(b + 24);
  out.received = get32(b + 32);
  if (out.send_ns == 0) return DecodeError::kSendTime;
  // Probes carry no count; trace probes are never counted, so their replies
  // carry none either; a counted reply includes at least its own probe.
  const bool counted_reply = out.type == ProbeType::kReply && !out.trace();
  if (counted_reply ? out.received == 0 : out.received != 0) return DecodeError::kReceived;
  return DecodeError::kOk;
}

ProbePacket makeReply(const ProbePacket& p, uint32_t received) {
  ProbePacket r = p;
  r.type = ProbeType::kReply;
  r.received = p.trace() ? 0 : received;
  return r;
}

}  // namespace netdiag::collector
