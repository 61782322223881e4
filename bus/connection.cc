#include "bus/connection.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

namespace netdiag::bus {
namespace {

int64_t millis(double s) { return static_cast<int64_t>(std::llround(s * 1000)); }

bool readable(const std::string& path) { return std::ifstream(path).good(); }

// The servers of a comma-separated URL list (one for a single server).
std::vector<std::string> splitUrls(const std::string& urls) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= urls.size();) {
    const size_t end = std::min(urls.find(',', start), urls.size());
    out.push_back(urls.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string statusText(natsStatus s, const jsErrCode* code) {
  std::string text = natsStatus_GetText(s);
  if (code != nullptr && *code != 0) text += " (JetStream error " + std::to_string(*code) + ")";
  const char* last = nats_GetLastError(nullptr);
  if (last != nullptr && *last != '\0' && text.find(last) == std::string::npos) {
    text += ": ";
    text += last;
  }
  return text;
}

std::string redactedUrl(const std::string& url) {
  std::string out;
  for (std::string one : splitUrls(url)) {
    const size_t scheme = one.find("//");
    const size_t at = one.rfind('@');
    if (scheme != std::string::npos && at != std::string::npos && at > scheme) {
      one = one.substr(0, scheme + 2) + "***" + one.substr(at);
    }
    out += (out.empty() ? "" : ",") + one;
  }
  return out;
}

std::string checkBusOptions(const BusOptions& o) {
  if (o.url.empty()) return "bus: no URL (nats://HOST:PORT)";
  for (const std::string& one : splitUrls(o.url)) {
    if (one.rfind("nats://", 0) != 0 && one.rfind("tls://", 0) != 0) {
      return "bus URL \"" + redactedUrl(one) + "\": expected nats://HOST:PORT or tls://HOST:PORT";
    }
    const size_t colon = one.rfind(':');
    if (colon == std::string::npos || colon + 1 >= one.size() || colon < one.find("//") + 2 ||
        one.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
      return "bus URL \"" + redactedUrl(one) + "\": needs a numeric port";
    }
  }
  if (std::string bad = checkSubjects(o.subjects); !bad.empty()) return bad;
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return "bus TLS: a client certificate needs its key and a key its certificate";
  }
  for (const std::string* f : {&o.creds_file, &o.tls_ca, &o.tls_cert, &o.tls_key}) {
    if (!f->empty() && !readable(*f)) return "bus: cannot read " + *f;
  }
  if (!(o.connect_timeout_s > 0) || !(o.reconnect_wait_s > 0) || !(o.request_timeout_s > 0)) {
    return "bus: timeouts must be positive";
  }
  return {};
}

std::unique_ptr<Connection> Connection::open(const BusOptions& o, std::string* error) {
  if (std::string bad = checkBusOptions(o); !bad.empty()) {
    *error = bad;
    return nullptr;
  }
  std::unique_ptr<Connection> c(new Connection(o));
  auto fail = [&](const char* what, natsStatus s) -> std::unique_ptr<Connection> {
    *error = std::string("bus: ") + what + ": " + statusText(s);
    return nullptr;
  };
  natsStatus s = natsOptions_Create(&c->opts_);
  if (s != NATS_OK) return fail("options", s);
  natsOptions* opts = c->opts_;
  c->callback_ref_ = new StatusRef(c->status_);
  // A cluster's list goes in as servers: nats.c 3.4 takes a comma-separated
  // URL but then connects to none of it ("No server available").
  const std::vector<std::string> urls = splitUrls(o.url);
  std::vector<const char*> servers;
  for (const std::string& u : urls) servers.push_back(u.c_str());
  if ((s = natsOptions_SetServers(opts, servers.data(), static_cast<int>(servers.size()))) !=
      NATS_OK) {
    return fail("URL", s);
  }
  if (!o.name.empty()) natsOptions_SetName(opts, o.name.c_str());
  natsOptions_SetTimeout(opts, millis(o.connect_timeout_s));
  natsOptions_SetReconnectWait(opts, millis(o.reconnect_wait_s));
  natsOptions_SetMaxReconnect(opts, -1);  // for ever: the spool holds what waits
  natsOptions_SetDisconnectedCB(opts, &Connection::onDisconnected, c->callback_ref_);
  natsOptions_SetReconnectedCB(opts, &Connection::onReconnected, c->callback_ref_);
  natsOptions_SetClosedCB(opts, &Connection::onClosed, c->callback_ref_);
  natsOptions_SetErrorHandler(opts, &Connection::onError, c->callback_ref_);
  // With a callback the first connect too is retried in the background
  // (without one, nats.c would block here until a server answers).
  natsOptions_SetRetryOnFailedConnect(opts, true, &Connection::onConnected, c->callback_ref_);
  if (!o.inbox_prefix.empty() &&
      (s = natsOptions_SetCustomInboxPrefix(opts, o.inbox_prefix.c_str())) != NATS_OK) {
    return fail("inbox prefix", s);
  }
  if (!o.creds_file.empty() && (s = natsOptions_SetUserCredentialsFromFiles(
                                    opts, o.creds_file.c_str(), nullptr)) != NATS_OK) {
    return fail("credentials file", s);
  }
  if (!o.tls_ca.empty() || !o.tls_cert.empty() || o.url.rfind("tls://", 0) == 0) {
    if ((s = natsOptions_SetSecure(opts, true)) != NATS_OK) return fail("TLS", s);
    if (!o.tls_ca.empty() &&
        (s = natsOptions_LoadCATrustedCertificates(opts, o.tls_ca.c_str())) != NATS_OK) {
      return fail("TLS CA", s);
    }
    if (!o.tls_cert.empty() && (s = natsOptions_LoadCertificatesChain(
                                    opts, o.tls_cert.c_str(), o.tls_key.c_str())) != NATS_OK) {
      return fail("TLS certificate", s);
    }
  }
  s = natsConnection_Connect(&c->nc_, opts);
  if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) {
    return fail(("connect to " + redactedUrl(o.url)).c_str(), s);
  }
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = millis(o.request_timeout_s);
  if ((s = natsConnection_JetStream(&c->js_, c->nc_, &jo)) != NATS_OK) return fail("JetStream", s);
  return c;
}

Connection::~Connection() {
  if (js_ != nullptr) jsCtx_Destroy(js_);
  if (nc_ != nullptr) {
    natsConnection_Close(nc_);
    // The callbacks' last one: after it nats.c calls none of ours.
    std::unique_lock lk(status_->mu);
    status_->cv.wait_for(lk, std::chrono::seconds(5), [&] { return status_->closed; });
    lk.unlock();
    natsConnection_Destroy(nc_);
  } else {
    delete callback_ref_;  // never connected: no callback will run
  }
  if (opts_ != nullptr) natsOptions_Destroy(opts_);
}

bool Connection::connected() const {
  return nc_ != nullptr && natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED;
}

int64_t Connection::maxPayload() const {
  return connected() ? natsConnection_GetMaxPayload(nc_) : 0;
}

std::string Connection::lastError() const {
  std::lock_guard lk(status_->mu);
  return status_->last_error;
}

void Connection::Status::setError(std::string e) {
  std::lock_guard lk(mu);
  last_error = std::move(e);
}

void Connection::onDisconnected(natsConnection* /*nc*/, void* ref) {
  (*static_cast<StatusRef*>(ref))->setError("disconnected from the bus");
}

void Connection::onConnected(natsConnection* /*nc*/, void* ref) {
  (*static_cast<StatusRef*>(ref))->setError("");
}

void Connection::onReconnected(natsConnection* /*nc*/, void* ref) {
  ++(*static_cast<StatusRef*>(ref))->reconnects;
}

void Connection::onClosed(natsConnection* /*nc*/, void* ref) {
  auto* status = static_cast<StatusRef*>(ref);
  {
    std::lock_guard lk((*status)->mu);
    (*status)->closed = true;
  }
  (*status)->cv.notify_all();
  delete status;
}

void Connection::close() {
  if (nc_ != nullptr) natsConnection_Close(nc_);
}

void Connection::onError(natsConnection* /*nc*/, natsSubscription* /*sub*/, natsStatus err,
                         void* ref) {
  (*static_cast<StatusRef*>(ref))->setError("bus: " + std::string(natsStatus_GetText(err)));
}

}  // namespace netdiag::bus
