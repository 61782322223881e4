#include "actuator/signing.h"

#include <fstream>
#include <iterator>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>

namespace netdiag::actuator {
namespace {

void field(std::string& out, std::string_view value) {
  out += std::to_string(value.size());
  out += ':';
  out += value;
}

void field(std::string& out, uint64_t value) { field(out, std::to_string(value)); }

std::string mac(const DrainKey& key, std::string_view agent, const v1::DrainAction& action) {
  const std::string data = signedBytes(action, agent);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.bytes.data(), static_cast<int>(key.bytes.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

}  // namespace

std::optional<DrainKey> loadDrainKey(const std::string& path, std::string* error) {
  auto bytes = loadSecretFile(path, "drain key", error);
  if (!bytes) return std::nullopt;
  return DrainKey{std::move(*bytes)};
}

std::optional<std::string> loadSecretFile(const std::string& path, const std::string& name,
                                          std::string* error) {
  auto fail = [&](const std::string& what) -> std::optional<std::string> {
    if (error) *error = name + " " + path + ": " + what;
    return std::nullopt;
  };
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return fail("cannot be read");
  if (!S_ISREG(st.st_mode)) return fail("is not a regular file");
  if ((st.st_mode & 077) != 0) {
    return fail("may be read by group or others (chmod 600 it)");
  }
  if (st.st_size > static_cast<off_t>(kMaxDrainKeyBytes) + 64) {
    return fail("is larger than " + std::to_string(kMaxDrainKeyBytes) + " bytes");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot be read");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!bytes.empty() && (bytes.back() == '\n' || bytes.back() == '\r' || bytes.back() == ' ' ||
                            bytes.back() == '\t')) {
    bytes.pop_back();
  }
  if (bytes.size() < kMinDrainKeyBytes) {
    return fail("has " + std::to_string(bytes.size()) + " bytes, need at least " +
                std::to_string(kMinDrainKeyBytes));
  }
  if (bytes.size() > kMaxDrainKeyBytes) {
    return fail("is larger than " + std::to_string(kMaxDrainKeyBytes) + " bytes");
  }
  return bytes;
}

std::string signedBytes(const v1::DrainAction& action, std::string_view agent) {
  std::string out = "netdiag.v1.DrainAction";
  field(out, agent);
  field(out, action.incident());
  field(out, action.port());
  field(out, static_cast<uint64_t>(action.op()));
  field(out, action.nonce());
  field(out, action.issued_at_ms());
  field(out, action.expires_at_ms());
  field(out, action.reason());
  return out;
}

void sign(const DrainKey& key, std::string_view agent, v1::DrainAction& action) {
  action.set_mac(mac(key, agent, action));
}

bool verify(const DrainKey& key, std::string_view agent, const v1::DrainAction& action) {
  const std::string want = mac(key, agent, action);
  return action.mac().size() == want.size() &&
         CRYPTO_memcmp(action.mac().data(), want.data(), want.size()) == 0;
}

}  // namespace netdiag::actuator
