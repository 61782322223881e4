#include "collector/snmp/session.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include <net-snmp/library/large_fd_set.h>
#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>
#include <sys/socket.h>

#include "collector/clock.h"

namespace netdiag::collector::snmp {
namespace {

struct Protocol {
  const char* name;
  const oid* id;
  size_t len;
};

const Protocol* authProtocol(const std::string& name) {
  static const Protocol kAuth[] = {
      {"MD5", usmHMACMD5AuthProtocol, OID_LENGTH(usmHMACMD5AuthProtocol)},
      {"SHA", usmHMACSHA1AuthProtocol, OID_LENGTH(usmHMACSHA1AuthProtocol)},
      {"SHA-224", usmHMAC128SHA224AuthProtocol, OID_LENGTH(usmHMAC128SHA224AuthProtocol)},
      {"SHA-256", usmHMAC192SHA256AuthProtocol, OID_LENGTH(usmHMAC192SHA256AuthProtocol)},
      {"SHA-384", usmHMAC256SHA384AuthProtocol, OID_LENGTH(usmHMAC256SHA384AuthProtocol)},
      {"SHA-512", usmHMAC384SHA512AuthProtocol, OID_LENGTH(usmHMAC384SHA512AuthProtocol)},
  };
  for (const Protocol& p : kAuth)
    if (name == p.name) return &p;
  return nullptr;
}

const Protocol* privProtocol(const std::string& name) {
  static const Protocol kPriv[] = {
      {"AES", usmAESPrivProtocol, OID_LENGTH(usmAESPrivProtocol)},
      {"DES", usmDESPrivProtocol, OID_LENGTH(usmDESPrivProtocol)},
  };
  for (const Protocol& p : kPriv)
    if (name == p.name) return &p;
  return nullptr;
}

void freeOid(oid*& p) {
  std::free(p);
  p = nullptr;
}

// "host:port", "host", "[v6]:port" -> net-snmp's peer name.
std::string peerName(const std::string& address) {
  if (address.find("udp:") == 0 || address.find("udp6:") == 0) return address;
  if (!address.empty() && address[0] == '[') return "udp6:" + address;
  return "udp:" + address;
}

Varbind toVarbind(const netsnmp_variable_list* v) {
  Varbind out;
  out.oid.assign(v->name, v->name + v->name_length);
  switch (v->type) {
    case ASN_INTEGER:
      out.type = Varbind::Type::kInteger;
      out.integer = v->val.integer ? *v->val.integer : 0;
      break;
    case ASN_OCTET_STR:
      out.type = Varbind::Type::kOctets;
      if (v->val.string) out.bytes.assign(reinterpret_cast<const char*>(v->val.string), v->val_len);
      break;
    case ASN_OBJECT_ID:
      out.type = Varbind::Type::kOid;
      break;
    case ASN_IPADDRESS:
      out.type = Varbind::Type::kIpAddress;
      break;
    case ASN_COUNTER:
    case ASN_GAUGE:
    case ASN_TIMETICKS:
      out.type = v->type == ASN_COUNTER ? Varbind::Type::kCounter32
                 : v->type == ASN_GAUGE ? Varbind::Type::kGauge32
                                        : Varbind::Type::kTimeTicks;
      out.number = v->val.integer ? static_cast<uint32_t>(*v->val.integer) : 0;
      break;
    case ASN_COUNTER64:
      out.type = Varbind::Type::kCounter64;
      if (v->val.counter64)
        out.number = (static_cast<uint64_t>(v->val.counter64->high) << 32) |
                     static_cast<uint32_t>(v->val.counter64->low);
      break;
    case ASN_NULL:
      out.type = Varbind::Type::kNull;
      break;
    case SNMP_NOSUCHOBJECT:
      out.type = Varbind::Type::kNoSuchObject;
      break;
    case SNMP_NOSUCHINSTANCE:
      out.type = Varbind::Type::kNoSuchInstance;
      break;
    case SNMP_ENDOFMIBVIEW:
      out.type = Varbind::Type::kEndOfMibView;
      break;
    default:
      out.type = Varbind::Type::kOther;
      break;
  }
  return out;
}

// The USM statistics a Report names (RFC 3414 §5: usmStats 1.3.6.1.6.3.15.1.1.N.0).
std::string reportText(const netsnmp_pdu* pdu) {
  static const oid kUsmStats[] = {1, 3, 6, 1, 6, 3, 15, 1, 1};
  static const char* const kNames[] = {"",
                                       "unsupported security level",
                                       "not in time window",
                                       "unknown user name",
                                       "unknown engine ID",
                                       "wrong digest (authentication failed: wrong auth key?)",
                                       "decryption error (wrong priv key?)"};
  const netsnmp_variable_list* v = pdu->variables;
  if (v && v->name_length == 11 && snmp_oid_compare(v->name, 9, kUsmStats, 9) == 0 &&
      v->name[9] >= 1 && v->name[9] <= 6) {
    return std::string("the agent reported ") + kNames[v->name[9]];
  }
  return "the agent sent a Report";
}

}  // namespace

void initNetSnmp() {
  static std::once_flag once;
  std::call_once(once, [] {
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_READ_CONFIGS, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_PERSIST_STATE, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_LOAD, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_SAVE, 1);
    ::setenv("MIBS", "", 1);  // numeric OIDs only: no MIB files are read
    snmp_disable_log();
    init_snmp("netdiag");
  });
}

