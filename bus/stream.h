#pragma once

// The batches' stream and the analyzer's durable consumer of it
// (docs/operations.md, "The bus").
//
// Limits are derived, not guessed: the stream keeps what the analyzer needs
// to rebuild its evidence (the evidence horizon) plus the longest analyzer
// outage it should survive, at the fabric's telemetry rate; beyond that an
// agent's own spool holds what the bus cannot. Retention is by limits, not
// interest, so a second analyzer with a durable consumer of its own reads
// the same messages. The duplicate window (2 min by default) only catches
// resends within it; the analyzer de-duplicates by (agent, epoch, seq) over
// any gap.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bus/connection.h"

namespace netdiag::bus {

struct StreamLimits {
  double max_age_s = 0;
  int64_t max_bytes = 0;
  double duplicate_window_s = 120;
  int replicas = 1;  // 3 on a 3-server cluster
  int32_t max_message_bytes = 4 << 20;
};

// The limits that keep `horizon_s + outage_s` of telemetry arriving at
// `bytes_per_s`, with a margin of half again for bursts and catch-up.
StreamLimits deriveLimits(double horizon_s, double outage_s, double bytes_per_s);

// Creates the stream of `connection`'s subjects, or updates its limits when
// it exists. "" or what went wrong.
std::string ensureStream(Connection& connection, const StreamLimits& limits);

// One message delivered to a consumer: its bytes, and its acknowledgement.
// Acknowledge (or negatively) once, from any thread; a delivery destroyed
// without either is redelivered after the consumer's ack wait.
// The acknowledgement goes to the message's reply subject over the
// connection (JetStream's +ACK / -NAK / +TERM), so a delivery does not hold
// nats.c's message or subscription: it may outlive both.
class Delivery {
 public:
  Delivery(Connection& connection, std::string subject, std::string reply, std::string data,
           uint64_t stream_sequence, uint64_t delivered)
      : connection_(connection),
        subject_(std::move(subject)),
        reply_(std::move(reply)),
        data_(std::move(data)),
        stream_sequence_(stream_sequence),
        delivered_(delivered) {}
  Delivery(const Delivery&) = delete;
  Delivery& operator=(const Delivery&) = delete;

  const std::string& subject() const { return subject_; }
  const std::string& data() const { return data_; }
  void dropData() { std::string().swap(data_); }  // decoded: the bytes are not needed
  uint64_t streamSequence() const { return stream_sequence_; }
  uint64_t delivered() const { return delivered_; }  // 1 the first time, more on redelivery
  void ack() { answer("+ACK"); }
  void nak() { answer("-NAK"); }    // redeliver soon
  void term() { answer("+TERM"); }  // never redeliver: it can never be valid

 private:
  void answer(const char* what);

  Connection& connection_;
  std::string subject_, reply_, data_;
  uint64_t stream_sequence_ = 0, delivered_ = 0;
  bool answered_ = false;
};

struct ConsumerOptions {
  std::string durable = "analyzer";
  double ack_wait_s = 60;          // unacknowledged this long: redelivered
  int64_t max_ack_pending = 1024;  // deliveries outstanding: the server's flow control
  // A consumer created now starts this far back in the stream (the evidence
  // horizon), not at its beginning; an existing one resumes where it was.
  double start_back_s = 180;
};

// A durable push consumer of the whole stream (batches and ticks), created (or resumed as it
// is: its ack wait and max_ack_pending are those it was created with, and
// one that another analyzer is bound to is an error), with each delivery handed to `handler` on the
// subscription's own thread, one at a time: a handler that blocks slows the delivery, and
// max_ack_pending and JetStream flow control (each request answered when
// the handler reaches it) bound what the server sends ahead. Stopping leaves the
// durable consumer on the server, so a restart resumes where the
// acknowledgements stopped.
class DurableConsumer {
 public:
  using Handler = std::function<void(std::unique_ptr<Delivery>)>;
  static std::unique_ptr<DurableConsumer> start(Connection& connection,
                                                const ConsumerOptions& options, Handler handler,
                                                std::string* error);
  ~DurableConsumer();  // stop()
  // Stops delivery and waits for the handler's last call to return.
  void stop();

 private:
  DurableConsumer(Connection& c, Handler h) : connection_(c), handler_(std::move(h)) {}
  static void onMessage(natsConnection* nc, natsSubscription* sub, natsMsg* msg, void* self);

  Connection& connection_;
  Handler handler_;
  natsSubscription* sub_ = nullptr;
  std::string deliver_subject_;
};

// Seconds since the durable consumer `durable` last moved its
// acknowledgement floor (since it was made, when it never did); nullopt
// when there is no such consumer or the server does not answer. A consumer
// idle longer than the evidence horizon delivers that whole horizon itself.
std::optional<double> consumerIdleSeconds(Connection& connection, const std::string& durable);

// Reads the stream from `back_s` seconds ago up to its newest message at
// the call, through an ephemeral consumer, each delivery to `handler` on the
// subscription's thread (the handler acknowledges it; at most
// `max_ack_pending` wait). Returns once the handler took the last one: true
// and the count in *delivered, or false and *error on failure or after
// `timeout_s`. Rebuilding the analyzer's evidence at start (docs/operations.md).
bool replayStream(Connection& connection, double back_s, int64_t max_ack_pending, double timeout_s,
                  const std::function<void(std::unique_ptr<Delivery>)>& handler, size_t* delivered,
                  std::string* error);

// Answers requests on a subject (wildcards allowed) on the subscription's
// thread: `handler` gets the subject and body and returns the reply body,
// or sets *error, which is sent as the reply's "Netdiag-Error" header with
// an empty body.
class Replier {
 public:
  using Handler = std::function<std::string(std::string_view subject, std::string_view body,
                                            std::string* error)>;
  static std::unique_ptr<Replier> start(Connection& connection, const std::string& subject,
                                        Handler handler, std::string* error);
  ~Replier();  // stop()
  void stop();

 private:
  Replier(Connection& c, Handler h) : connection_(c), handler_(std::move(h)) {}
  static void onMessage(natsConnection* nc, natsSubscription* sub, natsMsg* msg, void* self);

  Connection& connection_;
  Handler handler_;
  natsSubscription* sub_ = nullptr;
};

// The request side: the reply's body, or nullopt and *error (no responder,
// timeout, or the responder's Netdiag-Error).
std::optional<std::string> request(Connection& connection, const std::string& subject,
                                   const std::string& body, std::string* error);

inline constexpr const char* kErrorHeader = "Netdiag-Error";

}  // namespace netdiag::bus
