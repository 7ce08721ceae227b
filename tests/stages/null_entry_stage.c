/* null_entry_stage.c: a stage whose entry point returns NULL (it cannot serve this host),
 * for the tests. */
#include "chunkscope/stage.h"

CHUNKSCOPE_STAGE_EXPORT const chunkscope_stage_descriptor* chunkscope_stage_entry(
    uint32_t host_abi_version) {
  (void)host_abi_version;
  return NULL;
}
