// Liveness-based memory planning for the lazy graph: every intermediate buffer of a compiled graph gets an
// offset into one arena, so that buffers whose lifetimes overlap never share memory and buffers whose
// lifetimes do not overlap may. Steps are the positions of nodes in the execution order.
//
// The planner first merges honoured in-place chains (x -> relu(x) -> add(.., 1) written over the same
// memory) into blocks whose lifetime is the union of their members' and whose size is the largest member's,
// then places blocks "greedy by size" (Pisarchyk & Lee, "Efficient Memory Management for Deep Neural Net
// Inference", 2020; TFLite's ArenaPlanner): largest first, each at the lowest aligned offset that does not
// collide with an already placed block whose lifetime intersects its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace oneflow::graph {

// One buffer to place. Lifetimes are closed step intervals [first, last].
struct BufferRequest {
  size_t bytes = 0;       // 0 is allowed (gets offset 0, takes no space)
  int32_t first = 0;      // step that writes the buffer
  int32_t last = 0;       // last step that reads it (>= first; == first if never read)
  int32_t inplace_of = -1;  // optional: a request this one may share memory with exactly (same offset): the step
                            // `first` of this request reads inplace_of's buffer for the last time and writes this one
                            // (each element after it read the one of the same index). Honoured only if
                            // requests[inplace_of].last == first, bytes <= its bytes, and inplace_of was not already
                            // shared by another request; otherwise ignored.
                            // Two more cases are ignored, so that the only requests sharing memory while both
                            // are live are honoured pairs: a zero-byte request (it needs no memory), and a claim
                            // on a buffer that itself took an earlier buffer's memory and is written and last
                            // read in the same step (inplace_of.first == inplace_of.last), since that earlier
                            // buffer is then still live at `first`.
};

struct MemoryPlan {
  std::vector<size_t> offsets;    // one per request, multiple of `alignment`
  std::vector<bool> inplace;      // request i got requests[i].inplace_of's memory
  size_t peak_bytes = 0;          // the arena size the plan needs
  size_t total_bytes = 0;         // the sum of all requests rounded up to `alignment` (no reuse)
};

// Places `requests` in one arena. Contract: two requests whose lifetimes [first, last] intersect never
// overlap in memory (each occupies [offset, offset + bytes)), except an honoured in-place pair, which
// shares exactly (same offset). Deterministic: the same requests give the same plan.
// InvalidArgument, naming the request, for last < first, inplace_of out of range or not earlier than the
// request itself (inplace_of >= i), a size that overflows when rounded up; and for an alignment that is
// not a power of two. O(n^2) in the worst case (every lifetime overlapping every other); 20000 requests
// plan in a fraction of a second.
MemoryPlan PlanMemory(std::span<const BufferRequest> requests, size_t alignment = 64);

}  // namespace oneflow::graph
