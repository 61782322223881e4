// `netdiag drain list|approve|link|undo|freeze`: the analyzer's drains
// (server/drain_coordinator.h) from the on-call seat. `list` reads; the
// others write through the API's token-guarded endpoints, so they need
// --token-file (the analyzer's --api-token-file). Exit 0 done, 1 refused
// by the analyzer (the reason printed), 2 error.

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/incident_source.h"

namespace netdiag::cli {
namespace {

using nlohmann::json;

struct DrainActionOptions {
  std::string analyzer = "http://127.0.0.1:9600";
  std::string token_file;
  std::string by;
  std::string target;    // the incident (approve), the link (link, undo), on|off (freeze)
  std::string incident;  // link: the incident it is drained for
  bool now = false;      // undo: without waiting for clean counters
  bool json = false;
};

std::string whoAmI(const DrainActionOptions& o) {
  if (!o.by.empty()) return o.by;
  const char* user = std::getenv("USER");
  return user && *user ? user : "cli";
}

// POSTs `body` to the analyzer; prints the answer. Exit code.
int post(const DrainActionOptions& o, const std::string& path, json body, const char* me) {
  if (o.token_file.empty()) {
    std::cerr << me << "needs --token-file (the analyzer's --api-token-file)\n";
    return kExitError;
  }
  std::ifstream in(o.token_file, std::ios::binary);
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  if (!in.good() && !in.eof()) {
    std::cerr << me << "cannot read " << o.token_file << '\n';
    return kExitError;
  }
  std::string base = o.analyzer;
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0) base = "http://" + base;
  httplib::Client client(base);
  if (!client.is_valid()) {
    std::cerr << me << "bad analyzer URL " << o.analyzer << '\n';
    return kExitError;
  }
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(30, 0);
  body["by"] = whoAmI(o);
  auto res =
      client.Post(path, {{"Authorization", "Bearer " + token}}, body.dump(), "application/json");
  if (!res) {
    std::cerr << me << "cannot reach " << base << path << " (" << httplib::to_string(res.error())
              << ")\n";
    return kExitError;
  }
  const json answer = json::parse(res->body, nullptr, false);
  if (o.json) std::cout << (answer.is_discarded() ? json(res->body) : answer).dump(2) << '\n';
  if (res->status >= 200 && res->status < 300) {
    if (!o.json) {
      std::cout << "accepted";
      if (answer.is_object() && answer.contains("nonce")) {
        std::cout << ": action " << answer["nonce"].get<std::string>() << ", "
                  << answer.value("state", "") << " (follow it with netdiag drain list)";
      } else if (answer.is_object() && answer.contains("state")) {
        std::cout << ": " << answer["state"].get<std::string>()
                  << " (follow it with netdiag drain list)";
      }
      std::cout << '\n';
    }
    return kExitOk;
  }
  const std::string why = answer.is_object() && answer.contains("error")
                              ? answer["error"].get<std::string>()
                              : res->body.substr(0, 200);
  std::cerr << me << "HTTP " << res->status << ": " << why << '\n';
  return res->status == 422 ? kExitFindings : kExitError;
}

int list(const DrainActionOptions& o) {
  std::string error;
  auto body = httpGetJson(o.analyzer, "/api/v1/drain", &error);
  if (!body) {
    std::cerr << "netdiag drain list: " << error << '\n';
    return kExitError;
  }
  if (o.json) {
    std::cout << body->dump(2) << '\n';
    return kExitOk;
  }
  const json& p = (*body)["policy"];
  std::cout << "policy " << p.value("mode", "?") << (p.value("frozen", false) ? ", FROZEN" : "");
  const json scopes = p.value("scopes", json::object());
  for (const auto& [scope, sp] : scopes.items()) {
    std::cout << "; " << scope << ": " << sp.value("mode", "?");
  }
  std::cout << '\n';
  const json& drained = (*body)["drained"];
  if (drained.empty()) std::cout << "no link drained by netdiag\n";
  for (const json& d : drained) {
    std::cout << d["state"].get<std::string>() << "  " << d["link"].get<std::string>() << "  at "
              << d["port"].get<std::string>() << "  for " << d["incident"].get<std::string>()
              << "  by " << d["by"].get<std::string>();
    if (d.contains("detail")) std::cout << "  (" << d["detail"].get<std::string>() << ")";
    std::cout << '\n';
  }
  size_t events = 0;
  for (const json& e : body->value("events", json::array())) {
    if (events++ == 0) std::cout << "audit (newest first):\n";
    if (events > 15) break;
    std::cout << "  " << clockText(e.value("at", 0.0)) << "  " << e.value("event", "?") << "  "
              << e.value("link", "?");
    if (e.contains("incident")) std::cout << "  " << e["incident"].get<std::string>();
    if (e.contains("actor")) std::cout << "  by " << e["actor"].get<std::string>();
    if (e.contains("detail") && e["detail"].is_object() && e["detail"].contains("verdict")) {
      std::cout << "  verdict " << e["detail"]["verdict"].get<std::string>();
    } else if (e.contains("detail") && e["detail"].is_string()) {
      std::cout << "  (" << e["detail"].get<std::string>() << ")";
    }
    std::cout << '\n';
  }
  size_t shown = 0;
  for (const json& a : (*body)["actions"]) {
    if (shown++ == 0) std::cout << "recent actions:\n";
    if (shown > 20) break;
    std::cout << "  " << a["state"].get<std::string>() << "  " << a["op"].get<std::string>() << " "
              << a["port"].get<std::string>() << "  by " << a["by"].get<std::string>();
    if (a.contains("detail")) std::cout << "  (" << a["detail"].get<std::string>() << ")";
    std::cout << '\n';
  }
  return kExitOk;
}

}  // namespace

void addDrainActionsCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<DrainActionOptions>();
  auto* cmd = app.add_subcommand("drain",
                                 "The analyzer's drains: list them, approve one, drain a named "
                                 "link, undo one, freeze the policy");
  cmd->require_subcommand(1);
  auto common = [&](CLI::App* sub, bool writes) {
    sub->add_option("--analyzer", o->analyzer, "Analyzer HTTP address")->capture_default_str();
    sub->add_flag("--json", o->json, "Print the analyzer's answer as JSON");
    if (writes) {
      sub->add_option("--token-file", o->token_file,
                      "File of the API token (the analyzer's --api-token-file)")
          ->required();
      sub->add_option("--by", o->by, "Who asks, for the log and audit (default: $USER)");
    }
  };
  auto* ls = cmd->add_subcommand("list", "The policy, links netdiag drained, recent actions");
  common(ls, false);
  ls->callback([o, &exit_code] { exit_code = list(*o); });

  auto* approve = cmd->add_subcommand(
      "approve", "Drain an incident's link now (--drain-policy approve; every check must hold)");
  common(approve, true);
  approve->add_option("incident", o->target, "Incident id, e.g. inc-17")->required();
  approve->callback([o, &exit_code] {
    exit_code = post(*o, "/api/v1/incidents/" + o->target + "/approve", json::object(),
                     "netdiag drain approve: ");
  });

  auto* link = cmd->add_subcommand(
      "link",
      "Drain a link you name, for an open incident (where the policy is approve or auto; the "
      "fabric's safety checks must hold; verified, and rolled back under auto if the loss stays)");
  common(link, true);
  link->add_option("link", o->target, "The link, X:p->Y:q (either direction)")->required();
  link->add_option("--incident", o->incident, "The open incident it is drained for, e.g. inc-17")
      ->required();
  link->callback([o, &exit_code] {
    exit_code = post(*o, "/api/v1/drain/link", {{"link", o->target}, {"incident", o->incident}},
                     "netdiag drain link: ");
  });

  auto* undo = cmd->add_subcommand("undo", "Restore a link netdiag drained");
  common(undo, true);
  undo->add_option("link", o->target, "The link, X:p->Y:q (either direction)")->required();
  undo->add_flag("--now", o->now,
                 "Restore at once, without waiting for the link's counters to be clean for the "
                 "policy's restore_clean_s (you checked the link)");
  undo->callback([o, &exit_code] {
    exit_code = post(*o, "/api/v1/drain/undo", {{"link", o->target}, {"now", o->now}},
                     "netdiag drain undo: ");
  });

  auto* freeze = cmd->add_subcommand(
      "freeze", "Stop (on) or allow again (off) new drains, e.g. for a maintenance window");
  common(freeze, true);
  freeze->add_option("state", o->target, "on or off")
      ->required()
      ->check(CLI::IsMember({"on", "off"}));
  freeze->callback([o, &exit_code] {
    exit_code =
        post(*o, "/api/v1/drain/freeze", {{"frozen", o->target == "on"}}, "netdiag drain freeze: ");
  });
}

}  // namespace netdiag::cli
