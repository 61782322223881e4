#pragma once

// The probe wire format shared by the prober and the responder: one fixed
// 36-byte UDP payload, network byte order.
//
//   off len field
//     0   4 magic     "NDPB" (0x4E445042)
//     4   1 version   1
//     5   1 type      1 probe, 2 reply
//     6   1 flags     bit 0: trace (path discovery; not counted by the responder)
//     7   1 reserved  0
//     8   4 session   random per prober start, so a restarted prober's counts start at 0
//    12   4 seq       per flow, from 0
//    16   8 flow      flow id (the plan's UDP source port)
//    24   8 send_ns   the prober's wall clock at send, ns since the Unix epoch (never 0)
//    32   4 received  replies: probes of (source, session, flow) the responder has
//                     received so far, this one included; probes: 0
//
// A reply is the probe with type 2 and `received` filled in: the same length,
// so a responder never answers with more bytes than it got. Decoding is
// strict: any other length, magic, version, type, unknown flag, non-zero
// reserved byte or a field that breaks the rules above is rejected.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace netdiag::collector {

inline constexpr uint32_t kProbeMagic = 0x4E445042;
inline constexpr uint8_t kProbeVersion = 1;
inline constexpr size_t kProbeSize = 36;
inline constexpr uint8_t kProbeFlagTrace = 0x01;

enum class ProbeType : uint8_t { kProbe = 1, kReply = 2 };

struct ProbePacket {
  ProbeType type = ProbeType::kProbe;
  uint8_t flags = 0;
  uint32_t session = 0;
  uint32_t seq = 0;
  uint64_t flow = 0;
  uint64_t send_ns = 0;
  uint32_t received = 0;

  bool trace() const { return (flags & kProbeFlagTrace) != 0; }
  bool operator==(const ProbePacket&) const = default;
};

enum class DecodeError : uint8_t {
  kOk = 0,
  kLength,
  kMagic,
  kVersion,
  kType,
  kFlags,
  kReserved,
  kSendTime,
  kReceived,
};

// A short phrase for logs and metrics labels ("bad magic").
const char* describe(DecodeError e);

using ProbeBytes = std::array<uint8_t, kProbeSize>;

// Encodes `p`; the caller keeps `p` valid (send_ns != 0, received == 0 unless
// a counted reply).
ProbeBytes encodeProbe(const ProbePacket& p);

// Decodes one datagram; on failure `out` is unspecified.
DecodeError decodeProbe(std::span<const uint8_t> bytes, ProbePacket& out);

// The reply a responder sends for probe `p` after counting it.
ProbePacket makeReply(const ProbePacket& p, uint32_t received);

}  // namespace netdiag::collector
