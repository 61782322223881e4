#include "collector/bus_uplink.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "collector/uplink.h"

namespace netdiag::collector {
namespace {

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Room left in a message for its headers (the message id, the expected
// stream) besides the batch.
size_t headerRoom(const std::string& agent) { return 512 + 2 * agent.size(); }

}  // namespace

std::unique_ptr<BusUplink> BusUplink::create(BusUplinkOptions options, Spool& spool,
                                             std::string* error) {
  if (options.agent.empty()) {
    *error = "the agent id (node name) is empty";
    return nullptr;
  }
  if (!(options.backoff_min_s > 0) || options.backoff_max_s < options.backoff_min_s) {
    *error = "backoff: need 0 < min <= max";
    return nullptr;
  }
  if (options.bus.name.empty()) options.bus.name = "netdiag-agent " + options.agent;
  if (options.bus.inbox_prefix.empty()) {
    options.bus.inbox_prefix = "_INBOX." + bus::escapeToken(options.agent);
  }
  auto connection = bus::Connection::open(options.bus, error);
  if (!connection) return nullptr;
  return std::unique_ptr<BusUplink>(
      new BusUplink(std::move(options), spool, std::move(connection)));
}

BusUplink::BusUplink(BusUplinkOptions options, Spool& spool, std::unique_ptr<bus::Connection> c)
    : options_(std::move(options)),
      spool_(spool),
      epoch_(spool.epoch() != 0 ? spool.epoch() : randomEpoch()),
      connection_(std::move(c)) {
  thread_ = std::thread([this] { run(); });
}

BusUplink::~BusUplink() { stop(); }

void BusUplink::stop() {
  {
    std::lock_guard lk(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  connection_->close();  // a publish waiting for its ack returns now
  if (thread_.joinable()) thread_.join();
}

void BusUplink::send(v1::Batch batch) {
  batch.set_agent(options_.agent);
  batch.set_epoch(epoch_);
  if (batch.sent_at() == 0) batch.set_sent_at(wallSeconds());
  {
    std::lock_guard lk(mu_);
    if (batch.ByteSizeLong() <= options_.max_batch_bytes) {
      batch.set_seq(++seq_);
      spool_.push(batch.SerializeAsString());
    } else {
      ++stats_.split;
      for (v1::Batch& part :
           splitBatch(batch, options_.max_batch_bytes, &stats_.oversized_records)) {
        part.set_seq(++seq_);
        spool_.push(part.SerializeAsString());
      }
    }
  }
  cv_.notify_all();
}

UplinkStats BusUplink::stats() const {
  std::lock_guard lk(mu_);
  UplinkStats s = stats_;
  s.connected = connection_->connected() && !failing_;
  s.reconnects = connection_->reconnects();
  return s;
}

std::string BusUplink::lastError() const {
  std::lock_guard lk(mu_);
  return last_error_.empty() ? connection_->lastError() : last_error_;
}

std::optional<v1::AgentPlan> BusUplink::fetchPlan(uint64_t known_version, std::string* error) {
  v1::PlanRequest request;
  request.set_agent(options_.agent);
  request.set_known_version(known_version);
  const std::string subject = options_.bus.subjects.plan(options_.agent);
  std::string why;
  auto body = bus::request(*connection_, subject, request.SerializeAsString(), &why);
  v1::AgentPlan plan;
  if (!body) {
    if (error) *error = "plan over the bus: " + why;
    return std::nullopt;
  }
  if (!plan.ParseFromString(*body)) {
    if (error) *error = "plan over the bus: the reply on " + subject + " is not an AgentPlan";
    return std::nullopt;
  }
  return plan;
}

void BusUplink::run() {
  std::mt19937_64 rng(std::random_device{}());
  double backoff = options_.backoff_min_s;
  std::unique_lock lk(mu_);
  while (true) {
    cv_.wait(lk, [&] { return stopping_ || spool_.batches() > 0; });
    if (stopping_) return;
    lk.unlock();
    const bool ok = connection_->connected() && publishFront();
    lk.lock();
    if (ok) {
      backoff = options_.backoff_min_s;
      continue;
    }
    // Full jitter, so a fleet does not retry in lockstep after an outage.
    const double wait = std::uniform_real_distribution<double>(backoff / 2, backoff)(rng);
    backoff = std::min(backoff * 2, options_.backoff_max_s);
    cv_.wait_for(lk, std::chrono::duration<double>(wait), [&] { return stopping_; });
    if (stopping_) return;
  }
}

bool BusUplink::publishFront() {
  const int64_t max_payload = connection_->maxPayload();
  {
    std::lock_guard lk(mu_);
    if (!front_) {
      std::optional<std::string> bytes = spool_.peek(0);
      if (!bytes) return true;
      Front f;
      f.front_dropped = spool_.dropped();
      v1::Batch batch;
      if (!batch.ParseFromString(*bytes)) {
        // Not a batch (a spool written by something else): it can never be
        // delivered, so it must not block the rest.
        last_error_ = "a spooled entry is not a batch; dropped";
        spool_.pop(1);
        return true;
      }
      const auto room = static_cast<int64_t>(headerRoom(options_.agent));
      if (max_payload <= room) return false;  // not connected after all
      const auto limit = static_cast<size_t>(max_payload - room);
      if (bytes->size() <= limit) {
        f.parts.push_back(std::move(*bytes));
        f.ids.push_back(bus::messageId(options_.agent, batch.epoch(), batch.seq()));
      } else {
        ++stats_.split;
        for (v1::Batch& part : splitBatch(batch, limit, &stats_.oversized_records)) {
          part.set_epoch(epoch_);
          part.set_seq(++seq_);
          f.ids.push_back(bus::messageId(options_.agent, epoch_, part.seq()));
          f.parts.push_back(part.SerializeAsString());
        }
      }
      front_ = std::move(f);
    }
  }
  const std::string subject = options_.bus.subjects.batch(options_.agent);
  const std::string stream = options_.bus.subjects.stream();
  while (true) {
    std::string data, id;
    {
      std::lock_guard lk(mu_);
      if (front_->acked == front_->parts.size()) break;
      data = front_->parts[front_->acked];
      id = front_->ids[front_->acked];
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = id.c_str();
    po.ExpectStream = stream.c_str();
    jsPubAck* pa = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    const natsStatus st = js_Publish(&pa, connection_->jetStream(), subject.c_str(), data.data(),
                                     static_cast<int>(data.size()), &po, &code);
    std::lock_guard lk(mu_);
    if (st != NATS_OK) {
      last_error_ = st == NATS_NO_RESPONDERS
                        ? "no stream " + stream + " takes " + subject +
                              " (is the analyzer started with --bus?)"
                        : "publish on " + subject + ": " + bus::statusText(st, &code);
      // The server reports a permission violation on the connection, not
      // to the publish (which only times out): say both.
      if (const std::string server = connection_->lastError(); !server.empty()) {
        last_error_ += " (last from the server: " + server + ")";
      }
      failing_ = true;
      return false;
    }
    ++stats_.sent;
    ++stats_.acked;
    if (pa != nullptr && pa->Duplicate) ++stats_.duplicates;
    if (pa != nullptr) jsPubAck_Destroy(pa);
    ++front_->acked;
    last_error_.clear();
    failing_ = false;
  }
  std::lock_guard lk(mu_);
  // A drop since the front was read removed the front itself (the oldest).
  if (spool_.dropped() == front_->front_dropped) spool_.pop(1);
  front_.reset();
  return true;
}

}  // namespace netdiag::collector
