/* bad_stage.c: a chunkscope stage that misbehaves on request, for the tests.
 *
 * Every misbehaviour is exactly countable. Calls are counted from 0: call i is the
 * (i+1)-th process() since create() or the last reset(). Over C calls:
 *   alloc_every=N   calls with (i+1) % N == 0 make one malloc(alloc_bytes) and one free:
 *                   floor(C/N) of each.
 *   sleep_every=N   those calls make one 200 us nanosleep: floor(C/N) blocking waits.
 *   lock_every=N    those calls block once in pthread_mutex_lock on a mutex a helper thread
 *                   holds until the call is seen waiting: floor(C/N) blocking waits.
 *   nan_at=K        call K writes one NaN to channel 0, sample 0.
 *   inf_at=K        call K writes one +Inf to channel 0, sample 1 (sample 0 if frames == 1).
 *   subnormal_at=K  call K writes one subnormal float to the last channel, sample 0.
 *   fail_at=K       call K returns 1; last_error says "failure requested at call K".
 *   crash_at=K      call K writes through a null pointer (SIGSEGV).
 *   abort_at=K      call K calls abort() (SIGABRT).
 *   overflow_at=K   call K recurses until the thread's stack overflows (SIGSEGV on the guard page).
 *   exit_at=K       call K ends the process: exit_via=1 exit(exit_status), 2 quick_exit, 3 _exit.
 *   hang_at=K       call K never returns (a loop that checks nothing).
 *   crash_in=N      a call other than process() writes through a null pointer: 1 reset(),
 *                   2 latency() (at create time), 3 last_error() (so with fail_at), 4 destroy().
 *   create_fail=1   create() fails: "create_fail=1 was asked for"; create_fail=2: create() calls abort().
 *   latency=N       latency() returns N.
 *   gain=G          linear gain (default 1: the audio passes through bit for bit).
 * The special values are written after the gain, so they reach the output as written.
 */
#define _GNU_SOURCE /* syscall(SYS_gettid), nanosleep, O_CLOEXEC */

#include "chunkscope/stage.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- parameters */

enum {
  P_ALLOC_EVERY, P_ALLOC_BYTES, P_SLEEP_EVERY, P_LOCK_EVERY, P_NAN_AT, P_INF_AT,
  P_SUBNORMAL_AT, P_FAIL_AT, P_CRASH_AT, P_ABORT_AT, P_CREATE_FAIL, P_LATENCY, P_GAIN,
  P_OVERFLOW_AT, P_EXIT_AT, P_EXIT_VIA, P_EXIT_STATUS, P_HANG_AT, P_CRASH_IN, P_COUNT
};

static const chunkscope_stage_param_info k_params[P_COUNT] = {
    {"alloc_every", NULL, "calls i with (i+1)%N==0 malloc and free alloc_bytes once"},
    {"alloc_bytes", "256", "size of each alloc_every allocation"},
    {"sleep_every", NULL, "calls i with (i+1)%N==0 nanosleep 200 us once"},
    {"lock_every", NULL, "calls i with (i+1)%N==0 block once on a mutex another thread holds"},
    {"nan_at", NULL, "call K writes one NaN (channel 0, sample 0)"},
    {"inf_at", NULL, "call K writes one +Inf (channel 0, sample 1, or 0 if frames is 1)"},
    {"subnormal_at", NULL, "call K writes one subnormal (last channel, sample 0)"},
    {"fail_at", NULL, "call K returns an error"},
    {"crash_at", NULL, "call K writes through a null pointer"},
    {"abort_at", NULL, "call K calls abort()"},
    {"create_fail", "0", "1: create() fails; 2: create() calls abort()"},
    {"latency", "0", "samples latency() reports"},
    {"gain", "1", "linear gain applied to the audio"},
    {"overflow_at", NULL, "call K recurses until the stack overflows"},
    {"exit_at", NULL, "call K ends the process (exit_via: 1 exit, 2 quick_exit, 3 _exit)"},
    {"exit_via", "1", "how exit_at ends the process"},
    {"exit_status", "0", "the status exit_at passes"},
    {"hang_at", NULL, "call K never returns"},
    {"crash_in", "0", "1 reset, 2 latency, 3 last_error, 4 destroy writes through a null pointer"},
};

/* Smallest accepted integer value; -1 marks `gain`, the one real-valued parameter. */
static const long long k_min[P_COUNT] = {1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, -1,
                                         0, 0, 1, 0, 0, 0};
