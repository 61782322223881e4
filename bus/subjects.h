#pragma once

// Where the agents' batches and plans live on a NATS JetStream bus
// (docs/operations.md, "The bus"):
//
//   <prefix>.<fabric>.batch.<agent>   batches (proto/netdiag/v1 Batch), one
//                                     subject per agent, in one stream
//   <prefix>.<fabric>.plan.<agent>    plan requests (PlanRequest; the reply is
//                                     an AgentPlan, or an error header)
//   <prefix>.<fabric>.tick            the analyzers' tick markers (bus/tick.h),
//                                     in the batches' stream: its clock
//
// The agent token is the agent id (a node or collector name) escaped so
// that any name is one token: bytes other than [A-Za-z0-9_-] become %XX.
// The analyzer takes a subject's token as the sender's identity: a batch
// whose `agent` differs from it is refused, so publish permissions on the
// server (each agent's user may publish only its own subjects) are what
// authenticate agents on the bus.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace netdiag::bus {

struct Subjects {
  std::string prefix = "netdiag";
  std::string fabric = "default";

  std::string batch(std::string_view agent) const;
  std::string plan(std::string_view agent) const;
  std::string allBatches() const;  // <prefix>.<fabric>.batch.*
  std::string allPlans() const;    // <prefix>.<fabric>.plan.*
  std::string tick() const;        // <prefix>.<fabric>.tick
  // The JetStream stream holding the batches: NETDIAG_<FABRIC> (escaped).
  std::string stream() const;

  // The agent a batch or plan subject names; nullopt for any other subject
  // or a token that does not decode.
  std::optional<std::string> batchAgent(std::string_view subject) const;
  std::optional<std::string> planAgent(std::string_view subject) const;
};

// "" or what is wrong with a prefix or fabric (each must be one or more
// tokens of [A-Za-z0-9_-], separated by dots in the prefix only).
std::string checkSubjects(const Subjects& s);

std::string escapeToken(std::string_view name);
std::optional<std::string> unescapeToken(std::string_view token);

// The JetStream message id of a batch: "<agent>:<epoch>:<seq>", so the
// stream's duplicate window drops a resend the server already stored.
std::string messageId(std::string_view agent, uint64_t epoch, uint64_t seq);

}  // namespace netdiag::bus
