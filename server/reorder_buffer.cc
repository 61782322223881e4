#include "server/reorder_buffer.h"

#include <algorithm>

namespace netdiag::server {

void ReorderBuffer::add(Run& run) {
  if (run.sequence.empty()) return;
  auto by_time = [](const Run::Ref& a, const Run::Ref& b) { return a.t < b.t; };
  if (!std::is_sorted(run.sequence.begin(), run.sequence.end(), by_time)) {
    std::stable_sort(run.sequence.begin(), run.sequence.end(), by_time);
  }
  run.next = 0;
  run.first_order = order_;
  order_ += run.sequence.size();
  records_ += run.sequence.size();
  heap_.push_back(&run);
  push();
}

void ReorderBuffer::pop() { std::pop_heap(heap_.begin(), heap_.end(), later); }
void ReorderBuffer::push() { std::push_heap(heap_.begin(), heap_.end(), later); }

}  // namespace netdiag::server
