#pragma once

// A RecordSink that forwards every record, in order, to each of several
// sinks (e.g. to feed one simulated stream to several localizers).

#include <vector>

#include "telemetry/record.h"

namespace netdiag::telemetry {

class TeeSink : public RecordSink {
 public:
  // `sink` is not owned and must outlive the tee; sinks get each record in
  // the order they were added.
  void add(RecordSink* sink) { sinks_.push_back(sink); }

  void onProbe(const ProbeRecord& r) override {
    for (RecordSink* s : sinks_) s->onProbe(r);
  }
  void onPort(const PortRecord& r) override {
    for (RecordSink* s : sinks_) s->onPort(r);
  }
  void onLldp(const LldpRecord& r) override {
    for (RecordSink* s : sinks_) s->onLldp(r);
  }

 private:
  std::vector<RecordSink*> sinks_;
};

}  // namespace netdiag::telemetry
