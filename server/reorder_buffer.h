#pragma once

// The live analyzer's reorder buffer: records wait here, grouped by the
// batch they came in, until the watermark passes them, and leave in time
// order (arrival order among records of the same time).
//
// Each batch is one run, its records sorted by time once when added (a
// stable sort, usually a no-op check: agents send in time order). The
// buffer is a heap of runs keyed by each run's next record, so it holds one
// entry per batch, not per record: taking a record costs no heap work while
// its run stays ahead of the others. Merging the runs by (time, arrival)
// gives exactly the order one heap of every record would.
//
// Thread-safety: none; the engine thread owns it.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace netdiag::server {

class ReorderBuffer {
 public:
  // One batch's records, by their position in arrival order within it.
  // Owned by the caller (the live analyzer's pending batch derives from
  // it); it must stay put until release() reports it done.
  struct Run {
    struct Ref {
      double t = 0;
      uint32_t pos = 0;
    };
    std::vector<Ref> sequence;  // add() sorts it by time
    size_t next = 0;            // the first record not taken yet
    uint64_t first_order = 0;   // arrival order of position 0, over all runs

    double nextT() const { return sequence[next].t; }
    uint64_t nextOrder() const { return first_order + sequence[next].pos; }
  };

  // Adds a run whose sequence lists its records in arrival order (pos 0,
  // 1, ...). An empty run is not held (nothing will report it done).
  void add(Run& run);

  // Takes every held record at or below `watermark` in order, calling
  // take(run, pos) for each and then done(run) once a run's last record is
  // taken (the run is no longer held then).
  template <typename Take, typename Done>
  void release(double watermark, Take&& take, Done&& done);

  bool empty() const { return heap_.empty(); }
  size_t records() const { return records_; }
  size_t runs() const { return heap_.size(); }
  // The time of the oldest record held; only when !empty().
  double oldest() const { return heap_.front()->nextT(); }

 private:
  // Heap order: a run whose next record comes later sinks.
  static bool later(const Run* a, const Run* b) {
    return a->nextT() != b->nextT() ? a->nextT() > b->nextT() : a->nextOrder() > b->nextOrder();
  }
  void pop();
  void push();

  std::vector<Run*> heap_;
  size_t records_ = 0;
  uint64_t order_ = 0;
};

template <typename Take, typename Done>
void ReorderBuffer::release(double watermark, Take&& take, Done&& done) {
  while (!heap_.empty() && heap_.front()->nextT() <= watermark) {
    pop();  // to the back; the front is the best of the others
    Run* run = heap_.back();
    // Its records in a row while they come before every other run's.
    for (;;) {
      const uint32_t pos = run->sequence[run->next++].pos;
      --records_;
      take(*run, pos);
      if (run->next == run->sequence.size()) {
        heap_.pop_back();
        done(*run);
        break;
      }
      if (run->nextT() > watermark || (heap_.size() > 1 && later(run, heap_.front()))) {
        push();
        break;
      }
    }
  }
}

}  // namespace netdiag::server
