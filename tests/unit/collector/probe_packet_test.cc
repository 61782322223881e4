// The probe codec: round trips, strict rejection, and property tests over
// random and mutated bytes (never crashes, never accepts a malformed packet).

#include "collector/probe_packet.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace netdiag::collector {
namespace {

ProbePacket randomValid(std::mt19937_64& rng) {
  ProbePacket p;
  const int kind = static_cast<int>(rng() % 4);
  p.type = kind < 2 ? ProbeType::kProbe : ProbeType::kReply;
  p.flags = (kind % 2 == 1) ? kProbeFlagTrace : 0;
  p.session = static_cast<uint32_t>(rng());
  p.seq = static_cast<uint32_t>(rng());
  p.flow = rng();
  p.send_ns = rng() | 1;
  if (p.type == ProbeType::kReply && !p.trace()) p.received = static_cast<uint32_t>(rng()) | 1;
  return p;
}

DecodeError decode(const std::vector<uint8_t>& b, ProbePacket& out) {
  return decodeProbe(std::span<const uint8_t>(b.data(), b.size()), out);
}

TEST(ProbePacket, RoundTripsEveryKind) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10000; ++i) {
    const ProbePacket p = randomValid(rng);
    const ProbeBytes b = encodeProbe(p);
    ProbePacket q;
    ASSERT_EQ(decodeProbe(b, q), DecodeError::kOk) << i;
    EXPECT_EQ(p, q);
  }
}

TEST(ProbePacket, KnownLayout) {
  ProbePacket p;
  p.session = 0x01020304;
  p.seq = 7;
  p.flow = 40001;
  p.send_ns = 0x1122334455667788ull;
  const ProbeBytes b = encodeProbe(p);
  const std::vector<uint8_t> want = {
      'N', 'D', 'P', 'B', 1,    1,    0,    0,    1,    2,    3,    4,    0,    0,    0, 7, 0, 0,
      0,   0,   0,   0,   0x9c, 0x41, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0, 0, 0, 0};
  EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.end()), want);
}

TEST(ProbePacket, RejectsEachBrokenRule) {
  ProbePacket p;
  p.send_ns = 5;
  const ProbeBytes good = encodeProbe(p);
  auto with = [&](size_t at, uint8_t v) {
    std::vector<uint8_t> b(good.begin(), good.end());
    b[at] = v;
    return b;
  };
  ProbePacket out;
  EXPECT_EQ(decode({}, out), DecodeError::kLength);
  EXPECT_EQ(decode(std::vector<uint8_t>(good.begin(), good.end() - 1), out), DecodeError::kLength);
  std::vector<uint8_t> longer(good.begin(), good.end());
  longer.push_back(0);
  EXPECT_EQ(decode(longer, out), DecodeError::kLength);
  EXPECT_EQ(decode(with(0, 'X'), out), DecodeError::kMagic);
  EXPECT_EQ(decode(with(4, 2), out), DecodeError::kVersion);
  EXPECT_EQ(decode(with(4, 0), out), DecodeError::kVersion);
  EXPECT_EQ(decode(with(5, 0), out), DecodeError::kType);
  EXPECT_EQ(decode(with(5, 3), out), DecodeError::kType);
  EXPECT_EQ(decode(with(6, 2), out), DecodeError::kFlags);
  EXPECT_EQ(decode(with(6, 0x80), out), DecodeError::kFlags);
  EXPECT_EQ(decode(with(7, 1), out), DecodeError::kReserved);
  // A probe carries no count; a counted reply carries at least its own probe.
  EXPECT_EQ(decode(with(35, 1), out), DecodeError::kReceived);
  EXPECT_EQ(decode(with(5, 2), out), DecodeError::kReceived);
  // A trace reply is never counted.
  auto trace_reply = with(5, 2);
  trace_reply[6] = kProbeFlagTrace;
  trace_reply[35] = 3;
  EXPECT_EQ(decode(trace_reply, out), DecodeError::kReceived);
  trace_reply[35] = 0;
  EXPECT_EQ(decode(trace_reply, out), DecodeError::kOk);
  std::vector<uint8_t> zero_time(good.begin(), good.end());
  for (int i = 24; i < 32; ++i) zero_time[i] = 0;
  EXPECT_EQ(decode(zero_time, out), DecodeError::kSendTime);
  for (int e = 0; e <= static_cast<int>(DecodeError::kReceived); ++e) {
    EXPECT_NE(std::string(describe(static_cast<DecodeError>(e))), "");
  }
}

// Random bytes of any length: no crash, and anything accepted must be the
// canonical encoding of what it decoded to (so nothing malformed slips by).
TEST(ProbePacket, RandomBytesNeverDecodeUnlessCanonical) {
  std::mt19937_64 rng(2);
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    std::vector<uint8_t> b(rng() % 80);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    // Half the time start from a valid header so the deeper checks are reached.
    if (b.size() == kProbeSize && i % 2 == 0) {
      b[0] = 'N', b[1] = 'D', b[2] = 'P', b[3] = 'B', b[4] = kProbeVersion;
      b[5] = static_cast<uint8_t>(1 + rng() % 2);
      b[6] = static_cast<uint8_t>(rng() % 3);
      b[7] = static_cast<uint8_t>(rng() % 4 == 0 ? 1 : 0);
    }
    ProbePacket p;
    if (decode(b, p) != DecodeError::kOk) continue;
    ++accepted;
    const ProbeBytes again = encodeProbe(p);
    ASSERT_EQ(std::vector<uint8_t>(again.begin(), again.end()), b);
    EXPECT_NE(p.send_ns, 0u);
    EXPECT_EQ((p.flags & ~kProbeFlagTrace), 0);
  }
  EXPECT_GT(accepted, 0);  // the property was exercised on accepted inputs too
}

// Every single-bit flip of a valid packet either is rejected or decodes to a
// packet whose encoding is exactly the flipped bytes.
TEST(ProbePacket, BitFlipsAreRejectedOrCanonical) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200; ++i) {
    const ProbeBytes good = encodeProbe(randomValid(rng));
    for (size_t bit = 0; bit < kProbeSize * 8; ++bit) {
      std::vector<uint8_t> b(good.begin(), good.end());
      b[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      ProbePacket p;
      const DecodeError e = decode(b, p);
      if (bit < 32 || (bit >= 56 && bit < 64)) {
        EXPECT_NE(e, DecodeError::kOk) << "bit " << bit;  // magic, reserved
      }
      if (e == DecodeError::kOk) {
        const ProbeBytes again = encodeProbe(p);
        ASSERT_EQ(std::vector<uint8_t>(again.begin(), again.end()), b);
      }
    }
  }
}

TEST(ProbePacket, ReplyKeepsTheProbeAndAddsTheCount) {
  ProbePacket p;
  p.session = 9;
  p.seq = 4;
  p.flow = 3;
  p.send_ns = 77;
  const ProbePacket r = makeReply(p, 5);
  EXPECT_EQ(r.type, ProbeType::kReply);
  EXPECT_EQ(r.received, 5u);
  EXPECT_EQ(r.seq, 4u);
  EXPECT_EQ(r.send_ns, 77u);
  p.flags = kProbeFlagTrace;
  EXPECT_EQ(makeReply(p, 5).received, 0u);  // trace probes are not counted
  ProbePacket q;
  EXPECT_EQ(decodeProbe(encodeProbe(makeReply(p, 5)), q), DecodeError::kOk);
}

}  // namespace
}  // namespace netdiag::collector