static const long long k_max[P_COUNT] = {
    1LL << 40, 1LL << 30, 1LL << 40, 1LL << 40, 1LL << 62, 1LL << 62, 1LL << 62,
    1LL << 62, 1LL << 62, 1LL << 62, 2, 0x7fffffffLL, 0,
    1LL << 62, 1LL << 62, 3, 255, 1LL << 62, 4};

#define UNSET (-1LL) /* an `_every`/`_at` parameter that was not given */

/* ---------------------------------------------------------------- instance */

typedef struct bad_stage {
  long long v[P_COUNT]; /* integer parameters, UNSET when not given */
  float gain;
  int32_t channels;
  long long calls; /* process() calls since create or reset */
  char fail_message[64];
  /* lock_every: a helper thread holds `mutex` between lock calls */
  int holder_started;
  pthread_t holder;
  pthread_mutex_t mutex;
  sem_t request, done;
  atomic_int holder_holds; /* the helper has (re-)acquired the mutex */
  atomic_int quit;
  atomic_long waiter_tid;  /* the thread blocking in a lock call */
} bad_stage;

/* ---------------------------------------------------------------- parsing */

/* Parses a whole decimal integer in [lo, hi]; on failure writes why. */
static int parse_int(const char* key, const char* text, long long lo, long long hi,
                     long long* out, char* error, size_t error_size) {
  char* end = NULL;
  errno = 0;
  long long v = (text[0] == '-' || text[0] == '+' || (text[0] >= '0' && text[0] <= '9'))
                    ? strtoll(text, &end, 10) : 0;
  if (end == NULL || end == text || *end != '\0' || errno == ERANGE) {
    snprintf(error, error_size, "%s=%s: not an integer", key, text);
    return 0;
  }
  if (v < lo || v > hi) {
    snprintf(error, error_size, "%s=%s: must be between %lld and %lld", key, text, lo, hi);
    return 0;
  }
  *out = v;
  return 1;
}

/* Parses a whole finite real number; on failure writes why. */
static int parse_real(const char* key, const char* text, double* out, char* error,
                      size_t error_size) {
  char* end = NULL;
  errno = 0;
  double v = (text[0] == '\0' || text[0] == ' ' || text[0] == '\t') ? 0.0 : strtod(text, &end);
  if (end == NULL || end == text || *end != '\0' || errno == ERANGE || !isfinite(v)) {
    snprintf(error, error_size, "%s=%s: not a finite number", key, text);
    return 0;
  }
  *out = v;
  return 1;
}

/* Reads every parameter of the config into s; 0 (with the reason) on a bad one. */
static int read_params(bad_stage* s, const chunkscope_stage_config* config, char* error,
                       size_t error_size) {
  double gain = 1.0;
  for (int p = 0; p < P_COUNT; ++p) s->v[p] = UNSET;
  s->v[P_ALLOC_BYTES] = 256;
  s->v[P_CREATE_FAIL] = 0;
  s->v[P_LATENCY] = 0;
  s->v[P_EXIT_VIA] = 1;
  s->v[P_EXIT_STATUS] = 0;
  s->v[P_CRASH_IN] = 0;
  for (uint32_t i = 0; i < config->param_count; ++i) {
    const char* key = config->params[i].key;
    const char* text = config->params[i].value ? config->params[i].value : "";
    int p = 0;
    while (p < P_COUNT && strcmp(key, k_params[p].key) != 0) ++p;
    if (p == P_COUNT) {
      snprintf(error, error_size, "%s: unknown parameter", key);
      return 0;
    }
    int ok = p == P_GAIN ? parse_real(key, text, &gain, error, error_size)
                         : parse_int(key, text, k_min[p], k_max[p], &s->v[p], error, error_size);
    if (!ok) return 0;
  }
  s->gain = (float)gain;
  return 1;
}

/* ---------------------------------------------------------------- the lock helper */

static void sleep_ns(long ns) {
  struct timespec t = {ns / 1000000000L, ns % 1000000000L}, left;
  while (nanosleep(&t, &left) != 0 && errno == EINTR) t = left;
}

static void wait_sem(sem_t* sem) {
  while (sem_wait(sem) != 0 && errno == EINTR) {
  }
}

/* Whether thread `tid` of this process is asleep (state S), i.e. blocked in the lock.
 * Plain system calls, no stdio: this thread allocates nothing while the caller waits. */
