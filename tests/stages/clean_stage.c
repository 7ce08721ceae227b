/* clean_stage.c: a well-behaved chunkscope stage for the tests: a gain, nothing else.
 * `gain` is in dB (default 0); at 0 dB the audio passes through bit for bit. No findings
 * are expected from it: process() neither allocates, blocks nor makes non-finite values. */
#include "chunkscope/stage.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const chunkscope_stage_param_info k_params[] = {
    {"gain", "0", "gain in dB (-120..24); 0 passes the audio through unchanged"},
};

typedef struct clean_stage {
  int32_t channels;
  int unity; /* gain is 0 dB: skip the multiply */
  float gain; /* linear */
} clean_stage;

/* Parses the gain strictly as a finite number of dB in [-120, 24]. */
static int parse_gain(const char* text, double* db, char* error, size_t error_size) {
  char* end = NULL;
  errno = 0;
  double v = (text[0] == '\0' || text[0] == ' ' || text[0] == '\t') ? NAN : strtod(text, &end);
  if (end == NULL || end == text || *end != '\0' || errno == ERANGE || !isfinite(v)) {
    snprintf(error, error_size, "gain=%s: not a number", text);
    return 0;
  }
  if (v < -120.0 || v > 24.0) {
    snprintf(error, error_size, "gain=%s: must be between -120 and 24", text);
    return 0;
  }
  *db = v;
  return 1;
}

static void* clean_create(const chunkscope_stage_config* config, char* error, size_t error_size) {
  double db = 0.0;
  for (uint32_t i = 0; i < config->param_count; ++i) {
    const chunkscope_stage_param* kv = &config->params[i];
    if (strcmp(kv->key, "gain") != 0) {
      snprintf(error, error_size, "%s: unknown parameter", kv->key);
      return NULL;
    }
    if (!parse_gain(kv->value ? kv->value : "", &db, error, error_size)) return NULL;
  }
  clean_stage* s = (clean_stage*)calloc(1, sizeof *s);
  if (!s) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  s->channels = config->channels;
  s->unity = db == 0.0;
  s->gain = (float)pow(10.0, db / 20.0);
  return s;
}

static int clean_process(void* instance, float* const* ch, int32_t frames) {
  const clean_stage* s = (const clean_stage*)instance;
  if (s->unity) return 0;
  for (int32_t c = 0; c < s->channels; ++c)
    for (int32_t n = 0; n < frames; ++n) ch[c][n] *= s->gain;
  return 0;
}

static void clean_reset(void* instance) { (void)instance; /* no state */ }

static void clean_destroy(void* instance) { free(instance); }

static const chunkscope_stage_descriptor k_descriptor = {
    CHUNKSCOPE_STAGE_ABI_VERSION,
    "clean_stage",
    "a plain gain in dB",
    1, 0,
    k_params, 1,
    clean_create, clean_process, clean_reset, clean_destroy, NULL, NULL,
};

CHUNKSCOPE_STAGE_EXPORT const chunkscope_stage_descriptor* chunkscope_stage_entry(
    uint32_t host_abi_version) {
  return host_abi_version >= CHUNKSCOPE_STAGE_ABI_VERSION ? &k_descriptor : NULL;
}
