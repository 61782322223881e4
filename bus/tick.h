#pragma once

// Tick markers: the engine's clock on the bus (docs/operations.md, "Two
// analyzers on one stream").
//
// Every analyzer on the bus publishes, once per tick period, its wall clock
// rounded down to the period, on <prefix>.<fabric>.tick, into the batches'
// stream. The message id is the tick's time, so when two analyzers publish
// the same tick the stream's duplicate window keeps one. An analyzer moves
// its engine's clock only where a tick marker sits in the stream (never by
// its own wall clock), and hands records to the engine at stream positions
// only: two analyzers reading the same stream feed their engines the same
// records in the same order, and decide the same. A silent fabric still
// gets passes, as long as one analyzer is up to publish ticks.

#include <optional>
#include <string>
#include <string_view>

#include "bus/connection.h"

namespace netdiag::bus {

// `wall_s` rounded down to a multiple of `period_s`.
double tickTime(double wall_s, double period_s);
// The body of a tick marker ("<seconds>.<milliseconds>") and what it says:
// nullopt for anything but a finite, non-negative decimal time.
std::string encodeTick(double t);
std::optional<double> decodeTick(std::string_view body);

// Publishes the tick marker of time `t` without waiting for the stream's
// acknowledgement (a lost tick is replaced by the next). Not sent while
// disconnected: nats.c would queue stale ticks for the reconnect. "" or why
// it was not sent.
std::string publishTick(Connection& connection, double t);

}  // namespace netdiag::bus
