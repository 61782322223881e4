#include "collector/lldp.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

namespace netdiag::collector {
namespace {

// ---- a small encoder, the decoder's mirror, for round trips ----

std::string tlv(uint8_t type, const std::string& value) {
  const auto header = static_cast<uint16_t>(type << 9 | value.size());
  return std::string{static_cast<char>(header >> 8), static_cast<char>(header & 0xff)} + value;
}

std::string encodePdu(const LldpInfo& info, const std::vector<std::string>& extra_tlvs = {},
                      bool end = true) {
  std::string pdu = tlv(kLldpChassisId,
                        std::string(1, static_cast<char>(info.chassis_subtype)) + info.chassis_id);
  pdu += tlv(kLldpPortId, std::string(1, static_cast<char>(info.port_subtype)) + info.port_id);
  pdu += tlv(kLldpTtl,
             std::string{static_cast<char>(info.ttl >> 8), static_cast<char>(info.ttl & 0xff)});
  for (const auto& t : extra_tlvs) pdu += t;
  if (info.port_description) pdu += tlv(kLldpPortDescription, *info.port_description);
  if (info.system_name) pdu += tlv(kLldpSystemName, *info.system_name);
  if (end) pdu += tlv(kLldpEnd, "");
  return pdu;
}

const std::string kSrcMac("\x02\x00\x00\x00\x00\x01", 6);

std::string encodeFrame(const std::string& pdu, int vlan_tags = 0, size_t pad_to = 60) {
  std::string f = std::string("\x01\x80\xc2\x00\x00\x0e", 6) + kSrcMac;
  for (int i = 0; i < vlan_tags; ++i) f += std::string("\x81\x00\x00\x05", 4);
  f += std::string("\x88\xcc", 2) + pdu;
  if (f.size() < pad_to) f.resize(pad_to, '\0');
  return f;
}

std::optional<LldpInfo> decode(const std::string& frame, std::string* error = nullptr) {
  std::string e;
  auto r = decodeLldpFrame(reinterpret_cast<const uint8_t*>(frame.data()), frame.size(),
                           error ? error : &e);
  return r;
}

LldpInfo leaf1swp3() {
  LldpInfo info;
  info.chassis_subtype = kChassisMac;
  info.chassis_id = std::string("\x44\x38\x39\x00\x00\x1f", 6);
  info.port_subtype = kPortInterfaceName;
  info.port_id = "swp3";
  info.ttl = 120;
  info.system_name = "leaf1";
  info.port_description = "to host1";
  return info;
}

TEST(LldpDecode, TypicalSwitchFrame) {
  std::string error;
  const auto info = decode(encodeFrame(encodePdu(leaf1swp3())), &error);
  ASSERT_TRUE(info) << error;
  EXPECT_EQ(info->neighbor(), "leaf1:swp3");
  EXPECT_EQ(info->chassisText(), "44:38:39:00:00:1f");
  EXPECT_EQ(info->ttl, 120);
  EXPECT_EQ(info->port_description, "to host1");
}

TEST(LldpDecode, IdSubtypesAreRendered) {
  LldpInfo info = leaf1swp3();
  info.system_name.reset();
  EXPECT_EQ(decode(encodeFrame(encodePdu(info)))->neighbor(), "44:38:39:00:00:1f:swp3");

  info.chassis_subtype = kChassisNetworkAddress;
  info.chassis_id = std::string("\x01\x0a\x00\x00\x07", 5);
  info.port_subtype = kPortMac;
  info.port_id = std::string("\xaa\xbb\xcc\x00\x11\x22", 6);
  EXPECT_EQ(decode(encodeFrame(encodePdu(info)))->neighbor(), "10.0.0.7:aa:bb:cc:00:11:22");

  info.chassis_subtype = kChassisNetworkAddress;
  info.chassis_id =
      std::string("\x02", 1) + std::string("\x20\x01\x0d\xb8", 4) + std::string(11, '\0') + "\x01";
  info.port_subtype = kPortLocal;
  info.port_id = "Ethernet12";
  EXPECT_EQ(decode(encodeFrame(encodePdu(info)))->neighbor(), "2001:db8::1:Ethernet12");

  info.chassis_subtype = kChassisLocal;
  info.chassis_id = std::string("\x00\x7f", 2);  // not printable: hex
  info.port_subtype = kPortNetworkAddress;
  info.port_id = std::string("\x01\xc0\xa8\x01\x02", 5);
  EXPECT_EQ(decode(encodeFrame(encodePdu(info)))->neighbor(), "00:7f:192.168.1.2");

  for (uint8_t sub :
       {kChassisComponent, kChassisInterfaceAlias, kChassisPortComponent, kChassisInterfaceName}) {
    info.chassis_subtype = sub;
    info.chassis_id = "spine0";
    info.port_subtype = kPortInterfaceAlias;
    info.port_id = "uplink-1";
    EXPECT_EQ(decode(encodeFrame(encodePdu(info)))->neighbor(), "spine0:uplink-1");
  }
  // An empty system name falls back to the chassis ID too.
  info.system_name = "";
  EXPECT_EQ(decode(encodeFrame(encodePdu(info)))->neighbor(), "spine0:uplink-1");
}

TEST(LldpDecode, VlanTagsPaddingAndUnknownTlvs) {
  const std::vector<std::string> extra = {tlv(127, std::string("\x00\x80\xc2\x01\x00\x05", 6)),
                                          tlv(8, std::string(12, 'm')), tlv(6, "descr")};
  for (int tags = 0; tags <= 2; ++tags) {
    const auto info = decode(encodeFrame(encodePdu(leaf1swp3(), extra), tags, 200));
    ASSERT_TRUE(info) << tags;
    EXPECT_EQ(info->neighbor(), "leaf1:swp3");
  }
  // No End TLV, PDU ends exactly at the buffer's end: accepted.
  EXPECT_TRUE(decode(encodeFrame(encodePdu(leaf1swp3(), {}, false), 0, 0)));
}

TEST(LldpDecode, MalformedFramesAreRejectedWithAClearReason) {
  const std::string chassis = tlv(kLldpChassisId, std::string("\x04\x44\x38\x39\x00\x00\x1f", 7));
  const std::string port = tlv(kLldpPortId, "\x05swp3");
  const std::string ttl = tlv(kLldpTtl, std::string("\x00\x78", 2));
  struct Case {
    std::string frame;
    std::string error;
  };
  const std::vector<Case> cases = {
      {std::string(10, '\0'), "shorter than an Ethernet header"},
      {std::string(12, '\0') + "\x08\x00" + std::string(40, '\0'), "ethertype 0x0800 is not LLDP"},
      {std::string(12, '\0') + std::string("\x81\x00\x00", 3), "truncated inside its VLAN tags"},
      {encodeFrame(port + chassis + ttl, 0, 0), "expected the chassis ID TLV"},
      {encodeFrame(chassis + ttl + port, 0, 0), "expected the port ID TLV"},
      {encodeFrame(chassis + port, 0, 0), "ends before its TTL TLV"},
      {encodeFrame("", 0, 0), "ends before its chassis ID TLV"},
      {encodeFrame(chassis + port + ttl + chassis, 0, 0), "duplicate mandatory TLV"},
      {encodeFrame(chassis + port + tlv(kLldpTtl, "\x01"), 0, 0), "TTL of length 1"},
      {encodeFrame(tlv(kLldpChassisId, "\x04\x01\x02"), 0, 0), "MAC address of 2 bytes"},
      {encodeFrame(tlv(kLldpChassisId, "\x09x"), 0, 0), "reserved subtype 9"},
      {encodeFrame(tlv(kLldpChassisId, std::string("\x00x", 2)), 0, 0), "reserved subtype 0"},
      {encodeFrame(tlv(kLldpChassisId, "\x04"), 0, 0), "ID TLV of length 1"},
      {encodeFrame(chassis + tlv(kLldpPortId, std::string("\x04\x01\x0a\x00", 4)), 0, 0),
       "port ID at offset 9: network address of 2 bytes for family 1"},
      {encodeFrame(chassis.substr(0, 5), 0, 0), "length 7 runs past the end (3 bytes left)"},
      {encodeFrame(chassis + port + ttl + std::string("\x00", 1), 0, 0), "truncated TLV header"},
      {encodeFrame(chassis + port + ttl + tlv(0, "x"), 0, 0), "End TLV with length 1"},
      {encodeFrame(chassis + port + ttl + tlv(5, "a") + tlv(5, "b"), 0, 0),
       "duplicate system name TLV"},
  };
  for (const auto& c : cases) {
    std::string error;
    EXPECT_FALSE(decode(c.frame, &error)) << c.error;
    EXPECT_NE(error.find(c.error), std::string::npos)
        << "want \"" << c.error << "\", got \"" << error << "\"";
  }
}

LldpInfo randomInfo(std::mt19937& rng) {
  auto bytes = [&](size_t n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    return s;
  };
  LldpInfo info;
  info.chassis_subtype = static_cast<uint8_t>(1 + rng() % 7);
  if (info.chassis_subtype == kChassisMac) {
    info.chassis_id = bytes(6);
  } else if (info.chassis_subtype == kChassisNetworkAddress) {
    info.chassis_id = rng() % 2 ? "\x01" + bytes(4) : "\x02" + bytes(16);
  } else {
    info.chassis_id = bytes(1 + rng() % 255);
  }
  info.port_subtype = static_cast<uint8_t>(1 + rng() % 7);
  if (info.port_subtype == kPortMac) {
    info.port_id = bytes(6);
  } else if (info.port_subtype == kPortNetworkAddress) {
    info.port_id = rng() % 2 ? "\x01" + bytes(4) : "\x02" + bytes(16);
  } else {
    info.port_id = bytes(1 + rng() % 255);
  }
  info.ttl = static_cast<uint16_t>(rng());
  if (rng() % 2) info.system_name = bytes(rng() % 256);
  if (rng() % 2) info.port_description = bytes(rng() % 256);
  return info;
}

// Property: encode(info) decodes back to info, through tags, padding and
// unknown TLVs.
TEST(LldpDecode, RoundTripsRandomNeighbours) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 2000; ++trial) {
    const LldpInfo info = randomInfo(rng);
    std::vector<std::string> extra;
    for (int k = static_cast<int>(rng() % 3); k > 0; --k)
      extra.push_back(tlv(static_cast<uint8_t>(6 + rng() % 122), std::string(rng() % 50, 'z')));
    const std::string frame =
        encodeFrame(encodePdu(info, extra), static_cast<int>(rng() % 2), rng() % 2 ? 60 : 0);
    std::string error;
    const auto got = decode(frame, &error);
    ASSERT_TRUE(got) << "trial " << trial << ": " << error;
    EXPECT_EQ(got->chassis_subtype, info.chassis_subtype);
    EXPECT_EQ(got->chassis_id, info.chassis_id);
    EXPECT_EQ(got->port_subtype, info.port_subtype);
    EXPECT_EQ(got->port_id, info.port_id);
    EXPECT_EQ(got->ttl, info.ttl);
    EXPECT_EQ(got->system_name, info.system_name);
    EXPECT_EQ(got->port_description, info.port_description);
    EXPECT_FALSE(got->neighbor().empty());
  }
}

