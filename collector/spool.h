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
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netdiag::collector {

class Spool {
 public:
  virtual ~Spool() = default;

  // Appends one serialized batch; drops the oldest ones if the bound is hit.
  // False when this batch itself was dropped instead (it alone exceeds the
  // bound, or it could not be written); every drop counts in dropped().
  virtual bool push(std::string batch) = 0;
  // The i-th oldest batch still held (0 = oldest), nullopt past the end.
  virtual std::optional<std::string> peek(size_t i) const = 0;
  // Removes the n oldest batches (acknowledged).
  virtual void pop(size_t n) = 0;

  virtual size_t batches() const = 0;
  virtual uint64_t bytes() const = 0;
  // Batches dropped to stay within the bound, since creation (or reopen).
  virtual uint64_t dropped() const = 0;
  // The uplink epoch this open of the spool took from persistent state, 0
  // when it has none (a memory spool): the uplink then draws a random one.
  virtual uint64_t epoch() const { return 0; }
};

// A random non-zero 64-bit epoch (std::random_device).
uint64_t randomEpoch();

// A spool in memory, lost on exit. Holds at most `max_bytes` of batch
// payload (0: unbounded); a push that would exceed it drops the oldest
// batches first, and a single batch larger than the bound is itself dropped.
// dropped() counts since creation.
std::unique_ptr<Spool> makeMemorySpool(uint64_t max_bytes);

// A spool on disk in `dir` (created if missing) that survives restarts.
//
// Layout: append-only segment files `seg-<20 digits>.log`, each record framed
// as magic, payload length and CRC-32 of the payload, and a small `head` file
// naming the first unacknowledged record and the dropped count (replaced
// atomically: write a temporary file, rename). Fully acknowledged segments
// are deleted.
//
// Epoch: a file `epoch` holds the uplink epoch of the last open; each open
// takes the next one (a random one the first time or when the file is
// unreadable) and writes it with fsync before returning, so every start of
// the agent numbers its batches in an epoch of its own whatever the wall
// clock does, and a deleted directory never brings old numbers back. (A
// start always takes a new epoch: seqs are not persisted, so it cannot
// continue the last one.)
//
// Durability: every push is written and fdatasync'ed before push() returns,
// so a batch pushed before a crash or power loss is there after reopen. The
// head is rewritten on every pop and drop but not fsync'ed (an fsync per
// acknowledgement would cost more than the batches): if a power cut loses
// head updates, acknowledged batches reappear once and the analyzer drops
// them as duplicates (delivery is at least once); a process crash loses
// nothing, the page cache survives it.
//
// Recovery: on open, every segment is scanned; a torn or corrupt record
// (short header, bad magic, length past the end, CRC mismatch) is skipped —
// the scan resynchronises on the next valid record — and described in
// `*warnings`. Garbage files in `dir` are ignored (and reported). Pushes after
// a reopen go to a new segment, so a torn tail is never appended to.
//
// Bound: `max_bytes` (> 0) caps the framed bytes of the records held
// (payload + 12 bytes each); the oldest are dropped beyond it, and a single
// batch that alone exceeds it is dropped. Disk use is at most max_bytes plus
// the acknowledged part of one segment. dropped() is persisted in the head
// file: it counts since the spool directory was created, across restarts. A
// push that cannot be written (disk full, I/O error) counts as dropped too.
//
// Returns nullptr and sets *error when the directory cannot be used.
std::unique_ptr<Spool> openDiskSpool(const std::string& dir, uint64_t max_bytes, std::string* error,
                                     std::vector<std::string>* warnings = nullptr);

}  // namespace netdiag::collector
