#pragma once
// Counting the heap calls of hosted code. The chunkscope binaries define the malloc family
// (rt/alloc_interpose.cpp), forwarding to the C library's allocator; every call checks one
// thread-local flag and, when the calling thread has armed it, counts itself. Only the CPU
// backend arms it, around a hosted step's process() call: allocations anywhere else are not
// counted and cost one thread-local load. Sanitizer builds keep their own allocator and
// count nothing (interposer_active() is false there).
#include <cstdint>

namespace chunkscope::alloc_audit {

struct Counts {
  std::uint64_t allocations = 0;  // malloc, calloc, realloc, memalign, posix_memalign, aligned_alloc, valloc
  std::uint64_t frees = 0;        // free of a non-null pointer, realloc to 0 bytes
};

/// True when this binary counts heap calls. [no-alloc, no-block]
bool interposer_active() noexcept;
/// Starts counting this thread's heap calls from zero. [no-alloc, no-block]
void arm() noexcept;
/// Stops counting and returns what this thread did since arm(). [no-alloc, no-block]
Counts disarm() noexcept;

/// Counts every thread's allocations into one process-wide total while on (the tests'
/// proof that the real-time paths allocate nothing). [no-alloc, no-block]
void count_all(bool on) noexcept;
/// The process-wide total since the first count_all(true). [no-alloc, no-block]
std::uint64_t all_allocations() noexcept;

/// Called by the interposer (rt/alloc_interpose.cpp) for each allocation and each free of
/// a non-null block. [no-alloc, no-block]
void note_alloc() noexcept;
/// [no-alloc, no-block]
void note_free() noexcept;

}  // namespace chunkscope::alloc_audit
