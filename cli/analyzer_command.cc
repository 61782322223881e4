// `netdiag analyzer`: the live daemon. Agents stream batches over gRPC
// (--listen), the engine runs on the wall clock, incidents persist in SQLite
// (--db), and the HTTP API, /metrics, /healthz and /readyz are served on
// --web.listen-address. Runs until SIGTERM or SIGINT, then shuts down
// gracefully (incidents written, streams closed; agents resend what was not
// acknowledged).

#include <algorithm>
#include <csignal>
#include <iostream>
#include <memory>
#include <mutex>

#include <absl/synchronization/mutex.h>
#include <pthread.h>
#include <sys/resource.h>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/engine_options.h"
#include "cli/plan_sizing.h"
#include "drain/policy_file.h"
#include "server/daemon.h"
#include "topology/loader.h"

namespace netdiag::cli {
namespace {

struct AnalyzerOptions {
  std::string topology;
  std::string listen = "127.0.0.1:7600";
  std::string web_listen = "127.0.0.1:9600";
  std::string db = "netdiag.db";
  double probe_rate = 100;
  double max_probe_rate = planner::kDefaultMaxProbesPerSecond;
  int flows_per_peer = 4;
  int peers = 0;
  double window_s = 5;
  uint32_t responder_port = 7601;
  uint32_t dscp = 0;
  double delay_s = 2;
  double max_future_s = 60;
  size_t ingest_queue_records = server::LiveOptions{}.queue_records;
  size_t recent_incidents = server::LiveOptions{}.recent_incidents;
  size_t focus_links = server::LiveOptions{}.focus_links;
  analyzer::EngineConfig engine;
  uint64_t plan_seed = 1;
  std::string tls_cert, tls_key, tls_ca;
  bool insecure = false;
  std::string collectors;  // --collectors FILE
  std::string drain_key, api_token_file;
  std::string drain_policy;  // unset: the policy file's mode, else advise
  std::string drain_policy_file;
  size_t accept_sim_agents = 0;
  size_t max_agent_streams = server::DaemonOptions{}.max_agent_streams;
  double agent_idle_timeout_s = server::DaemonOptions{}.agent_idle_timeout_s;
  double max_agent_rate = server::DaemonOptions{}.max_agent_records_per_s;
  size_t grpc_memory_quota_mib = server::GrpcListenOptions{}.memory_quota_bytes >> 20;
  // --bus: batches (and plan requests) from a NATS JetStream bus as well.
  std::string bus;
  server::BusIngestOptions bus_options;
  int64_t bus_max_mib = 0;
};

int runAnalyzer(const AnalyzerOptions& o) {
  const char* me = "netdiag analyzer: ";
  // gRPC's locks are absl::Mutex, and Debian's abseil keeps a lock-order
  // graph on every lock for deadlock detection (a debug aid): with 16k agent
  // streams that bookkeeping was ~15 % of the analyzer's CPU
  // (docs/benchmarks.md). Off in the daemon; the unit tests keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (!checkEngineOptions(o.engine, "analyzer")) return kExitError;
  std::string host;
  int port = 0;
  if (!server::splitHostPort(o.listen, host, port)) {
    std::cerr << me << "--listen \"" << o.listen << "\" is not HOST:PORT\n";
    return kExitError;
  }
  const bool tls = !o.tls_cert.empty() || !o.tls_key.empty();
  if (o.tls_ca.empty() && !server::isLoopbackHost(host)) {
    if (!o.insecure) {
      std::cerr << me << "--listen " << o.listen
                << " is not a loopback address: agents there must be authenticated. Give "
                   "--tls-ca (mutual TLS, each agent's certificate naming its node) with "
                   "--tls-cert/--tls-key, or --insecure to accept that any client reaching it "
                   "can speak as any node (docs/security.md)\n";
      return kExitError;
    }
    std::cerr << me << "WARNING: --insecure: agents on " << o.listen << " are not authenticated ("
              << (tls ? "TLS without client certificates" : "plaintext")
              << "): any client that reaches it can speak as any node and page any link\n";
  }
  if (std::string h; !server::splitHostPort(o.web_listen, h, port)) {
    std::cerr << me << "--web.listen-address \"" << o.web_listen << "\" is not HOST:PORT\n";
    return kExitError;
  }
  auto loaded = topology::loadTopologyFile(o.topology);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) std::cerr << e.str() << '\n';
    return kExitError;
  }
  const topology::Topology& topo = loaded.topology;
  std::vector<server::CollectorIdentity> collectors;
  if (!o.collectors.empty()) {
    server::CollectorsLoad c = server::loadCollectorsFile(o.collectors, topo);
    if (!c.ok()) {
      for (const auto& e : c.errors) std::cerr << e.str("error") << '\n';
      std::cerr << o.collectors << ": " << c.errors.size() << " error(s), not valid\n";
      return kExitError;
    }
    collectors = std::move(c.collectors);
  }
  if (o.accept_sim_agents > 0) {
    std::cerr << me << "WARNING: --accept-sim-agents " << o.accept_sim_agents
              << ": streams sim-0..sim-" << o.accept_sim_agents - 1
              << " may speak for whole groups of nodes, probes included (netdiag simulate --live "
                 "--agents "
              << o.accept_sim_agents << "): for simulations and benchmarks, never in production\n";
  }

