/* no_entry_stage.c: a shared library that is no stage, for the tests: it exports a function,
 * but not chunkscope_stage_entry. */
#include "chunkscope/stage.h"

CHUNKSCOPE_STAGE_EXPORT const chunkscope_stage_descriptor* chunkscope_stage_entry_v0(
    uint32_t host_abi_version);

CHUNKSCOPE_STAGE_EXPORT const chunkscope_stage_descriptor* chunkscope_stage_entry_v0(
    uint32_t host_abi_version) {
  (void)host_abi_version;
  return NULL;
}
