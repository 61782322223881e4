#include "bus/stream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace netdiag::bus {
namespace {

int64_t nanos(double s) { return static_cast<int64_t>(std::llround(s * 1e9)); }

// Push consumers with JetStream flow control: the server sends no more
// than a window ahead of the flow-control requests we answered, and we
// answer each when the handler gets to it (below), so a backlog waits in
// the stream, not in the server's buffer for our connection (which would
// overflow it: "Slow Consumer", and the connection is cut). Flow control
// needs idle heartbeats.
void flowControlled(jsConsumerConfig& cfg) {
  cfg.FlowControl = true;
  cfg.Heartbeat = nanos(5);
}

// A flow-control request or heartbeat (status 100, no data), answered
// where it asks: true when `msg` was one.
bool answerControl(Connection& connection, natsMsg* msg) {
  if (natsMsg_GetDataLength(msg) != 0) return false;
  const char* status = nullptr;
  if (natsMsgHeader_Get(msg, "Status", &status) != NATS_OK || status == nullptr ||
      std::string_view(status) != "100") {
    return false;
  }
  const char* reply = natsMsg_GetReply(msg);
  const char* stalled = nullptr;
  if (reply != nullptr && *reply != '\0') {
    natsConnection_Publish(connection.nats(), reply, nullptr, 0);  // flow control
  } else if (natsMsgHeader_Get(msg, "Nats-Consumer-Stalled", &stalled) == NATS_OK &&
             stalled != nullptr) {
    natsConnection_Publish(connection.nats(), stalled, nullptr, 0);  // a lost answer
  }
  return true;
}

std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    out.push_back(s.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

uint64_t number(std::string_view s) {
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// JetStream's ack subject: $JS.ACK.<stream>.<consumer>.<delivered>.<stream
// seq>.<consumer seq>.<time>.<pending> (nats-server 2.9), or with a domain
// and account hash after ACK and a token at the end (later servers).
// False for anything else: such a message did not come from the stream.
bool ackSubject(std::string_view reply, uint64_t* delivered, uint64_t* sequence) {
  const std::vector<std::string_view> t = tokens(reply);
  if (t.size() < 9 || t[0] != "$JS" || t[1] != "ACK") return false;
  const size_t at = t.size() == 9 ? 4 : 6;
  if (at + 1 >= t.size()) return false;
  *delivered = number(t[at]);
  *sequence = number(t[at + 1]);
  return *delivered > 0 && *sequence > 0;
}

}  // namespace

StreamLimits deriveLimits(double horizon_s, double outage_s, double bytes_per_s) {
  StreamLimits l;
  l.max_age_s = horizon_s + outage_s;
  l.max_bytes = static_cast<int64_t>(std::ceil(1.5 * bytes_per_s * l.max_age_s));
  l.max_bytes = std::max<int64_t>(l.max_bytes, int64_t{64} << 20);
  return l;
}

std::string ensureStream(Connection& connection, const StreamLimits& limits) {
  const Subjects& s = connection.options().subjects;
  // The batches and the analyzers' tick markers, in one order: the
  // engine's clock is the stream's (bus/tick.h).
  const std::string name = s.stream(), batches = s.allBatches(), ticks = s.tick();
  const char* subjects[] = {batches.c_str(), ticks.c_str()};
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = name.c_str();
  cfg.Description = "netdiag agents' batches (docs/operations.md, The bus)";
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 2;
  cfg.Retention = js_LimitsPolicy;
  cfg.Discard = js_DiscardOld;
  cfg.Storage = js_FileStorage;
  cfg.MaxAge = nanos(limits.max_age_s);
  cfg.MaxBytes = limits.max_bytes;
  cfg.MaxMsgSize = limits.max_message_bytes;
  cfg.Duplicates = nanos(limits.duplicate_window_s);
  cfg.Replicas = limits.replicas;
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus st = js_GetStreamInfo(&info, connection.jetStream(), name.c_str(), nullptr, &code);
  if (st == NATS_OK) {
    jsStreamInfo_Destroy(info);
    info = nullptr;
    st = js_UpdateStream(&info, connection.jetStream(), &cfg, nullptr, &code);
  } else if (st == NATS_NOT_FOUND) {
    st = js_AddStream(&info, connection.jetStream(), &cfg, nullptr, &code);
  }
  if (info != nullptr) jsStreamInfo_Destroy(info);
  if (st != NATS_OK) return "bus: stream " + name + ": " + statusText(st, &code);
  return {};
}

void Delivery::answer(const char* what) {
  if (answered_ || reply_.empty()) return;
  answered_ = true;
  natsConnection_PublishString(connection_.nats(), reply_.c_str(), what);
}

std::unique_ptr<DurableConsumer> DurableConsumer::start(Connection& connection,
                                                        const ConsumerOptions& options,
                                                        Handler handler, std::string* error) {
  const Subjects& s = connection.options().subjects;
  const std::string stream = s.stream();
  if (options.durable.empty() || options.durable.find_first_of(".*> \t") != std::string::npos) {
    *error = "bus: durable consumer name \"" + options.durable + "\" must be one token";
    return nullptr;
  }
  // A fresh inbox each start: the consumer is pointed at it, so nothing but
  // the stream delivers there.
  natsInbox* inbox = nullptr;
  if (natsInbox_Create(&inbox) != NATS_OK) {
    *error = "bus: cannot make an inbox";
    return nullptr;
  }
  std::unique_ptr<DurableConsumer> c(new DurableConsumer(connection, std::move(handler)));
  c->deliver_subject_ = inbox;
  natsInbox_Destroy(inbox);

  jsConsumerConfig cfg;
  jsConsumerConfig_Init(&cfg);
  cfg.Durable = options.durable.c_str();
  cfg.Description = "netdiag analyzer";
  cfg.DeliverSubject = c->deliver_subject_.c_str();  // the whole stream: batches and ticks
  cfg.AckPolicy = js_AckExplicit;
  cfg.AckWait = nanos(options.ack_wait_s);
  cfg.MaxAckPending = options.max_ack_pending;
  cfg.MaxDeliver = -1;
  flowControlled(cfg);
  jsConsumerInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus st = js_GetConsumerInfo(&info, connection.jetStream(), stream.c_str(),
                                     options.durable.c_str(), nullptr, &code);
  if (st == NATS_OK) {
    // Resume where the acknowledgements stopped, on the subject the
    // consumer delivers to. Not updated: nats-server 2.9 refuses any update
    // of a consumer with a start time ("start time can not be updated").
    const bool bound = info->PushBound;
    const char* subject = info->Config->DeliverSubject;
    const std::string filter =
        info->Config->FilterSubject != nullptr ? info->Config->FilterSubject : "";
    if (subject != nullptr) c->deliver_subject_ = subject;
    jsConsumerInfo_Destroy(info);
    info = nullptr;
    if (bound) {
      *error = "bus: consumer " + options.durable + " of stream " + stream +
               " is in use by another analyzer: give each analyzer its own --bus-consumer";
      return nullptr;
    }
    if (subject == nullptr) {
      *error = "bus: consumer " + options.durable + " of stream " + stream +
               " is not a push consumer (made by something else?)";
      return nullptr;
    }
    if (!filter.empty()) {
      // An earlier netdiag's consumer took only the batches, not the ticks.
      *error = "bus: consumer " + options.durable + " of stream " + stream + " takes only " +
               filter + ": it misses the tick markers; delete it (it is made again)";
      return nullptr;
    }
  } else if (st == NATS_NOT_FOUND) {
    cfg.DeliverPolicy = js_DeliverByStartTime;
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const int64_t start_s = std::chrono::duration_cast<std::chrono::seconds>(now).count() -
                            static_cast<int64_t>(std::ceil(options.start_back_s));
    cfg.OptStartTime = start_s * 1'000'000'000;
    st = js_AddConsumer(&info, connection.jetStream(), stream.c_str(), &cfg, nullptr, &code);
  }
  if (info != nullptr) jsConsumerInfo_Destroy(info);
  if (st != NATS_OK) {
    *error =
        "bus: consumer " + options.durable + " of stream " + stream + ": " + statusText(st, &code);
    return nullptr;
  }
  st = natsConnection_Subscribe(&c->sub_, connection.nats(), c->deliver_subject_.c_str(),
                                &DurableConsumer::onMessage, c.get());
  if (st == NATS_OK) {
    // Never drop for a slow handler: the server's max_ack_pending bounds it.
    const int limit = static_cast<int>(std::min<int64_t>(options.max_ack_pending + 64, 1 << 30));
    st = natsSubscription_SetPendingLimits(c->sub_, limit, -1);
  }
  if (st != NATS_OK) {
    *error = "bus: subscribe to " + c->deliver_subject_ + ": " + statusText(st);
    return nullptr;
  }
  return c;
}

namespace {

// The delivery of `msg` (destroyed here), or null for a message that did
// not come from the stream (an injected one: no one to answer).
std::unique_ptr<Delivery> takeDelivery(Connection& connection, natsMsg* msg) {
  if (answerControl(connection, msg)) {
    natsMsg_Destroy(msg);
    return nullptr;
  }
  const char* reply = natsMsg_GetReply(msg);
  uint64_t delivered = 0, sequence = 0;
  std::unique_ptr<Delivery> d;
  if (reply != nullptr && ackSubject(reply, &delivered, &sequence)) {
    const char* data = natsMsg_GetData(msg);
    d = std::make_unique<Delivery>(
        connection, natsMsg_GetSubject(msg), reply,
        std::string(data == nullptr ? "" : data, static_cast<size_t>(natsMsg_GetDataLength(msg))),
        sequence, delivered);
  }
  natsMsg_Destroy(msg);
  return d;
}

}  // namespace

void DurableConsumer::onMessage(natsConnection* /*nc*/, natsSubscription* /*sub*/, natsMsg* msg,
                                void* self) {
  auto* c = static_cast<DurableConsumer*>(self);
  if (auto d = takeDelivery(c->connection_, msg)) c->handler_(std::move(d));
}

namespace {

struct Replay {
  Connection& connection;
  const std::function<void(std::unique_ptr<Delivery>)>& handler;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t last_seq = 0;
  size_t count = 0;
};

void onReplayMessage(natsConnection* /*nc*/, natsSubscription* /*sub*/, natsMsg* msg, void* self) {
  auto* r = static_cast<Replay*>(self);
  auto d = takeDelivery(r->connection, msg);
  if (!d) return;
  const uint64_t seq = d->streamSequence();
  r->handler(std::move(d));
  {
    std::lock_guard lk(r->mu);
    r->last_seq = std::max(r->last_seq, seq);
    ++r->count;
  }
  r->cv.notify_all();
}

void stopSubscription(natsSubscription* sub) {
  if (natsSubscription_Drain(sub) == NATS_OK) {
    natsSubscription_WaitForDrainCompletion(sub, 0);
  } else {
    natsSubscription_Unsubscribe(sub);
  }
  natsSubscription_Destroy(sub);
}

}  // namespace

std::optional<double> consumerIdleSeconds(Connection& connection, const std::string& durable) {
  jsConsumerInfo* info = nullptr;
  const std::string stream = connection.options().subjects.stream();
  if (js_GetConsumerInfo(&info, connection.jetStream(), stream.c_str(), durable.c_str(), nullptr,
                         nullptr) != NATS_OK) {
    return std::nullopt;
  }
  const int64_t last_ns = info->AckFloor.Last != 0 ? info->AckFloor.Last : info->Created;
  jsConsumerInfo_Destroy(info);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count() - static_cast<double>(last_ns) * 1e-9;
}

bool replayStream(Connection& connection, double back_s, int64_t max_ack_pending, double timeout_s,
                  const std::function<void(std::unique_ptr<Delivery>)>& handler, size_t* delivered,
                  std::string* error) {
  const Subjects& s = connection.options().subjects;
  const std::string stream = s.stream();
  natsInbox* inbox = nullptr;
  if (natsInbox_Create(&inbox) != NATS_OK) {
    *error = "bus: cannot make an inbox";
    return false;
  }
  const std::string deliver = inbox;
  natsInbox_Destroy(inbox);
  Replay r{connection, handler, {}, {}, 0, 0};
  // Subscribed before the consumer exists: it starts delivering at once.
  natsSubscription* sub = nullptr;
  natsStatus st =
      natsConnection_Subscribe(&sub, connection.nats(), deliver.c_str(), &onReplayMessage, &r);
  if (st != NATS_OK) {
    *error = "bus: subscribe to " + deliver + ": " + statusText(st);
    return false;
  }
  natsSubscription_SetPendingLimits(
      sub, static_cast<int>(std::min<int64_t>(max_ack_pending + 64, 1 << 30)), -1);
  jsConsumerConfig cfg;
  jsConsumerConfig_Init(&cfg);
  cfg.Description = "netdiag analyzer: evidence rebuilt at start";
  cfg.DeliverSubject = deliver.c_str();
  cfg.AckPolicy = js_AckExplicit;
  cfg.AckWait = nanos(60);
  cfg.MaxAckPending = max_ack_pending;
  cfg.DeliverPolicy = js_DeliverByStartTime;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  cfg.OptStartTime =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() - nanos(back_s);
  cfg.InactiveThreshold = nanos(30);  // the server drops it if we vanish
  flowControlled(cfg);
  jsConsumerInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  st = js_AddConsumer(&info, connection.jetStream(), stream.c_str(), &cfg, nullptr, &code);
  if (st != NATS_OK) {
    stopSubscription(sub);
    *error = "bus: a replay consumer of stream " + stream + ": " + statusText(st, &code);
    return false;
  }
  const std::string name = info->Name != nullptr ? info->Name : "";
  const bool nothing = info->NumPending == 0 && info->NumAckPending == 0;
  jsConsumerInfo_Destroy(info);
  // The newest message now: the replay ends once it was handled.
  uint64_t upto = 0;
  jsStreamInfo* si = nullptr;
  st = js_GetStreamInfo(&si, connection.jetStream(), stream.c_str(), nullptr, &code);
  if (st == NATS_OK) {
    upto = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
  }
  bool done = true;
  if (st != NATS_OK) {
    *error = "bus: stream " + stream + ": " + statusText(st, &code);
    done = false;
  } else if (!nothing) {
    std::unique_lock lk(r.mu);
    done = r.cv.wait_for(lk, std::chrono::duration<double>(timeout_s),
                         [&] { return r.last_seq >= upto; });
    if (!done) {
      *error = "bus: replay of stream " + stream + " stopped after " +
               std::to_string(static_cast<int64_t>(timeout_s)) + " s at message " +
               std::to_string(r.last_seq) + " of " + std::to_string(upto);
    }
  }
  stopSubscription(sub);
  if (!name.empty())
    js_DeleteConsumer(connection.jetStream(), stream.c_str(), name.c_str(), nullptr, nullptr);
  *delivered = r.count;
  return done;
}

void DurableConsumer::stop() {
  if (sub_ == nullptr) return;
  // Drain: no new deliveries, and returns once the handler's last call did.
  stopSubscription(sub_);
  sub_ = nullptr;
}

DurableConsumer::~DurableConsumer() { stop(); }

std::unique_ptr<Replier> Replier::start(Connection& connection, const std::string& subject,
                                        Handler handler, std::string* error) {
  std::unique_ptr<Replier> r(new Replier(connection, std::move(handler)));
  const natsStatus st = natsConnection_Subscribe(&r->sub_, connection.nats(), subject.c_str(),
                                                 &Replier::onMessage, r.get());
  if (st != NATS_OK) {
    *error = "bus: subscribe to " + subject + ": " + statusText(st);
    return nullptr;
  }
  return r;
}

void Replier::onMessage(natsConnection* nc, natsSubscription* /*sub*/, natsMsg* msg, void* self) {
  auto* r = static_cast<Replier*>(self);
  const char* reply = natsMsg_GetReply(msg);
  if (reply == nullptr || *reply == '\0') {
    natsMsg_Destroy(msg);  // a publish, not a request: nobody to answer
    return;
  }
  const char* data = natsMsg_GetData(msg);
  std::string error;
  const std::string body =
      r->handler_(natsMsg_GetSubject(msg),
                  std::string_view(data == nullptr ? "" : data,
                                   static_cast<size_t>(natsMsg_GetDataLength(msg))),
                  &error);
  natsMsg* out = nullptr;
  const std::string& payload = error.empty() ? body : std::string();
  if (natsMsg_Create(&out, reply, nullptr, payload.data(), static_cast<int>(payload.size())) ==
      NATS_OK) {
    if (!error.empty()) natsMsgHeader_Set(out, kErrorHeader, error.c_str());
    natsConnection_PublishMsg(nc, out);
    natsMsg_Destroy(out);
  }
  natsMsg_Destroy(msg);
}

void Replier::stop() {
  if (sub_ == nullptr) return;
  stopSubscription(sub_);
  sub_ = nullptr;
}

Replier::~Replier() { stop(); }

std::optional<std::string> request(Connection& connection, const std::string& subject,
                                   const std::string& body, std::string* error) {
  natsMsg* msg = nullptr;
  if (natsMsg_Create(&msg, subject.c_str(), nullptr, body.data(), static_cast<int>(body.size())) !=
      NATS_OK) {
    *error = "bus: cannot build a request";
    return std::nullopt;
  }
  natsMsg* reply = nullptr;
  const auto timeout = static_cast<int64_t>(connection.options().request_timeout_s * 1000);
  const natsStatus st = natsConnection_RequestMsg(&reply, connection.nats(), msg, timeout);
  natsMsg_Destroy(msg);
  if (st != NATS_OK) {
    *error = st == NATS_NO_RESPONDERS ? "no analyzer answers on " + subject
                                      : "request on " + subject + ": " + statusText(st);
    return std::nullopt;
  }
  const char* why = nullptr;
  std::optional<std::string> out;
  if (natsMsgHeader_Get(reply, kErrorHeader, &why) == NATS_OK && why != nullptr) {
    *error = why;
  } else {
    const char* data = natsMsg_GetData(reply);
    out.emplace(data == nullptr ? "" : data, static_cast<size_t>(natsMsg_GetDataLength(reply)));
  }
  natsMsg_Destroy(reply);
  return out;
}

}  // namespace netdiag::bus
