#include "loadgen/sim_agents.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <thread>

#include "collector/uplink.h"
#include "proto/convert.h"
#include "server/authority.h"

namespace netdiag::loadgen {

SimAgentsLayout simAgentsLayout(const topology::Topology& topo, size_t requested) {
  const size_t nodes = std::max<size_t>(topo.nodeCount(), 1);
  if (requested == 0 || requested >= nodes) return {nodes, true};
  return {requested, false};
}

SimAgents::SimAgents(const topology::Topology& topo, SimAgentsOptions options)
    : topo_(topo), options_(std::move(options)), fingerprint_(proto::topologyFingerprint(topo)) {
  const SimAgentsLayout layout = simAgentsLayout(topo, options_.agents);
  const size_t n = layout.streams;
  per_node_ = layout.per_node;
  if (per_node_) {
    agent_of_node_.resize(topo.nodeCount());
    for (topology::NodeId node = 0; node < topo.nodeCount(); ++node) agent_of_node_[node] = node;
  } else {
    agent_of_node_ = server::simAgentGroups(topo, n);
  }
  std::string error;
  auto creds =
      collector::channelCredentials(options_.tls_ca, options_.tls_cert, options_.tls_key, error);
  if (!creds) creds = grpc::InsecureChannelCredentials();  // checked by the caller first
  std::mt19937_64 rng(std::random_device{}());
  std::shared_ptr<grpc::Channel> channel;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  const size_t per_connection = std::max<size_t>(options_.agents_per_connection, 1);
  for (size_t i = 0; i < n; ++i) {
    if (i % per_connection == 0) {
      grpc::ChannelArguments args;
      // Its own connection, not a subchannel shared with the others.
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      // Reconnect as soon as the Uplink would after an analyzer restart
      // (gRPC's own first backoff is 1 s).
      args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
      args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
      channel = grpc::CreateCustomChannel(options_.analyzer, creds, args);
    }
    auto a = std::make_unique<Agent>();
    std::string name = per_node_ && i < topo.nodeCount()
                           ? topo.node(static_cast<topology::NodeId>(i)).name
                           : "sim-" + std::to_string(i);
    a->link = std::make_unique<AgentLink>(channel, std::move(name), rng() | 1, &outstanding_);
    agents_.push_back(std::move(a));
    if (i % per_connection == 0) channels.push_back(channel);
  }
  // Connect every stream before the first record is stamped "now": 16k
  // connections take a while to set up, and records stamped before their
  // stream could carry them would reach the analyzer behind its clock. In
  // waves, not all at once: a storm of 16k handshakes can push a listener
  // past its descriptor limit, and gRPC 1.51's stops accepting after that
  // (grpc/grpc#20418). Bounded; an analyzer that never answers is reported
  // by finish().
  constexpr size_t kWave = 512;
  const auto deadline = std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            std::chrono::duration<double>(options_.connect_timeout_s));
  for (size_t from = 0; from < channels.size(); from += kWave) {
    const size_t to = std::min(channels.size(), from + kWave);
    for (size_t i = from; i < to; ++i) channels[i]->GetState(true);
    bool up = true;
    for (size_t i = from; i < to && up; ++i) up = channels[i]->WaitForConnected(deadline);
    if (!up) break;
  }
  // Streams open only now: a call on a channel still connecting would start
  // its handshake at once, every wave's together, and fail fast when it
  // did not finish in time (gRPC's "tcp handshaker shutdown"), to be
  // retried: the very storm the waves avoid.
  maintainer_ = std::thread([this] {
    while (!stop_.load()) {
      const auto now = std::chrono::steady_clock::now();
      for (auto& a : agents_) a->link->maintain(now);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
}

SimAgents::~SimAgents() {
  stop_ = true;
  maintainer_.join();
  for (auto& a : agents_) a->link->stop();
}

// (Read for every record: two atomics, not every link's stats.)
uint64_t SimAgents::unackedBytes() const { return outstanding_.bytes.load(); }

size_t SimAgents::unackedBatches() const { return outstanding_.batches.load(); }

SimAgents::Agent& SimAgents::agentFor(topology::PortId port) {
  return *agents_[agent_of_node_[topo_.port(port).node]];
}

void SimAgents::before(double t) {
  if (!started_) {
    started_ = true;
    t_first_ = t;
    wall_first_ = std::chrono::steady_clock::now();
    shift_ =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
        t;
    if (options_.align_s > 0) shift_ = std::floor(shift_ / options_.align_s) * options_.align_s;
    next_flush_ = t + options_.batch_interval_s;
  }
  if (t < next_flush_) return;
  flushAll();
  while (next_flush_ <= t) next_flush_ += options_.batch_interval_s;
  if (!heard_ && t >= t_first_ + std::max(options_.align_s, options_.batch_interval_s)) {
    // The analyzer's watermark follows the agents it has heard from: until
    // every agent's first window is acknowledged, one stream that got going
    // late would find its records behind the others' (too_late). Bounded;
    // finish() reports an analyzer that never answers.
    heard_ = true;
    const auto waited_from = std::chrono::steady_clock::now();
    const auto deadline = waited_from + std::chrono::seconds(30);
    while (unackedBatches() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (options_.speed > 0) {
      // Paced: the wait (16k streams' first acks take seconds) would leave
      // every later record that far behind the wall clock for good, beyond
      // the late window when long enough. Start the rest after it instead,
      // as a fabric silent for that long, keeping the window alignment.
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - waited_from).count();
      const double align = options_.align_s > 0 ? options_.align_s : 1;
      const double skip = std::ceil(waited * options_.speed / align) * align;
      shift_ += skip;
      wall_first_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(skip / options_.speed));
    }
  }
  if (options_.speed > 0) {
    auto due = wall_first_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>((t - t_first_) / options_.speed));
    std::this_thread::sleep_until(due);
  }
  // Backpressure: never hold more than the bound unacknowledged.
  while (unackedBytes() > options_.max_outstanding_bytes) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

SimAgents::Agent& SimAgents::begun(Agent& a) {
  if (a.records == 0) {
    // Ids only under the analyzer's own fingerprint, decided per batch: an
    // analyzer restarted on another topology gets names again.
    a.ids = a.link->analyzerTopology() == fingerprint_;
    if (a.ids) a.batch.set_topology(fingerprint_);
  }
  return a;
}

void SimAgents::flush(Agent& a) {
  if (a.records == 0) return;
  a.link->send(std::move(a.batch));
  a.batch = v1::Batch();
  a.records = 0;
  ++batches_;
  id_batches_ += a.ids;
}

void SimAgents::flushAll() {
  for (auto& a : agents_) flush(*a);
}

void SimAgents::onProbe(const telemetry::ProbeRecord& r) {
  before(r.t);
  Agent& a = begun(agentFor(r.src));
  v1::Probe* p = a.batch.add_probes();
  proto::toWire(topo_, r, *p, a.ids);
  p->set_t(r.t + shift_);
  ++records_;
  if (++a.records >= options_.max_batch_records) flush(a);
}

void SimAgents::onPort(const telemetry::PortRecord& r) {
  before(r.t);
  Agent& a = begun(agentFor(r.port));
  v1::PortCounters* p = a.batch.add_ports();
  proto::toWire(topo_, r, *p, a.ids);
  p->set_t(r.t + shift_);
  ++records_;
  if (++a.records >= options_.max_batch_records) flush(a);
}

void SimAgents::onLldp(const telemetry::LldpRecord& r) {
  before(r.t);
  Agent& a = begun(agentFor(r.port));
  v1::LldpNeighbor* p = a.batch.add_lldp();
  proto::toWire(topo_, r, *p);
  p->set_t(r.t + shift_);
  ++records_;
  if (++a.records >= options_.max_batch_records) flush(a);
}

bool SimAgents::finish(double timeout_s, std::string* error) {
  flushAll();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    const size_t left = unackedBatches();
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      if (error) {
        *error = std::to_string(left) + " batch(es) not acknowledged by " + options_.analyzer +
                 " after " + std::to_string(static_cast<int>(timeout_s)) + " s";
        for (auto& a : agents_) {
          if (std::string e = a->link->stats().last_error; !e.empty()) {
            *error += " (" + e + ")";
            break;
          }
        }
      }
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (started_) {
    seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_first_).count();
  }
  return true;
}

SimAgentsStats SimAgents::stats() const {
  SimAgentsStats s;
  s.records = records_;
  s.batches = batches_;
  s.id_batches = id_batches_;
  s.seconds = seconds_;
  s.time_shift = shift_;
  std::map<std::string, size_t> reasons;
  for (auto& a : agents_) {
    const AgentLink::Stats l = a->link->stats();
    s.acked += l.acked;
    s.reconnects += l.reconnects;
    if (l.reconnects > 0 && !l.last_error.empty()) ++reasons[l.last_error];
  }
  size_t most = 0;
  for (const auto& [why, n] : reasons) {
    if (n > most) most = n, s.reconnect_reason = why;
  }
  return s;
}

}  // namespace netdiag::loadgen
