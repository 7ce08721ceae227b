/* mono_stage.c: a stage that takes exactly one channel, for the tests of one instance per
 * channel: a one-pole lowpass (`a`, the pole, default 0.9) whose state is the instance's
 * own, so an instance shared by two channels would give other samples than two instances.
 * create() refuses any channel count but 1. */
#include "chunkscope/stage.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const chunkscope_stage_param_info k_params[] = {
    {"a", "0.9", "the pole, in [0, 1): y = (1 - a) x + a y"},
};

typedef struct mono_stage {
  float a, y;
} mono_stage;

static void* mono_create(const chunkscope_stage_config* config, char* error, size_t error_size) {
  double a = 0.9;
  if (config->channels != 1) {
    snprintf(error, error_size, "takes 1 channel, was given %d", (int)config->channels);
    return NULL;
  }
  for (uint32_t i = 0; i < config->param_count; ++i) {
    const char* v = config->params[i].value ? config->params[i].value : "";
    char* end = NULL;
    errno = 0;
    a = strtod(v, &end);
    if (strcmp(config->params[i].key, "a") != 0 || end == v || *end != '\0' || !(a >= 0.0 && a < 1.0)) {
      snprintf(error, error_size, "%s=%s: a must be a number in [0, 1)", config->params[i].key, v);
      return NULL;
    }
  }
  mono_stage* s = (mono_stage*)calloc(1, sizeof *s);
  if (!s) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  s->a = (float)a;
  return s;
}

static int mono_process(void* instance, float* const* ch, int32_t frames) {
  mono_stage* s = (mono_stage*)instance;
  for (int32_t n = 0; n < frames; ++n) ch[0][n] = s->y = (1.0f - s->a) * ch[0][n] + s->a * s->y;
  return 0;
}

static void mono_reset(void* instance) { ((mono_stage*)instance)->y = 0.0f; }

static void mono_destroy(void* instance) { free(instance); }

static const chunkscope_stage_descriptor k_descriptor = {
    CHUNKSCOPE_STAGE_ABI_VERSION,
    "mono_stage",
    "a one-pole lowpass on one channel",
    1, 1,
    k_params, 1,
    mono_create, mono_process, mono_reset, mono_destroy, NULL, NULL,
};

CHUNKSCOPE_STAGE_EXPORT const chunkscope_stage_descriptor* chunkscope_stage_entry(
    uint32_t host_abi_version) {
  return host_abi_version >= CHUNKSCOPE_STAGE_ABI_VERSION ? &k_descriptor : NULL;
}
