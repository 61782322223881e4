// A hostile analyzer for the e2e test (test-only, never installed). It
// serves one switch agent a plan and acknowledges its batches as netdiag's
// analyzer does, but its first ack carries crafted drain actions:
//   forged    a drain of the agent's own port, signed with another key
//   unsigned  the same with no mac
//   stale     a drain signed with the real key, expired a minute ago
//   foreign   a drain signed with the real key for another switch's port
//   valid     a restore of the agent's own port (an up session: no change)
//   replayed  the valid one again, the same nonce
// It prints each result the agent sends back as "result NAME OUTCOME
// DETAIL", one line each, and exits 0 once it has all of them.
//
// usage: netdiag_rogue_analyzer --listen ADDR --agent NODE --key FILE
//          --own PORT --foreign PORT [--monitored PORT,PORT...]

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "actuator/signing.h"
#include "netdiag/v1/collector.grpc.pb.h"

namespace {

using netdiag::v1::DrainAction;

uint64_t nowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

struct Options {
  std::string listen, agent, key_file, own, foreign;
  std::vector<std::string> monitored;
};

class Rogue final : public netdiag::v1::Collector::Service {
 public:
  Rogue(Options o, netdiag::actuator::DrainKey key) : o_(std::move(o)), key_(std::move(key)) {
    std::mt19937_64 rng(std::random_device{}());
    netdiag::actuator::DrainKey wrong{std::string(32, '\0')};
    for (char& c : wrong.bytes) c = static_cast<char>(rng());
    const uint64_t now = nowMs();
    auto action = [&](const std::string& name, const std::string& port, DrainAction::Op op,
                      uint64_t issued, const netdiag::actuator::DrainKey* signer) {
      DrainAction a;
      a.set_incident(9999);
      a.set_port(port);
      a.set_op(op);
      a.set_nonce(rng() | 1);
      a.set_issued_at_ms(issued);
      a.set_expires_at_ms(issued + 60'000);
      a.set_reason("e2e hostile action: " + name);
      if (signer) netdiag::actuator::sign(*signer, o_.agent, a);
      names_[a.nonce()] = name;
      actions_.push_back(a);
    };
    action("forged", o_.own, DrainAction::DRAIN, now, &wrong);
    action("unsigned", o_.own, DrainAction::DRAIN, now, nullptr);
    action("stale", o_.own, DrainAction::DRAIN, now - 120'000, &key_);
    action("foreign", o_.foreign, DrainAction::DRAIN, now, &key_);
    action("valid", o_.own, DrainAction::RESTORE, now, &key_);
    actions_.push_back(actions_.back());  // replayed: the same nonce and mac
    names_[actions_.back().nonce()] = "valid";
  }

  grpc::Status GetPlan(grpc::ServerContext*, const netdiag::v1::PlanRequest* request,
                       netdiag::v1::AgentPlan* plan) override {
    if (request->agent() != o_.agent) {
      return {grpc::StatusCode::PERMISSION_DENIED, "not the agent this test serves"};
    }
    plan->set_version(1);
    plan->set_window_s(5);
    for (const std::string& p : o_.monitored) plan->add_monitored_ports(p);
    plan->set_probed_by_known(true);
    return grpc::Status::OK;
  }

  grpc::Status Stream(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<netdiag::v1::Ack, netdiag::v1::Batch>* stream) override {
    netdiag::v1::Batch batch;
    while (stream->Read(&batch)) {
      netdiag::v1::Ack ack;
      ack.set_epoch(batch.epoch());
      ack.set_seq(batch.seq());
      {
        std::lock_guard lk(mu_);
        if (!sent_) {
          for (const DrainAction& a : actions_) *ack.add_actions() = a;
          sent_ = true;
        }
        for (const auto& r : batch.action_results()) report(r);
      }
      if (!stream->Write(ack)) break;
      if (context->IsCancelled()) break;
    }
    return grpc::Status::OK;
  }

  bool done() {
    std::lock_guard lk(mu_);
    return seen_ >= actions_.size();
  }

 private:
  // The valid action and its replay share a nonce: told apart by outcome.
  void report(const netdiag::v1::ActionResult& r) {
    auto it = names_.find(r.nonce());
    std::string name = it == names_.end() ? "unknown" : it->second;
    if (name == "valid" && r.outcome() == netdiag::v1::ActionResult::REFUSED) name = "replayed";
    const char* outcome = r.outcome() == netdiag::v1::ActionResult::DONE     ? "done"
                          : r.outcome() == netdiag::v1::ActionResult::FAILED ? "failed"
                                                                             : "refused";
    std::printf("result %s %s %s\n", name.c_str(), outcome, r.detail().c_str());
    std::fflush(stdout);
    ++seen_;
  }

  Options o_;
  netdiag::actuator::DrainKey key_;
  std::vector<DrainAction> actions_;
  std::map<uint64_t, std::string> names_;
  std::mutex mu_;
  bool sent_ = false;
  size_t seen_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--listen") {
      o.listen = value;
    } else if (flag == "--agent") {
      o.agent = value;
    } else if (flag == "--key") {
      o.key_file = value;
    } else if (flag == "--own") {
      o.own = value;
    } else if (flag == "--foreign") {
      o.foreign = value;
    } else if (flag == "--monitored") {
      std::stringstream ss(value);
      for (std::string p; std::getline(ss, p, ',');) o.monitored.push_back(p);
    } else {
      std::cerr << "netdiag_rogue_analyzer: unknown flag " << flag << "\n";
      return 2;
    }
  }
  if (o.listen.empty() || o.agent.empty() || o.key_file.empty() || o.own.empty() ||
      o.foreign.empty()) {
    std::cerr << "usage: netdiag_rogue_analyzer --listen ADDR --agent NODE --key FILE --own PORT "
                 "--foreign PORT [--monitored PORT,...]\n";
    return 2;
  }
  if (o.monitored.empty()) o.monitored.push_back(o.own);
  std::string error;
  auto key = netdiag::actuator::loadDrainKey(o.key_file, &error);
  if (!key) {
    std::cerr << "netdiag_rogue_analyzer: " << error << "\n";
    return 2;
  }
  Rogue rogue(o, *key);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(o.listen, grpc::InsecureServerCredentials());
  builder.RegisterService(&rogue);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::cerr << "netdiag_rogue_analyzer: cannot listen on " << o.listen << "\n";
    return 1;
  }
  std::cerr << "netdiag_rogue_analyzer: serving " << o.agent << " on " << o.listen << "\n";
  while (!rogue.done()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return 0;
}