std::unique_ptr<SnmpSession> SnmpSession::open(const SnmpTarget& t, double timeout_s, int retries,
                                               std::string* error) {
  initNetSnmp();
  std::unique_ptr<SnmpSession> self(new SnmpSession());
  self->timeout_s_ = timeout_s;
  self->retries_ = retries;
  netsnmp_session s;
  snmp_sess_init(&s);
  const std::string peer = peerName(t.address);
  s.peername = const_cast<char*>(peer.c_str());
  s.timeout = static_cast<long>(timeout_s * 1e6);
  s.retries = retries;
  s.callback = &SnmpSession::callback;
  s.callback_magic = self.get();
  std::string community = t.community;
  if (t.version == 3) {
    self->v3_ = true;
    s.version = SNMP_VERSION_3;
    s.securityName = const_cast<char*>(t.user.c_str());
    s.securityNameLen = t.user.size();
    s.securityLevel = t.auth.empty()   ? SNMP_SEC_LEVEL_NOAUTH
                      : t.priv.empty() ? SNMP_SEC_LEVEL_AUTHNOPRIV
                                       : SNMP_SEC_LEVEL_AUTHPRIV;
    if (!t.auth.empty()) {
      const Protocol* a = authProtocol(t.auth);
      if (!a) {
        *error = "unknown auth protocol";
        return nullptr;
      }
      s.securityAuthProto = snmp_duplicate_objid(a->id, a->len);
      s.securityAuthProtoLen = a->len;
      s.securityAuthKeyLen = USM_AUTH_KU_LEN;
      if (generate_Ku(s.securityAuthProto, s.securityAuthProtoLen,
                      reinterpret_cast<const u_char*>(t.auth_key.data()), t.auth_key.size(),
                      s.securityAuthKey, &s.securityAuthKeyLen) != SNMPERR_SUCCESS) {
        freeOid(s.securityAuthProto);
        *error = "cannot derive the auth key from its passphrase";
        return nullptr;
      }
    }
    if (!t.priv.empty()) {
      const Protocol* p = privProtocol(t.priv);
      if (!p) {
        freeOid(s.securityAuthProto);
        *error = "unknown priv protocol";
        return nullptr;
      }
      s.securityPrivProto = snmp_duplicate_objid(p->id, p->len);
      s.securityPrivProtoLen = p->len;
      s.securityPrivKeyLen = USM_PRIV_KU_LEN;
      if (generate_Ku(s.securityAuthProto, s.securityAuthProtoLen,
                      reinterpret_cast<const u_char*>(t.priv_key.data()), t.priv_key.size(),
                      s.securityPrivKey, &s.securityPrivKeyLen) != SNMPERR_SUCCESS) {
        freeOid(s.securityAuthProto);
        freeOid(s.securityPrivProto);
        *error = "cannot derive the priv key from its passphrase";
        return nullptr;
      }
    }
    s.flags |= SNMP_FLAGS_DONT_PROBE;  // discovered asynchronously instead
  } else {
    s.version = SNMP_VERSION_2c;
    s.community = reinterpret_cast<u_char*>(community.data());
    s.community_len = community.size();
  }
  self->handle_ = snmp_sess_open(&s);
  freeOid(s.securityAuthProto);
  freeOid(s.securityPrivProto);
  // The secrets' derived keys in the stack copy are not needed any more.
  std::memset(s.securityAuthKey, 0, sizeof s.securityAuthKey);
  std::memset(s.securityPrivKey, 0, sizeof s.securityPrivKey);
  if (!self->handle_) {
    int err = 0, sys_err = 0;
    char* text = nullptr;
    snmp_error(&s, &err, &sys_err, &text);
    *error =
        std::string("cannot open a session to ") + peer + ": " + (text ? text : "unknown error");
    std::free(text);
    return nullptr;
  }
  if (self->v3_) {
    // Opening clears the flag; keep it, or the first send would probe
    // synchronously.
    snmp_sess_session(self->handle_)->flags |= SNMP_FLAGS_DONT_PROBE;
  }
  return self;
}

