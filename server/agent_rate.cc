#include "server/agent_rate.h"

#include <algorithm>

namespace netdiag::server {

double AgentRateLimiter::reserve(const std::string& key, size_t records, double now) {
  if (rate_ <= 0 || records == 0) return 0;
  std::lock_guard lock(mu_);
  auto [it, fresh] = buckets_.try_emplace(key);
  Bucket& b = it->second;
  if (fresh) {
    b.tokens = burst_;
  } else {
    b.tokens = std::min(burst_, b.tokens + (now - b.at) * rate_);
  }
  b.at = now;
  b.tokens -= static_cast<double>(records);
  return b.tokens >= 0 ? 0 : -b.tokens / rate_;
}

}  // namespace netdiag::server
