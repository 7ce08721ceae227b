// The malloc family of the chunkscope binaries (rt/alloc_audit.hpp): each call counts
// itself when its thread has armed the audit, then forwards to the C library. Linked into
// executables only (CMake target chunkscope_interpose), never into a library an
// application loads.
#include <cstddef>
#include <unistd.h>

#include "rt/alloc_audit.hpp"

// Sanitizers bring their own allocator, which must see every call first.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CHUNKSCOPE_ALLOC_INTERPOSER 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define CHUNKSCOPE_ALLOC_INTERPOSER 0
#endif
#endif
#if !defined(CHUNKSCOPE_ALLOC_INTERPOSER) && defined(__GLIBC__)
#define CHUNKSCOPE_ALLOC_INTERPOSER 1
#endif
#if !defined(CHUNKSCOPE_ALLOC_INTERPOSER)
#define CHUNKSCOPE_ALLOC_INTERPOSER 0
#endif

#if CHUNKSCOPE_ALLOC_INTERPOSER
// The C library's own entry points, which the definitions below forward to.
extern "C" {
void* __libc_malloc(std::size_t n);
void __libc_free(void* p);
void* __libc_calloc(std::size_t n, std::size_t size);
void* __libc_realloc(void* p, std::size_t n);
void* __libc_memalign(std::size_t align, std::size_t n);
}

namespace aa = chunkscope::alloc_audit;

extern "C" {
extern const bool chunkscope_alloc_interposer_linked;
const bool chunkscope_alloc_interposer_linked = true;
}

extern "C" {
void* malloc(std::size_t n) noexcept {
  aa::note_alloc();
  return __libc_malloc(n);
}
void free(void* p) noexcept {
  if (p) aa::note_free();
  __libc_free(p);
}
void* calloc(std::size_t n, std::size_t size) noexcept {
  aa::note_alloc();
  return __libc_calloc(n, size);
}
// realloc counts as an allocation (and a free when it had a block), realloc(p, 0) as a free.
void* realloc(void* p, std::size_t n) noexcept {
  if (p && n == 0) {
    aa::note_free();
  } else {
    aa::note_alloc();
    if (p) aa::note_free();
  }
  return __libc_realloc(p, n);
}
void* reallocarray(void* p, std::size_t n, std::size_t size) noexcept {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(n, size, &bytes)) return nullptr;
  return realloc(p, bytes);
}
void* memalign(std::size_t align, std::size_t n) noexcept {
  aa::note_alloc();
  return __libc_memalign(align, n);
}
void* aligned_alloc(std::size_t align, std::size_t n) noexcept {
  aa::note_alloc();
  return __libc_memalign(align, n);
}
int posix_memalign(void** out, std::size_t align, std::size_t n) noexcept {
  if (align % sizeof(void*) != 0 || (align & (align - 1)) != 0) return 22;  // EINVAL
  aa::note_alloc();
  void* p = __libc_memalign(align, n);
  if (!p) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void* valloc(std::size_t n) noexcept {
  aa::note_alloc();
  return __libc_memalign(static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), n);
}
}
#endif