static int thread_sleeping(long tid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1; /* cannot tell: rely on the time waited */
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  buf[n > 0 ? n : 0] = '\0';
  const char* paren = strrchr(buf, ')'); /* "tid (comm) S ..." */
  return paren && paren[1] == ' ' && paren[2] == 'S';
}

/* Holds the mutex; on each request lets the waiting call have it, then takes it back. */
static void* holder_main(void* arg) {
  bad_stage* s = (bad_stage*)arg;
  pthread_mutex_lock(&s->mutex);
  atomic_store(&s->holder_holds, 1);
  for (;;) {
    wait_sem(&s->request);
    if (atomic_load(&s->quit)) break;
    sleep_ns(1000000); /* 1 ms, then make sure the caller is really waiting */
    long tid = atomic_load(&s->waiter_tid);
    for (int tries = 0; tries < 10000 && !thread_sleeping(tid); ++tries) sleep_ns(100000);
    pthread_mutex_unlock(&s->mutex);
    wait_sem(&s->done); /* the caller has locked and unlocked it */
    pthread_mutex_lock(&s->mutex);
    atomic_store(&s->holder_holds, 1);
  }
  pthread_mutex_unlock(&s->mutex);
  return NULL;
}

/* Starts the helper and waits until it holds the mutex. 0 on failure. */
static int start_holder(bad_stage* s) {
  pthread_mutex_init(&s->mutex, NULL);
  sem_init(&s->request, 0, 0);
  sem_init(&s->done, 0, 0);
  if (pthread_create(&s->holder, NULL, holder_main, s) != 0) return 0;
  s->holder_started = 1;
  while (!atomic_load(&s->holder_holds)) sleep_ns(100000);
  return 1;
}

/* One lock call: exactly one blocking pthread_mutex_lock. */
static void blocking_lock(bad_stage* s) {
  while (!atomic_load(&s->holder_holds)) { /* the helper re-takes it after the last call */
  }
  atomic_store(&s->holder_holds, 0);
  atomic_store(&s->waiter_tid, (long)syscall(SYS_gettid));
  sem_post(&s->request);
  pthread_mutex_lock(&s->mutex); /* blocks until the helper lets go */
  pthread_mutex_unlock(&s->mutex);
  sem_post(&s->done);
}

/* ---------------------------------------------------------------- callbacks */

static void bad_destroy(void* instance);

static void* bad_create(const chunkscope_stage_config* config, char* error, size_t error_size) {
  bad_stage* s = (bad_stage*)calloc(1, sizeof *s);
  if (!s) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  s->channels = config->channels;
  if (!read_params(s, config, error, error_size)) {
    free(s);
    return NULL;
  }
  if (s->v[P_CREATE_FAIL] == 2) abort();
  if (s->v[P_CREATE_FAIL] == 1) {
    snprintf(error, error_size, "create_fail=1 was asked for");
    free(s);
    return NULL;
  }
  snprintf(s->fail_message, sizeof s->fail_message, "failure requested at call %lld",
           s->v[P_FAIL_AT]);
  if (s->v[P_LOCK_EVERY] != UNSET && !start_holder(s)) {
    snprintf(error, error_size, "cannot start the lock_every helper thread");
    bad_destroy(s);
    return NULL;
  }
  return s;
}

/* Whether call i is one of the every-N calls of parameter p. */
static int every(const bad_stage* s, int p, long long i) {
  return s->v[p] != UNSET && (i + 1) % s->v[p] == 0;
}

/* The blocking and allocating misbehaviours of call i. */
static void misbehave(bad_stage* s, long long i) {
  if (every(s, P_ALLOC_EVERY, i)) {
    size_t n = (size_t)s->v[P_ALLOC_BYTES];
    void* volatile p = malloc(n); /* volatile: the allocation cannot be optimised away */
    if (p) {
      memset(p, 0xA5, n);
      free(p);
    }
  }
  if (every(s, P_SLEEP_EVERY, i)) sleep_ns(200000);
  if (every(s, P_LOCK_EVERY, i)) blocking_lock(s);
}

/* Writes the special sample values asked for at call i (after the gain). */
static void write_specials(const bad_stage* s, float* const* ch, int32_t frames, long long i) {
  volatile float value; /* through a volatile, so no FTZ arithmetic can touch it */
  if (s->v[P_NAN_AT] == i) {
    value = NAN;
    ch[0][0] = value;
  }
  if (s->v[P_INF_AT] == i) {
    value = INFINITY;
    ch[0][frames > 1 ? 1 : 0] = value;
  }
  if (s->v[P_SUBNORMAL_AT] == i) {
    uint32_t bits = 0x00400000u; /* 2^-127: exponent 0, mantissa non-zero */
    float f;
    memcpy(&f, &bits, sizeof f);
    value = f;
    ch[s->channels - 1][0] = value;
  }
}

