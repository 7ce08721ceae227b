/* crash_on_load.c: a plugin library that is both an LV2 and a LADSPA library of one mono
 * pass-through plugin, for tests/test_plugins.cpp, which builds it at test time:
 *   -DCS_ON_LOAD_ABORT        the library's constructor calls abort() (SIGABRT)
 *   -DCS_ON_LOAD_EXIT=N       the library's constructor calls exit(N)
 *   neither                   a well-behaved library
 * A host that loads it in its own process to list it is ended by it; one that lists from
 * metadata, or loads it in a child process, is not. */
#include <ladspa.h>
#include <lv2/core/lv2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(CS_ON_LOAD_ABORT) || defined(CS_ON_LOAD_EXIT)
__attribute__((constructor)) static void on_load(void) {
#if defined(CS_ON_LOAD_ABORT)
  abort();
#else
  exit(CS_ON_LOAD_EXIT);
#endif
}
#endif

typedef struct {
  const float* in;
  float* out;
} pass;

static void* make(void) { return calloc(1, sizeof(pass)); }
static void connect(void* h, uint32_t port, void* data) {
  pass* p = (pass*)h;
  if (port == 0) p->in = (const float*)data;
  if (port == 1) p->out = (float*)data;
}
static void process(void* h, uint32_t n) {
  pass* p = (pass*)h;
  if (p->out != p->in) memmove(p->out, p->in, n * sizeof(float));
}

/* ---- LV2 */
static LV2_Handle lv2_make(const LV2_Descriptor* d, double rate, const char* bundle, const LV2_Feature* const* f) {
  (void)d, (void)rate, (void)bundle, (void)f;
  return make();
}
static void lv2_connect(LV2_Handle h, uint32_t port, void* data) { connect(h, port, data); }
static void lv2_run(LV2_Handle h, uint32_t n) { process(h, n); }
static const LV2_Descriptor k_lv2 = {"urn:chunkscope:test:crash-on-load", lv2_make, lv2_connect, NULL, lv2_run,
                                     NULL, free, NULL};
LV2_SYMBOL_EXPORT const LV2_Descriptor* lv2_descriptor(uint32_t i) { return i == 0 ? &k_lv2 : NULL; }

/* ---- LADSPA */
static LADSPA_Handle la_make(const LADSPA_Descriptor* d, unsigned long rate) {
  (void)d, (void)rate;
  return make();
}
static void la_connect(LADSPA_Handle h, unsigned long port, LADSPA_Data* data) { connect(h, (uint32_t)port, data); }
static void la_run(LADSPA_Handle h, unsigned long n) { process(h, (uint32_t)n); }
static const LADSPA_PortDescriptor k_ports[] = {LADSPA_PORT_INPUT | LADSPA_PORT_AUDIO,
                                                LADSPA_PORT_OUTPUT | LADSPA_PORT_AUDIO};
static const char* const k_names[] = {"Input", "Output"};
static const LADSPA_PortRangeHint k_hints[] = {{0, 0, 0}, {0, 0, 0}};
static const LADSPA_Descriptor k_ladspa = {
    9901, "cs_pass", LADSPA_PROPERTY_HARD_RT_CAPABLE, "CS test pass-through", "chunkscope tests", "None",
    2, k_ports, k_names, k_hints, NULL, la_make, la_connect, NULL, la_run, NULL, NULL, NULL, free};
__attribute__((visibility("default"))) const LADSPA_Descriptor* ladspa_descriptor(unsigned long i) {
  return i == 0 ? &k_ladspa : NULL;
}
