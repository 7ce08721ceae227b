#pragma once
// Chunks and their timing records. A chunk is a slot of a fixed pool: its samples live in
// one slab allocated at prepare time, and its record is a fixed-size POD written once per
// stage boundary, never a string.
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "rt/backend.hpp"

namespace chunkscope {

enum ChunkFlags : std::uint32_t {
  kChunkShort = 1u << 0,   // fewer frames than the chunk size (the last chunk of a file)
  kChunkWarmup = 1u << 1,  // among the first --warmup chunks: reported apart
  kChunkMiss = 1u << 2,    // latency above the budget
  kChunkSwitchRecord = 1u << 3,  // the processing thread's context-switch record timed queue_in and process
  kChunkSourceRecord = 1u << 4,  // the source thread's record timed the source stage
  kChunkSinkRecord = 1u << 5,    // the sink thread's record timed queue_out and sink
};

/// Stamps in ns on the monotonic clock; durations in ns.
struct ChunkRecord {
  std::uint64_t seq;          // sequence number given by the source (drops leave gaps)
  std::int64_t media_frame;   // position of the first frame in the stream
  std::uint32_t frames;
  std::uint32_t flags;
  std::int64_t sched;         // scheduled arrival (paced) or hand-over time (max speed)
  std::int64_t woke;          // the source woke for it (paced: after its wait for sched; else = sched)
  std::int64_t ready;         // source finished filling the chunk and queued it
  std::int64_t dequeue;       // processor took it from the queue
  std::int64_t proc_start;
  std::int64_t proc_end;
  std::int64_t sink_start;    // sink took it from the queue
  std::int64_t emit;          // sink finished with it
  std::int64_t launch_ns, h2d_ns, kernel_ns, d2h_ns, sync_ns, calib_ns;  // from ProcessStats
  std::uint32_t dispatches, launches;
  std::uint16_t q_in_depth;   // source->processor queue depth after enqueue
  std::uint16_t q_out_depth;  // processor->sink queue depth after enqueue
  std::uint32_t proc_cpu_ns;  // CPU time of the processing thread across process() (clamped to 2^32-1; 0: not measured)
  std::uint32_t steps;        // planned steps timed in step_ns (0: the backend does not time steps)
  std::uint32_t hosted_blocked_ns;  // hosted steps' time off the CPU in calls that waited (a lock, a sleep, I/O)
  std::uint32_t step_ns[kMaxTimedSteps];      // from ProcessStats: each step's wall time
  std::uint32_t step_cpu_ns[kMaxTimedSteps];  // CPU time in each step (without the record: hosted steps only)
  // Each stage's time off the CPU by the context-switch record of the thread that lived it
  // (source: the source's; queue_in and process: the processor's; queue_out and sink: the
  // sink's; flags say which were kept), preempted and blocked, in stage order
  std::uint32_t off_preempted_ns[5], off_blocked_ns[5];
  // the processor's time off the CPU while this chunk waited for it to finish earlier
  // chunks, but for a block inside the previous chunk's processing (the chain's work)
  std::uint32_t busy_off_ns;
  std::uint32_t step_preempt_ns[kMaxTimedSteps];  // each step's time preempted
};
static_assert(std::is_trivially_copyable_v<ChunkRecord>);
static_assert(sizeof(ChunkRecord) == 400, "ChunkRecord is a fixed-size record");

struct Chunk {
  ChunkRecord rec;
  void* data;  // interleaved samples, capacity: frames x channels of the pool
};

/// A fixed pool of chunks. prepare() allocates; nothing else does.
class ChunkPool {
 public:
  /// Allocates `count` chunks of `frames` x `channels` samples of `dtype`. [allocates, no-block]
  void prepare(std::size_t count, int frames, int channels, DType dtype);
  /// [no-alloc, no-block]
  Chunk* at(std::size_t i) noexcept { return &chunks_[i]; }
  /// [no-alloc, no-block]
  std::size_t size() const noexcept { return chunks_.size(); }
  /// [no-alloc, no-block]
  std::size_t bytes() const noexcept { return slab_.size() * sizeof(double); }

 private:
  std::vector<double> slab_;  // double-aligned storage for either dtype
  std::vector<Chunk> chunks_;
};

/// [allocates, no-block]
inline void ChunkPool::prepare(std::size_t count, int frames, int channels, DType dtype) {
  const std::size_t samples = static_cast<std::size_t>(frames) * static_cast<std::size_t>(channels);
  const std::size_t doubles_per_chunk = (samples * dtype_size(dtype) + sizeof(double) - 1) / sizeof(double);
  // round each chunk up to a cache line
  const std::size_t stride = (doubles_per_chunk + 7) / 8 * 8;
  slab_.assign(stride * count, 0.0);
  chunks_.assign(count, Chunk{});
  for (std::size_t i = 0; i < count; ++i) chunks_[i].data = slab_.data() + i * stride;
}

}  // namespace chunkscope
