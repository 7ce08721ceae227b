/* too_new_stage.c: a stage built for a newer ABI than the host's, for the tests. The
 * descriptor is otherwise valid (a pass-through); a host must refuse it on the version alone,
 * before calling anything in it. */
#include "chunkscope/stage.h"

#include <stdlib.h>

static void* new_create(const chunkscope_stage_config* config, char* error, size_t error_size) {
  (void)config, (void)error, (void)error_size;
  return malloc(1);
}

static int new_process(void* instance, float* const* ch, int32_t frames) {
  (void)instance, (void)ch, (void)frames;
  return 0;
}

static void new_destroy(void* instance) { free(instance); }

static const chunkscope_stage_descriptor k_descriptor = {
    CHUNKSCOPE_STAGE_ABI_VERSION + 1,
    "too_new_stage",
    "claims an ABI version one above the host's",
    1, 0,
    NULL, 0,
    new_create, new_process, NULL, new_destroy, NULL, NULL,
};

CHUNKSCOPE_STAGE_EXPORT const chunkscope_stage_descriptor* chunkscope_stage_entry(
    uint32_t host_abi_version) {
  (void)host_abi_version; /* answers every host, as a careless stage would */
  return &k_descriptor;
}
