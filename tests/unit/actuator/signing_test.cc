// The drain action's mac: it covers every field and the agent it is for,
// and the key file is refused when it is short or readable by others.

#include "actuator/signing.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/unit/actuator/test_keys.h"

namespace netdiag::actuator {
namespace {

using testing::signedAction;
using testing::testKey;

TEST(Signing, AnActionVerifiesOnlyUnchangedForItsAgentUnderItsKey) {
  const v1::DrainAction a = signedAction("leaf0", "leaf0:swp3", 1000, 7);
  EXPECT_TRUE(verify(testKey(), "leaf0", a));
  EXPECT_FALSE(verify(testKey(), "leaf1", a)) << "replayed to another agent";
  EXPECT_FALSE(verify(testKey('x'), "leaf0", a)) << "another key";

  const std::vector<std::function<void(v1::DrainAction&)>> edits = {
      [](v1::DrainAction& x) { x.set_incident(43); },
      [](v1::DrainAction& x) { x.set_port("leaf0:swp4"); },
      [](v1::DrainAction& x) { x.set_op(v1::DrainAction::RESTORE); },
      [](v1::DrainAction& x) { x.set_nonce(8); },
      [](v1::DrainAction& x) { x.set_issued_at_ms(999); },
      [](v1::DrainAction& x) { x.set_expires_at_ms(x.expires_at_ms() + 1); },
      [](v1::DrainAction& x) { x.set_reason("other"); },
      [](v1::DrainAction& x) { x.set_mac(""); },
      [](v1::DrainAction& x) { x.mutable_mac()->back() ^= 1; },
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    v1::DrainAction b = a;
    edits[i](b);
    EXPECT_FALSE(verify(testKey(), "leaf0", b)) << "edit " << i;
  }
}

TEST(Signing, FieldsCannotRunIntoEachOther) {
  v1::DrainAction a, b;
  a.set_port("leaf0:swp1");
  a.set_reason("2x");
  b.set_port("leaf0:swp12");
  b.set_reason("x");
  EXPECT_NE(signedBytes(a, "leaf0"), signedBytes(b, "leaf0"));
}

TEST(Signing, KeyFilesAreReadStrictly) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("nd-key-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& bytes, mode_t mode) {
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    ::chmod(path.c_str(), mode);
    return path;
  };
  std::string error;
  auto key = loadDrainKey(write("good", std::string(44, 'a') + "\n", 0600), &error);
  ASSERT_TRUE(key) << error;
  EXPECT_EQ(key->bytes, std::string(44, 'a'));

  const std::string shared = write("shared", std::string(44, 'a'), 0640);
  EXPECT_FALSE(loadDrainKey(shared, &error));
  EXPECT_NE(error.find("group or others"), std::string::npos) << error;
  EXPECT_NE(error.find(shared), std::string::npos) << error;

  EXPECT_FALSE(loadDrainKey(write("short", "tooshort\n", 0600), &error));
  EXPECT_NE(error.find("at least 32"), std::string::npos) << error;
  EXPECT_FALSE(loadDrainKey(write("long", std::string(5000, 'a'), 0600), &error));
  EXPECT_FALSE(loadDrainKey((dir / "missing").string(), &error));
  EXPECT_FALSE(loadDrainKey(dir.string(), &error)) << "a directory";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace netdiag::actuator