// Property: every truncation of a valid frame and random or mutated bytes
// are rejected or decoded, never crash (run under ASan to check bounds).
TEST(LldpDecode, TruncatedRandomAndMutatedFramesNeverCrash) {
  std::mt19937 rng(77);
  const std::string full = encodeFrame(encodePdu(leaf1swp3()), 1, 0);
  for (size_t len = 0; len < full.size(); ++len) {
    // Exact copies so ASan sees reads past `len`.
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<long>(len));
    std::string error;
    const auto r = decodeLldpFrame(cut.data(), cut.size(), &error);
    if (!r) {
      EXPECT_FALSE(error.empty()) << len;
    }
  }
  int decoded = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<uint8_t> buf;
    if (trial % 2) {
      buf.resize(rng() % 300);
      for (auto& b : buf) b = static_cast<uint8_t>(rng());
      if (buf.size() >= 14 && rng() % 2) {  // often make it look like LLDP
        buf[12] = 0x88;
        buf[13] = 0xcc;
      }
    } else {
      buf.assign(full.begin(), full.end());
      for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k)
        buf[rng() % buf.size()] = static_cast<uint8_t>(rng());
    }
    std::string error;
    const auto r = decodeLldpFrame(buf.data(), buf.size(), &error);
    if (r) {
      ++decoded;
      (void)r->neighbor();
    } else {
      EXPECT_FALSE(error.empty());
    }
  }
  EXPECT_GT(decoded, 0);  // mutations that keep the frame valid do decode
}

