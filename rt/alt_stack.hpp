#pragma once
// An alternate signal stack for the calling thread, so that a fault handler can run when the
// thread's own stack is what overflowed (deep recursion in hosted code). Every thread that
// runs hosted code calls ensure_alt_stack() once before it does: the engine's threads as they
// start, the device callback on its first call, an LV2 worker as it starts, the main thread
// when the handlers are installed.
//
// Design: the stack is mapped (mmap, with a guard page below it) the first time a thread asks,
// and unmapped by a thread key's destructor when the thread ends, after sigaltstack is switched
// off; a thread that already has an alternate stack (a sanitizer's, one of its host's) keeps
// it. The handlers are installed with SA_ONSTACK.
#include <cstddef>

namespace chunkscope {

/// The calling thread has an alternate signal stack from now on (false: the system refused
/// one, and a stack overflow there takes the default action). Not real-time on its first call
/// in a thread (a mapping and a system call); after that [no-alloc, no-block] (one
/// thread-local load).
bool ensure_alt_stack() noexcept;

/// The size of each alternate stack mapped (the guard page not included). [no-alloc, no-block]
std::size_t alt_stack_bytes() noexcept;

}  // namespace chunkscope