SnmpSession::~SnmpSession() {
  if (handle_) snmp_sess_close(handle_);
}

int SnmpSession::fd() const {
  netsnmp_transport* t = snmp_sess_transport(handle_);
  return t ? t->sock : -1;
}

bool SnmpSession::needsDiscovery() const {
  return v3_ && snmp_sess_session(handle_)->securityEngineIDLen == 0;
}

int SnmpSession::callback(int op, netsnmp_session*, int, netsnmp_pdu* pdu, void* magic) {
  auto* self = static_cast<SnmpSession*>(magic);
  if (op == NETSNMP_CALLBACK_OP_RESEND) return 1;  // a retry went out: still waiting
  if (self->result_) return 1;  // a Report is delivered twice; the first says it all
  SnmpResult r;
  switch (op) {
    case NETSNMP_CALLBACK_OP_RECEIVED_MESSAGE:
      if (pdu->command == SNMP_MSG_REPORT) {
        // notInTimeWindow: net-snmp resends with the engine's time at once.
        if (snmpv3_get_report_type(pdu) == SNMPERR_NOT_IN_TIME_WINDOW) return 1;
        r.kind = SnmpResult::Kind::kError;
        r.error = reportText(pdu);
        break;
      }
      r.kind = SnmpResult::Kind::kResponse;
      r.error_status = pdu->errstat;
      if (pdu->errstat != SNMP_ERR_NOERROR) r.error = snmp_errstring(pdu->errstat);
      for (const netsnmp_variable_list* v = pdu->variables; v; v = v->next_variable)
        r.varbinds.push_back(toVarbind(v));
      break;
    case NETSNMP_CALLBACK_OP_TIMED_OUT:
      r.kind = SnmpResult::Kind::kTimeout;
      r.error = "timeout";
      break;
    case NETSNMP_CALLBACK_OP_SEC_ERROR:
      r.kind = SnmpResult::Kind::kError;
      r.error = pdu ? reportText(pdu) : "security error";
      break;
    default:
      r.kind = SnmpResult::Kind::kError;
      r.error = "send failed (net-snmp callback op " + std::to_string(op) + ")";
      break;
  }
  self->result_ = std::move(r);
  return 1;
}

bool SnmpSession::send(netsnmp_pdu* pdu, std::string* error) {
  result_.reset();
  if (snmp_sess_async_send(handle_, pdu, &SnmpSession::callback, this) == 0) {
    int err = 0, sys_err = 0;
    char* text = nullptr;
    snmp_sess_error(handle_, &err, &sys_err, &text);
    *error = std::string("send failed: ") + (text ? text : "unknown error");
    std::free(text);
    snmp_free_pdu(pdu);
    return false;
  }
  busy_ = true;
  afterIo();
  return true;
}

