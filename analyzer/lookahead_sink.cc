#include "analyzer/lookahead_sink.h"

namespace netdiag::analyzer {

void LookaheadSink::onProbe(const telemetry::ProbeRecord& r) {
  if (count_ == kDepth) {
    engine_.onProbe(ring_[head_]);
    head_ = (head_ + 1) % kDepth;
    --count_;
  }
  telemetry::ProbeRecord& slot = ring_[(head_ + count_) % kDepth];
  slot = r;
  ++count_;
  engine_.prefetch(slot);
}

void LookaheadSink::onPort(const telemetry::PortRecord& r) {
  flush();
  engine_.onPort(r);
}

void LookaheadSink::onLldp(const telemetry::LldpRecord& r) {
  flush();
  engine_.onLldp(r);
}

void LookaheadSink::flush() {
  for (; count_ > 0; --count_) {
    engine_.onProbe(ring_[head_]);
    head_ = (head_ + 1) % kDepth;
  }
}

}  // namespace netdiag::analyzer