TEST(LldpCapture, MissingInterfaceIsReportedNotFatal) {
  std::string error;
  LldpCapture capture("h0", {"nd-no-such0"}, &error, {.refresh_s = 60, .reopen_s = 0});
  EXPECT_NE(error.find("nd-no-such0"), std::string::npos) << error;
  EXPECT_EQ(capture.openHandles(), 0u);
  std::vector<std::string> errors;
  EXPECT_TRUE(capture.poll(1, &errors).empty());
  EXPECT_TRUE(errors.empty());  // the same failure is not repeated on every retry
}

// ---- live capture over a veth pair in a temporary network namespace ----

class LldpLive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces, raw sockets)";
    if (!sh("command -v ip")) GTEST_SKIP() << "no `ip` command (iproute2)";
    ns_ = "nd-c2-lldp-" + std::to_string(getpid());
    if (!sh("ip netns add " + ns_)) {
      ns_.clear();
      GTEST_SKIP() << "cannot create a network namespace (ip netns add failed)";
    }
    ASSERT_TRUE(sh("ip -n " + ns_ + " link add la type veth peer name lb"));
    ASSERT_TRUE(sh("ip -n " + ns_ + " link set la up"));
    ASSERT_TRUE(sh("ip -n " + ns_ + " link set lb up"));
  }
  void TearDown() override {
    if (!ns_.empty()) sh("ip netns del " + ns_);
  }
  static bool sh(const std::string& cmd) {
    return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
  }

  // Runs `body` on a thread inside the namespace (setns affects one thread).
  void inNamespace(const std::function<void()>& body) {
    std::string setup;
    std::thread t([&] {
      const int fd = ::open(("/run/netns/" + ns_).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
        setup = std::string("setns: ") + std::strerror(errno);
        if (fd >= 0) ::close(fd);
        return;
      }
      ::close(fd);
      body();
    });
    t.join();
    ASSERT_TRUE(setup.empty()) << setup;
  }

  std::string ns_;
};