  server::DaemonOptions d;
  d.grpc.address = o.listen;
  d.grpc.tls_cert = o.tls_cert;
  d.grpc.tls_key = o.tls_key;
  d.grpc.tls_ca = o.tls_ca;
  d.grpc.insecure = o.insecure;
  d.max_agent_streams = o.max_agent_streams;
  d.agent_idle_timeout_s = o.agent_idle_timeout_s;
  d.max_agent_records_per_s = o.max_agent_rate;
  d.grpc.memory_quota_bytes = o.grpc_memory_quota_mib << 20;
  d.live.collectors = std::move(collectors);
  d.live.accept_sim_agents = o.accept_sim_agents;
  d.web_listen = o.web_listen;
  d.drain_key_file = o.drain_key;
  if (!o.drain_policy_file.empty()) {
    std::string error;
    auto policies = drain::loadPolicyFile(o.drain_policy_file, &error);
    if (!policies) {
      std::cerr << me << error << '\n';
      return kExitError;
    }
    if (std::string unknown = drain::unknownScopes(*policies, topo); !unknown.empty()) {
      std::cerr << me << o.drain_policy_file << ": " << unknown << '\n';
      return kExitError;
    }
    d.drain_policy = std::move(*policies);
  }
  if (!o.drain_policy.empty()) {  // the flag wins over the file's analyzer-wide mode
    d.drain_policy.all.mode = o.drain_policy == "auto"      ? drain::Mode::kAuto
                              : o.drain_policy == "approve" ? drain::Mode::kApprove
                                                            : drain::Mode::kAdvise;
  }
  d.api_token_file = o.api_token_file;
  d.delay_s = o.delay_s;
  d.live.max_future_s = o.max_future_s;
  d.live.queue_records = o.ingest_queue_records;
  d.live.recent_incidents = o.recent_incidents;
  d.live.focus_links = o.focus_links;
  d.live.budget.probes_per_second = o.probe_rate;
  d.live.sizing.max_probes_per_second = o.max_probe_rate;
  d.live.budget.flows_per_peer = o.flows_per_peer;
  d.live.budget.peers = o.peers;
  d.live.budget.window_s = o.window_s;
  d.live.plan_seed = o.plan_seed;
  d.live.responder_port = o.responder_port;
  d.live.dscp = o.dscp;
  d.live.engine = o.engine;
  d.live.db_path = o.db;
  if (!o.bus.empty()) {
    d.bus = o.bus_options;
    d.bus->bus.url = o.bus;
    d.bus->max_bytes = o.bus_max_mib << 20;
    if (std::string bad = bus::checkBusOptions(d.bus->bus); !bad.empty()) {
      std::cerr << me << bad << '\n';
      return kExitError;
    }
  }
  auto log_mu = std::make_shared<std::mutex>();
  d.log = [log_mu](const std::string& message) {
    std::lock_guard lk(*log_mu);
    std::cerr << "netdiag analyzer: " << message << '\n';
  };