bool SnmpSession::sendDiscovery(std::string* error) {
  // RFC 3414 §4: noAuthNoPriv, empty user and engine ID; the Report names the engine.
  if (!usm_get_user(nullptr, 0, const_cast<char*>(""))) {
    auto* user = static_cast<usmUser*>(std::calloc(1, sizeof(usmUser)));
    user->name = strdup("");
    user->secName = strdup("");
    user->authProtocolLen = OID_LENGTH(usmNoAuthProtocol);
    user->authProtocol = snmp_duplicate_objid(usmNoAuthProtocol, user->authProtocolLen);
    user->privProtocolLen = OID_LENGTH(usmNoPrivProtocol);
    user->privProtocol = snmp_duplicate_objid(usmNoPrivProtocol, user->privProtocolLen);
    usm_add_user(user);
  }
  netsnmp_pdu* pdu = snmp_pdu_create(SNMP_MSG_GET);
  pdu->version = SNMP_VERSION_3;
  pdu->securityName = strdup("");
  pdu->securityNameLen = 0;
  pdu->securityLevel = SNMP_SEC_LEVEL_NOAUTH;
  pdu->securityModel = SNMP_SEC_MODEL_USM;
  discovering_ = true;
  return send(pdu, error);
}

bool SnmpSession::sendBulk(const std::vector<Oid>& oids, int non_repeaters, int max_repetitions,
                           std::string* error) {
  netsnmp_pdu* pdu = snmp_pdu_create(SNMP_MSG_GETBULK);
  pdu->non_repeaters = non_repeaters;
  pdu->max_repetitions = max_repetitions;
  for (const Oid& o : oids) {
    std::vector<oid> id(o.begin(), o.end());
    snmp_add_null_var(pdu, id.data(), id.size());
  }
  discovering_ = false;
  return send(pdu, error);
}

void SnmpSession::afterIo() {
  if (!busy_) return;
  if (result_) {
    busy_ = false;
    if (discovering_) {
      discovering_ = false;
      netsnmp_session* s = snmp_sess_session(handle_);
      if (s->securityEngineIDLen > 0) {
        // The Report named the engine: localize the user's keys to it.
        usm_create_user_from_session(s);
        result_->kind = SnmpResult::Kind::kResponse;
        result_->error.clear();
      } else if (result_->kind != SnmpResult::Kind::kTimeout) {
        result_->kind = SnmpResult::Kind::kError;
        result_->error = "engine ID discovery failed (" + result_->error + ")";
      }
    }
    return;
  }
  // Still waiting: when net-snmp will next resend or give up.
  netsnmp_large_fd_set fds;
  netsnmp_large_fd_set_init(&fds, fd() + 1);
  int numfds = 0, block = 1;  // 1 on entry: "set the timeout to the earliest request's"
  timeval tv{};
  snmp_sess_select_info2_flags(handle_, &numfds, &fds, &tv, &block, NETSNMP_SELECT_NOALARMS);
  netsnmp_large_fd_set_cleanup(&fds);
  const double wait = block ? timeout_s_ : tv.tv_sec + tv.tv_usec / 1e6;
  deadline_ = systemClock().monoSeconds() + wait;
}

void SnmpSession::read(bool socket_error) {
  if (socket_error) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd(), SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
      result_ = SnmpResult{
          SnmpResult::Kind::kError, {}, 0, std::string("unreachable: ") + std::strerror(err)};
      busy_ = false;
      broken_ = true;
      return;
    }
  }
  netsnmp_large_fd_set fds;
  netsnmp_large_fd_set_init(&fds, fd() + 1);
  NETSNMP_LARGE_FD_SET(fd(), &fds);
  snmp_sess_read2(handle_, &fds);
  netsnmp_large_fd_set_cleanup(&fds);
  afterIo();
}

void SnmpSession::timeout(double) {
  snmp_sess_timeout(handle_);
  afterIo();
}

std::optional<SnmpResult> SnmpSession::take() {
  if (busy_ || !result_) return std::nullopt;
  std::optional<SnmpResult> r = std::move(result_);
  result_.reset();
  return r;
}

}  // namespace netdiag::collector::snmp