bool inject(const std::string& ifname, const std::string& frame) {
  char errbuf[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_live(ifname.c_str(), 2048, 0, 10, errbuf);
  if (!p) return false;
  const int n = pcap_inject(p, frame.data(), frame.size());
  pcap_close(p);
  return n == static_cast<int>(frame.size());
}

// Polls until something is reported or ~3 s pass.
std::vector<v1::LldpNeighbor> pollFor(LldpCapture& capture, double now,
                                      std::vector<std::string>* errors) {
  for (int i = 0; i < 300; ++i) {
    auto got = capture.poll(now, errors);
    if (!got.empty()) return got;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

TEST_F(LldpLive, SeesAnInjectedFrameOnThePeerAndDeduplicates) {
  inNamespace([&] {
    std::string error;
    LldpCapture capture("host1", {"lb"}, &error, {.refresh_s = 30, .reopen_s = 0});
    ASSERT_TRUE(error.empty()) << error;
    ASSERT_EQ(capture.openHandles(), 1u);
    ASSERT_EQ(capture.selectableFds().size(), 1u);

    const std::string frame = encodeFrame(encodePdu(leaf1swp3()));
    ASSERT_TRUE(inject("la", frame));
    std::vector<std::string> errors;
    auto got = pollFor(capture, 100, &errors);
    ASSERT_EQ(got.size(), 1u) << (errors.empty() ? "" : errors.front());
    EXPECT_EQ(got[0].port(), "host1:lb");
    EXPECT_EQ(got[0].neighbor(), "leaf1:swp3");
    EXPECT_DOUBLE_EQ(got[0].t(), 100);

    // The same neighbour again, before the refresh interval: not reported.
    ASSERT_TRUE(inject("la", frame));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_TRUE(capture.poll(110, &errors).empty());
    EXPECT_EQ(capture.frames(), 2u);
    // After the refresh interval: reported again.
    ASSERT_TRUE(inject("la", frame));
    got = pollFor(capture, 131, &errors);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_DOUBLE_EQ(got[0].t(), 131);

    // Recabled: a different neighbour is reported at once.
    LldpInfo other = leaf1swp3();
    other.system_name = "leaf2";
    other.port_id = "swp7";
    ASSERT_TRUE(inject("la", encodeFrame(encodePdu(other))));
    got = pollFor(capture, 132, &errors);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].neighbor(), "leaf2:swp7");
    // ...and so is a return to the former one, refresh interval or not.
    ASSERT_TRUE(inject("la", frame));
    got = pollFor(capture, 132.5, &errors);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].neighbor(), "leaf1:swp3");
    // A goodbye (TTL 0) forgets it: the next frame is reported at once.
    LldpInfo bye = leaf1swp3();
    bye.ttl = 0;
    ASSERT_TRUE(inject("la", encodeFrame(encodePdu(bye))));
    ASSERT_TRUE(inject("la", frame));
    got = pollFor(capture, 132.7, &errors);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].neighbor(), "leaf1:swp3");

    // A malformed LLDP frame is counted and reported, not fatal.
    ASSERT_TRUE(inject("la", encodeFrame(tlv(kLldpPortId, "\x05swp1"))));
    for (int i = 0; i < 100 && capture.malformed() == 0; ++i) {
      capture.poll(133, &errors);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(capture.malformed(), 1u);
    ASSERT_FALSE(errors.empty());
    EXPECT_NE(errors.back().find("lb: malformed LLDP frame: "), std::string::npos) << errors.back();
    // Non-LLDP traffic never reaches the decoder (the BPF filter).
    const uint64_t malformed = capture.malformed();
    ASSERT_TRUE(inject("la", std::string(12, '\x02') + "\x08\x00" + std::string(46, 'x')));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    capture.poll(134, &errors);
    EXPECT_EQ(capture.malformed(), malformed);
  });
}

