/* cs_worker.c: an LV2 plugin (mono pass-through) that asks its host's worker for work in every
 * run(), for tests/test_plugins.cpp, which builds it at test time. It checks what LV2 and
 * chunkscope promise around a reset (deactivate, then activate) and abort()s, saying which,
 * when one is broken:
 *   - work() never runs beside activate() or deactivate() (LV2's threading classes);
 *   - every request made before a reset is answered before it (none is lost), and no response
 *     to one arrives after it (work_response checks the activation it was asked in).
 * cleanup() writes "cs-worker: R requests, A answered, N resets" to stderr. */
#include <lv2/core/lv2.h>
#include <lv2/worker/worker.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint32_t activation; /* the activation the request was made in */
  uint32_t seq;
} request;

typedef struct {
  LV2_Worker_Schedule* schedule;
  const float* in;
  float* out;
  atomic_int in_work; /* work() under way (the worker's side) */
  /* the audio side's */
  uint32_t activation, seq, outstanding;
  unsigned long requests, answered;
} cs_worker;

static void fail(const char* what, unsigned long n) {
  fprintf(stderr, "cs-worker: %s (%lu)\n", what, n);
  abort();
}

static LV2_Handle instantiate(const LV2_Descriptor* d, double rate, const char* bundle, const LV2_Feature* const* f) {
  (void)d, (void)rate, (void)bundle;
  LV2_Worker_Schedule* schedule = NULL;
  for (int i = 0; f && f[i]; ++i)
    if (!strcmp(f[i]->URI, LV2_WORKER__schedule)) schedule = (LV2_Worker_Schedule*)f[i]->data;
  if (!schedule) return NULL;
  cs_worker* w = (cs_worker*)calloc(1, sizeof(cs_worker));
  if (w) w->schedule = schedule;
  return w;
}

static void connect_port(LV2_Handle h, uint32_t port, void* data) {
  cs_worker* w = (cs_worker*)h;
  if (port == 0) w->in = (const float*)data;
  if (port == 1) w->out = (float*)data;
}

static void activate(LV2_Handle h) {
  cs_worker* w = (cs_worker*)h;
  if (atomic_load(&w->in_work)) fail("activate() while work() ran", w->activation);
  if (w->outstanding) fail("activated again with requests from before the reset unanswered", w->outstanding);
  ++w->activation;
}

static void deactivate(LV2_Handle h) {
  cs_worker* w = (cs_worker*)h;
  if (atomic_load(&w->in_work)) fail("deactivate() while work() ran", w->activation);
}

static void run(LV2_Handle h, uint32_t n) {
  cs_worker* w = (cs_worker*)h;
  if (w->out != w->in) memmove(w->out, w->in, n * sizeof(float));
  const request r = {w->activation, ++w->seq};
  if (w->schedule->schedule_work(w->schedule->handle, sizeof r, &r) == LV2_WORKER_SUCCESS) {
    ++w->outstanding;
    ++w->requests;
  }
}

static LV2_Worker_Status work(LV2_Handle h, LV2_Worker_Respond_Function respond, LV2_Worker_Respond_Handle rh,
                              uint32_t size, const void* data) {
  cs_worker* w = (cs_worker*)h;
  if (atomic_exchange(&w->in_work, 1)) fail("work() twice at once", 0);
  const LV2_Worker_Status s = respond(rh, size, data);
  atomic_store(&w->in_work, 0);
  return s;
}

static LV2_Worker_Status work_response(LV2_Handle h, uint32_t size, const void* data) {
  cs_worker* w = (cs_worker*)h;
  request r;
  if (size != sizeof r) fail("a response of the wrong size", size);
  memcpy(&r, data, sizeof r);
  if (r.activation != w->activation) fail("a response to a request made before the reset arrived after it", r.seq);
  --w->outstanding;
  ++w->answered;
  return LV2_WORKER_SUCCESS;
}

static void cleanup(LV2_Handle h) {
  cs_worker* w = (cs_worker*)h;
  fprintf(stderr, "cs-worker: %lu requests, %lu answered, %lu resets\n", w->requests, w->answered,
          (unsigned long)(w->activation ? w->activation - 1 : 0));
  free(w);
}

static const void* extension_data(const char* uri) {
  static const LV2_Worker_Interface iface = {work, work_response, NULL};
  return strcmp(uri, LV2_WORKER__interface) ? NULL : &iface;
}

static const LV2_Descriptor k_desc = {"urn:chunkscope:test:worker", instantiate, connect_port, activate, run,
                                      deactivate, cleanup, extension_data};
LV2_SYMBOL_EXPORT const LV2_Descriptor* lv2_descriptor(uint32_t i) { return i == 0 ? &k_desc : NULL; }