/* Writes through a null pointer: SIGSEGV. Volatile twice, so the compiler keeps the store
 * and cannot see the pointer is null; not sanitized, so UBSan does not exit first. */
#if defined(__GNUC__)
__attribute__((noinline, no_sanitize("undefined")))
#endif
static void crash(void) {
  volatile int* volatile null_pointer = NULL;
  *null_pointer = 1;
}

/* Recurses with a frame the compiler cannot drop until the stack overflows. */
#if defined(__GNUC__)
__attribute__((noinline, no_sanitize("address", "undefined")))
#endif
static long long overflow(volatile long long depth) {
  volatile char frame[4096];
  if (depth < 0) return 0; /* never: depth only grows */
  frame[0] = (char)depth;
  frame[sizeof frame - 1] = (char)(depth >> 8);
  return overflow(depth + 1) + frame[0] + frame[sizeof frame - 1];
}

/* The calls that end the process or never return (overflow_at, exit_at, hang_at). */
static void end_the_call(const bad_stage* s, long long i) {
  if (s->v[P_OVERFLOW_AT] == i) (void)overflow(0);
  if (s->v[P_EXIT_AT] == i) {
    int status = (int)s->v[P_EXIT_STATUS];
    if (s->v[P_EXIT_VIA] == 2) quick_exit(status);
    if (s->v[P_EXIT_VIA] == 3) _exit(status);
    exit(status);
  }
  if (s->v[P_HANG_AT] == i)
    for (volatile int forever = 1; forever;) {
    }
}

static int bad_process(void* instance, float* const* ch, int32_t frames) {
  bad_stage* s = (bad_stage*)instance;
  long long i = s->calls++;
  end_the_call(s, i);
  misbehave(s, i);
  if (s->gain != 1.0f)
    for (int32_t c = 0; c < s->channels; ++c)
      for (int32_t n = 0; n < frames; ++n) ch[c][n] *= s->gain;
  write_specials(s, ch, frames, i);
  if (s->v[P_CRASH_AT] == i) crash();
  if (s->v[P_ABORT_AT] == i) abort();
  return s->v[P_FAIL_AT] == i ? 1 : 0;
}

/* Call counting starts again from 0. */
static void bad_reset(void* instance) {
  bad_stage* s = (bad_stage*)instance;
  if (s->v[P_CRASH_IN] == 1) crash();
  s->calls = 0;
}

static void bad_destroy(void* instance) {
  bad_stage* s = (bad_stage*)instance;
  if (!s) return;
  if (s->v[P_CRASH_IN] == 4) crash();
  if (s->holder_started) {
    atomic_store(&s->quit, 1);
    sem_post(&s->request);
    pthread_join(s->holder, NULL);
  }
  if (s->v[P_LOCK_EVERY] != UNSET) {
    pthread_mutex_destroy(&s->mutex);
    sem_destroy(&s->request);
    sem_destroy(&s->done);
  }
  free(s);
}

static uint32_t bad_latency(void* instance) {
  if (((const bad_stage*)instance)->v[P_CRASH_IN] == 2) crash();
  return (uint32_t)((const bad_stage*)instance)->v[P_LATENCY];
}

static const char* bad_last_error(void* instance) {
  if (((const bad_stage*)instance)->v[P_CRASH_IN] == 3) crash();
  return ((const bad_stage*)instance)->fail_message;
}

static const chunkscope_stage_descriptor k_descriptor = {
    CHUNKSCOPE_STAGE_ABI_VERSION,
    "bad_stage",
    "misbehaves on request (allocations, sleeps, locks, NaN/Inf/subnormal, failures, crashes)",
    1, 8,
    k_params, P_COUNT,
    bad_create, bad_process, bad_reset, bad_destroy, bad_latency, bad_last_error,
};

CHUNKSCOPE_STAGE_EXPORT const chunkscope_stage_descriptor* chunkscope_stage_entry(
    uint32_t host_abi_version) {
  return host_abi_version >= CHUNKSCOPE_STAGE_ABI_VERSION ? &k_descriptor : NULL;
}
