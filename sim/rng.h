#pragma once

// Counter-based randomness: a draw is a pure function of (seed, keys), so a
// simulation gives the same records whatever order it computes them in.

#include <cmath>
#include <cstdint>

namespace netdiag::sim {

// SplitMix64's finalizer: a fast, well-mixed 64-bit hash.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

constexpr uint64_t hashKeys(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0,
                            uint64_t d = 0) {
  return mix64(mix64(mix64(mix64(seed ^ mix64(a)) ^ b) ^ c) ^ d);
}

// A small stream generator (SplitMix64) started from a hashed key.
class Rng {
 public:
  explicit Rng(uint64_t state) : state_(state) {}
  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ull;
    return mix64(state_);
  }
  // Uniform in (0, 1]: never 0, so log(uniform()) is finite.
  double uniform() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
  double normal() {
    // Box-Muller; one value is enough here.
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
  }
  // Binomial(n, p) by geometric skips: O(1 + n*min(p, 1-p)) draws.
  uint32_t binomial(uint32_t n, double p) {
    if (n == 0 || p <= 0) return 0;
    if (p >= 1) return n;
    if (p > 0.5) return n - binomial(n, 1 - p);
    const double log_q = std::log1p(-p);
    uint32_t count = 0;
    double i = -1;
    while (true) {
      i += std::floor(std::log(uniform()) / log_q) + 1;
      if (i >= n) return count;
      ++count;
    }
  }

 private:
  uint64_t state_;
};

}  // namespace netdiag::sim
