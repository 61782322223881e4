#include "actuator/webhook_executor.h"

#include <optional>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace netdiag::actuator {
namespace {

struct Url {
  std::string origin, host_port, path;  // origin: scheme://host:port
};

std::optional<Url> parseUrl(const std::string& url, std::string* error) {
  size_t start = 0;
  for (const char* scheme : {"http://", "https://"}) {
    const std::string s(scheme);
    if (url.compare(0, s.size(), s) == 0) start = s.size();
  }
  if (start == 0) {
    *error = "webhook url \"" + url + "\" is not http(s)://HOST[:PORT]/PATH";
    return std::nullopt;
  }
  const size_t slash = url.find('/', start);
  Url u{url.substr(0, slash),
        url.substr(start, slash == std::string::npos ? std::string::npos : slash - start),
        slash == std::string::npos ? "/" : url.substr(slash)};
  if (u.host_port.empty()) {
    *error = "webhook url \"" + url + "\" has no host";
    return std::nullopt;
  }
  return u;
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

}  // namespace

std::string checkWebhookUrl(const std::string& url) {
  std::string error;
  parseUrl(url, &error);
  return error;
}

std::string webhookBody(const v1::DrainAction& action, std::string_view agent,
                        std::string_view ifname) {
  nlohmann::json j{
      {"agent", std::string(agent)},
      {"port", action.port()},
      {"interface", std::string(ifname)},
      {"op", action.op() == v1::DrainAction::DRAIN ? "drain" : "restore"},
      {"incident", action.incident()},
      {"nonce", action.nonce()},
      {"issued_at_ms", action.issued_at_ms()},
      {"expires_at_ms", action.expires_at_ms()},
      {"reason", action.reason()},
      {"mac", hex(action.mac())},
  };
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool WebhookExecutor::execute(const v1::DrainAction& action, std::string_view agent,
                              std::string_view ifname, std::string* detail) {
  std::string error;
  auto url = parseUrl(options_.url, &error);
  if (!url) {
    *detail = error;
    return false;
  }
  httplib::Client client(url->origin);
  const auto timeout = std::chrono::duration<double>(options_.timeout_s);
  const auto sec = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const auto usec = std::chrono::duration_cast<std::chrono::microseconds>(timeout - sec);
  client.set_connection_timeout(sec.count(), usec.count());
  client.set_read_timeout(sec.count(), usec.count());
  client.set_write_timeout(sec.count(), usec.count());
  auto res = client.Post(url->path, webhookBody(action, agent, ifname), "application/json");
  if (!res) {
    *detail = "POST " + options_.url + ": " + httplib::to_string(res.error());
    return false;
  }
  if (res->status < 200 || res->status > 299) {
    std::string body = res->body.substr(0, 200);
    *detail = "POST " + options_.url + " answered " + std::to_string(res->status) +
              (body.empty() ? "" : ": " + body);
    return false;
  }
  return true;
}

}  // namespace netdiag::actuator
