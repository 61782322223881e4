#include "bus/tick.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace netdiag::bus {

double tickTime(double wall_s, double period_s) { return std::floor(wall_s / period_s) * period_s; }

std::string encodeTick(double t) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", t);
  return buf;
}

std::optional<double> decodeTick(std::string_view body) {
  if (body.empty() || body.size() > 32) return std::nullopt;
  for (char c : body) {
    if ((c < '0' || c > '9') && c != '.') return std::nullopt;
  }
  const std::string text(body);
  char* end = nullptr;
  errno = 0;
  const double t = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(t)) return std::nullopt;
  return t;
}

std::string publishTick(Connection& connection, double t) {
  if (!connection.connected()) return "not connected";
  const std::string subject = connection.options().subjects.tick(), body = encodeTick(t);
  natsMsg* msg = nullptr;
  natsStatus st =
      natsMsg_Create(&msg, subject.c_str(), nullptr, body.data(), static_cast<int>(body.size()));
  if (st == NATS_OK) st = natsMsgHeader_Set(msg, "Nats-Msg-Id", ("tick:" + body).c_str());
  if (st == NATS_OK) st = natsConnection_PublishMsg(connection.nats(), msg);
  natsMsg_Destroy(msg);
  return st == NATS_OK ? "" : natsStatus_GetText(st);
}

}  // namespace netdiag::bus
