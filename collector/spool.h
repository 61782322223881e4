#pragma once

// The agent's outbox: serialized batches (proto/netdiag/v1/collector.proto)
// waiting for the analyzer's acknowledgement, oldest first. The uplink
// pushes every batch here before sending it and pops it once acknowledged,
// so nothing is lost while the analyzer is unreachable; a spool that would
// outgrow its bound drops its oldest batches and counts them.
//
// Thread-safety: implementations are safe to call from several threads.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace netdiag::collector {

class Spool {
 public:
  virtual ~Spool() = default;

  // Appends one serialized batch; drops the oldest ones if the bound is hit.
  virtual void push(std::string batch) = 0;
  // The i-th oldest batch still held (0 = oldest), nullopt past the end.
  virtual std::optional<std::string> peek(size_t i) const = 0;
  // Removes the n oldest batches (acknowledged).
  virtual void pop(size_t n) = 0;

  virtual size_t batches() const = 0;
  virtual uint64_t bytes() const = 0;
  // Batches dropped to stay within the bound, since creation (or reopen).
  virtual uint64_t dropped() const = 0;
};

}  // namespace netdiag::collector
