#include "rt/alt_stack.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

namespace chunkscope {

namespace {

std::size_t page_bytes() noexcept {
  const long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<std::size_t>(p) : 4096;
}

std::size_t mapping_bytes() noexcept { return alt_stack_bytes() + page_bytes(); }

// A thread's own mapping is switched off and unmapped when the thread ends, by the key's
// destructor. A key and plain thread-locals, not a thread_local object with a destructor,
// whose registration would allocate on the thread's first call.
void release(void* base) noexcept {
  stack_t off{};
  off.ss_flags = SS_DISABLE;
  stack_t old{};
  if (sigaltstack(&off, &old) != 0 || (old.ss_flags & SS_ONSTACK)) return;  // in use: leave it
  munmap(base, mapping_bytes());
}

pthread_key_t make_key() noexcept {
  pthread_key_t k{};
  pthread_key_create(&k, release);
  return k;
}
const pthread_key_t g_key = make_key();  // at load: an early key, whose slot needs no allocation

thread_local bool t_ready = false;

}  // namespace

std::size_t alt_stack_bytes() noexcept {
  const long min = sysconf(_SC_SIGSTKSZ);
  const std::size_t want = std::max<std::size_t>(64 * 1024, min > 0 ? 4 * static_cast<std::size_t>(min) : 0);
  const std::size_t page = page_bytes();
  return (want + page - 1) / page * page;
}

bool ensure_alt_stack() noexcept {
  if (t_ready) return true;
  stack_t cur{};
  if (sigaltstack(nullptr, &cur) == 0 && !(cur.ss_flags & SS_DISABLE) && cur.ss_sp) {
    t_ready = true;  // the thread has one already: keep it
    return true;
  }
  const std::size_t page = page_bytes(), size = alt_stack_bytes();
  void* m = mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) return false;
  mprotect(m, page, PROT_NONE);  // a handler that overflows this stack faults, not corrupts
  stack_t ss{};
  ss.ss_sp = static_cast<char*>(m) + page;
  ss.ss_size = size;
  if (sigaltstack(&ss, nullptr) != 0) {
    munmap(m, size + page);
    return false;
  }
  pthread_setspecific(g_key, m);
  t_ready = true;
  return true;
}

}  // namespace chunkscope