  // Block the stop signals before any thread starts, so every thread
  // inherits the mask and only sigwait() below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // Each agent stream is a connection, so a file descriptor: raise the soft
  // limit towards the hard one for the streams allowed plus some headroom.
  {
    rlimit fds{};
    const rlim_t want = static_cast<rlim_t>(o.max_agent_streams) + 1024;
    if (getrlimit(RLIMIT_NOFILE, &fds) == 0 && fds.rlim_cur < want) {
      const rlim_t was = fds.rlim_cur;
      fds.rlim_cur = std::min(want, fds.rlim_max);
      if (setrlimit(RLIMIT_NOFILE, &fds) == 0 && fds.rlim_cur > was) {
        std::cerr << me << "open files limit raised from " << was << " to " << fds.rlim_cur << '\n';
      }
      if (fds.rlim_cur < want) {
        std::cerr << me << "warning: open files limit " << fds.rlim_cur << " (hard) is below the "
                  << o.max_agent_streams << " agent streams --max-agent-streams allows: raise it "
                  << "(ulimit -n, LimitNOFILE=) or streams beyond it fail to connect\n";
      }
    }
  }
  std::string error;
  std::vector<std::string> warnings;
  auto daemon = server::Daemon::start(topo, d, &error, &warnings);
  for (const auto& w : warnings) std::cerr << me << "warning: " << w << '\n';
  if (!daemon) {
    std::cerr << me << error << '\n';
    return kExitError;
  }
  std::string grpc_host, web_host;
  int ignored = 0;
  server::splitHostPort(o.listen, grpc_host, ignored);
  server::splitHostPort(o.web_listen, web_host, ignored);
  std::cerr << me << "topology " << topo.name << " (" << topo.nodeCount() << " nodes), "
            << (o.db.empty() ? std::string("no database") : "incidents in " + o.db) << '\n'
            << me << "listening: grpc=" << grpc_host << ':' << daemon->grpcPort()
            << (tls ? (o.tls_ca.empty() ? " (TLS)" : " (mutual TLS)") : " (plaintext)")
            << " http=http://" << web_host << ':' << daemon->httpPort() << '\n';
  if (!d.live.collectors.empty()) {
    std::cerr << me << d.live.collectors.size() << " collector identit"
              << (d.live.collectors.size() == 1 ? "y" : "ies") << " from " << o.collectors << '\n';
  }
  const planner::Sizing& sizing = daemon->analyzer().planSizing();
  for (const std::string& l : sizingLines(sizing, "--max-probe-rate")) {
    std::cerr << me << (sizing.below > 0 ? "warning: " : "") << "probe plan: " << l << '\n';
  }
  std::cerr << std::flush;

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cerr << me << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ": shutting down\n";
  daemon->stop();
  std::cerr << me << "stopped\n";
  return kExitOk;
}

}  // namespace

void addAnalyzerCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<AnalyzerOptions>();
  auto* cmd = app.add_subcommand(
      "analyzer",
      "Run the analyzer daemon: agent streams in (gRPC), incidents out (HTTP API, "
      "/metrics, SQLite); stops on SIGTERM/SIGINT");
  cmd->add_option("--topology", o->topology, "Topology file")->required();
  cmd->add_option("--listen", o->listen, "gRPC listener for agents (HOST:PORT; 0 = any port)")
      ->capture_default_str();
  cmd->add_option("--web.listen-address", o->web_listen,
                  "HTTP listener: /api/v1/..., /metrics, /healthz, /readyz, /")
      ->capture_default_str();
  cmd->add_option("--db", o->db, "SQLite file for incidents ('' for none)")->capture_default_str();
  cmd->add_option("--probe-rate", o->probe_rate,
                  "Probes per second per host port (plan budget; the base, raised within "
                  "--max-probe-rate where the coverage target needs it)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-probe-rate", o->max_probe_rate,
                  "Cap of the raised probe rate per host port (at or below --probe-rate: never "
                  "raised)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--flows-per-peer", o->flows_per_peer, "UDP source ports per peer")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--peers", o->peers, "Peers per host port (0: derive from the fabric)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--window", o->window_s, "Seconds each probe record summarizes")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--responder-port", o->responder_port, "UDP port of every agent's responder")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--dscp", o->dscp, "DSCP of probes (the workload's traffic class)")
      ->capture_default_str()
      ->check(CLI::Range(0, 63));
  cmd->add_option("--delay", o->delay_s,
                  "Seconds the engine's clock runs behind the wall clock (agents' delivery delay)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  addEngineOptions(cmd, o->engine);
  cmd->add_option("--max-future", o->max_future_s,
                  "Seconds an agent's clock may run ahead of the analyzer's: records stamped "
                  "later are rejected (raise it for simulate --live at speeds above 1)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--ingest-queue-records", o->ingest_queue_records,
                  "Decoded records queued for the engine thread at most; beyond it agent "
                  "streams wait (flow control), nothing is dropped")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 30));
  cmd->add_option("--recent-incidents", o->recent_incidents,
                  "Resolved incidents kept in memory beside the open ones (older history is "
                  "read from --db; without one, this is the history served)")
      ->capture_default_str();
  cmd->add_option("--plan-seed", o->plan_seed, "Seed of the probe plan's peer choice")
      ->capture_default_str();
  cmd->add_option("--focus-links", o->focus_links,
                  "While incidents are unlocalized (ambiguity groups, suspects below the bar), "
                  "the served plan adds flows across up to this many of their links, between "
                  "ports already paired; 0: always serve the base plan")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{4096}));
  auto* cert =
      cmd->add_option("--tls-cert", o->tls_cert, "TLS certificate (PEM) of the gRPC listener")
          ->check(CLI::ExistingFile);
  auto* key =
      cmd->add_option("--tls-key", o->tls_key, "Its private key (PEM)")->check(CLI::ExistingFile);
  cert->needs(key);
  key->needs(cert);
  cmd->add_option("--tls-ca", o->tls_ca, "CA (PEM) agents' certificates must chain to: mutual TLS")
      ->check(CLI::ExistingFile)
      ->needs(cert);
  cmd->add_flag("--insecure", o->insecure,
                "Accept unauthenticated agents (no --tls-ca) on a --listen address that is not "
                "loopback: any client reaching it can then speak as any node");
  cmd->add_option("--collectors", o->collectors,
                  "YAML file of collector identities (not topology nodes, e.g. SNMP pollers) and "
                  "the nodes each may send port and LLDP records of (docs/operations.md)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--drain-key", o->drain_key,
                  "File of the key drain actions are signed with, shared with the switch agents "
                  "that carry them out (mode 600, 32+ bytes; docs/operations.md, Drain actions). "
                  "Unset: no action is issued");
  cmd->add_option("--drain-policy", o->drain_policy,
                  "What to do with a link incident every drain safety check allows: advise (show "
                  "the decision), approve (drain once a person approves), auto (drain). approve "
                  "and auto need --drain-key (docs/operations.md, Drain policy). Default: the "
                  "policy file's mode, else advise")
      ->check(CLI::IsMember({"advise", "approve", "auto"}));
  cmd->add_option("--drain-policy-file", o->drain_policy_file,
                  "YAML file of the drain policy: mode, the safety checks' bounds, and overrides "
                  "per pod or tier pair (docs/operations.md, Drain policy)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--api-token-file", o->api_token_file,
                  "File of the bearer token the API's write endpoints need (mode 600, 32+ "
                  "bytes). Unset: they answer 403");
  cmd->add_option("--max-agent-rate", o->max_agent_rate,
                  "Records per second each agent may send (0: no bound); beyond it its stream "
                  "waits (back-pressure: its spool holds the rest, nothing is dropped)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--max-agent-streams", o->max_agent_streams,
                  "Agent streams open at most; one beyond is refused (RESOURCE_EXHAUSTED) and its "
                  "agent backs off. Streams hold no thread; each open connection needs a file "
                  "descriptor (docs/operations.md, Bounds)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 22));
  cmd->add_option("--agent-idle-timeout", o->agent_idle_timeout_s,
                  "Seconds an agent stream may wait for a batch before it is closed (0: never). "
                  "Agents send every batch interval; a silent stream is a host gone without "
                  "closing its connection, or a stuck agent, and holds a descriptor and a "
                  "stream slot until then")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--grpc-memory-quota", o->grpc_memory_quota_mib,
                  "MiB of memory gRPC may hold for connections and messages")
      ->capture_default_str()
      ->check(CLI::Range(size_t{16}, size_t{1} << 20));
  auto& b = o->bus_options;
  cmd->add_option("--bus", o->bus,
                  "NATS JetStream bus (nats://HOST:PORT[,...]) to consume agents' batches from, "
                  "besides gRPC; plans are answered on it too (docs/operations.md, The bus)");
  cmd->add_option("--bus-fabric", b.bus.subjects.fabric, "The fabric's token in bus subjects")
      ->capture_default_str();
  cmd->add_option("--bus-subject-prefix", b.bus.subjects.prefix, "First tokens of bus subjects")
      ->capture_default_str();
  cmd->add_option("--bus-creds", b.bus.creds_file, "NATS credentials file (JWT and nkey seed)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--bus-tls-ca", b.bus.tls_ca, "CA (PEM) to verify the NATS server")
      ->check(CLI::ExistingFile);
  cmd->add_option("--bus-tls-cert", b.bus.tls_cert, "Client certificate (PEM) for the bus")
      ->check(CLI::ExistingFile);
  cmd->add_option("--bus-tls-key", b.bus.tls_key, "Its key (PEM)")->check(CLI::ExistingFile);
  cmd->add_option("--bus-consumer", b.consumer.durable,
                  "Durable consumer name: each analyzer of a pair needs its own")
      ->capture_default_str();
  cmd->add_option("--bus-outage", b.outage_s,
                  "Seconds of analyzer outage the stream keeps telemetry for, beyond the "
                  "evidence horizon (its max age)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 30.0 * 86400));
  cmd->add_option("--bus-max-mib", o->bus_max_mib,
                  "The stream's size bound in MiB (0: sized from the fabric's telemetry rate "
                  "over its max age)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd->add_option("--bus-duplicate-window", b.duplicate_window_s,
                  "Seconds the stream drops a republished message id (the analyzer "
                  "de-duplicates beyond it)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_option("--bus-replicas", b.replicas, "Copies of the stream (3 on a 3-server cluster)")
      ->capture_default_str()
      ->check(CLI::Range(1, 5));
  cmd->add_option("--accept-sim-agents", o->accept_sim_agents,
                  "Accept the N grouped synthetic agents sim-0..sim-N-1 of `netdiag simulate "
                  "--live --agents N`, each speaking for its group of nodes (simulations and "
                  "benchmarks only)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->callback([o, &exit_code] { exit_code = runAnalyzer(*o); });
}

}  // namespace netdiag::cli
