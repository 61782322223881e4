#pragma once

// Hands a drain action to the operator's own automation: an HTTP POST of
// the action as JSON (docs/operations.md, "Drain actions by webhook"),
// done when it answers 2xx. For fabrics the FRR executor does not fit.
// An https endpoint's certificate is verified against the system's CAs;
// the receiver can check the action's mac itself with the same drain key.

#include <string>
#include <string_view>

#include "actuator/executor.h"

namespace netdiag::actuator {

struct WebhookOptions {
  std::string url;  // http(s)://HOST[:PORT]/PATH
  double timeout_s = 10;
};

// "" when `url` is usable, else what is wrong with it.
std::string checkWebhookUrl(const std::string& url);

// The JSON body posted for `action` (mac in hex).
std::string webhookBody(const v1::DrainAction& action, std::string_view agent,
                        std::string_view ifname);

class WebhookExecutor final : public Executor {
 public:
  explicit WebhookExecutor(WebhookOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "webhook"; }
  bool execute(const v1::DrainAction& action, std::string_view agent, std::string_view ifname,
               std::string* detail) override;

 private:
  WebhookOptions options_;
};

}  // namespace netdiag::actuator