// Re-plugging a cable deletes and re-creates the interface: the capture
// reports the failure once, reopens by name and sees the new neighbour.
TEST_F(LldpLive, ReopensAnInterfaceThatWasRecreated) {
  inNamespace([&] {
    std::string error;
    LldpCapture capture("host1", {"lb"}, &error, {.refresh_s = 30, .reopen_s = 0});
    ASSERT_TRUE(error.empty()) << error;
    ASSERT_TRUE(sh("ip link del la"));  // removes lb too
    std::vector<std::string> errors;
    for (int i = 0; i < 100 && capture.openHandles() == 1; ++i) {
      capture.poll(200, &errors);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(capture.openHandles(), 0u);
    ASSERT_GE(errors.size(), 1u);
    EXPECT_NE(errors[0].find("lb"), std::string::npos) << errors[0];

    ASSERT_TRUE(sh("ip link add la type veth peer name lb"));
    ASSERT_TRUE(sh("ip link set la up"));
    ASSERT_TRUE(sh("ip link set lb up"));
    capture.poll(201, &errors);
    ASSERT_EQ(capture.openHandles(), 1u) << (errors.empty() ? "" : errors.back());
    LldpInfo other = leaf1swp3();
    other.port_id = "swp9";
    ASSERT_TRUE(inject("la", encodeFrame(encodePdu(other))));
    const auto got = pollFor(capture, 202, &errors);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].neighbor(), "leaf1:swp9");
  });
}

}  // namespace
}  // namespace netdiag::collector
