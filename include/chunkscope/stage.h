/* chunkscope/stage.h: your own processing as a chunkscope chain stage (`so:PATH`).
 *
 * A stage is a shared library that exports one C symbol, chunkscope_stage_entry, returning
 * a descriptor: the ABI version it was built for, its name, and four functions. chunkscope
 * checks the version before anything else, then, before the run starts, calls create() with
 * the stream's rate, its largest block, its channel count and the `key=value` parameters of
 * the chain spec; during the run it calls process() once per chunk on the processor thread,
 * on planar float buffers, in place; at the end destroy().
 *
 *   hp:80:4 | so:./build/examples/libcompressor_stage.so:ratio=4:threshold=-18 | lp:12k:8
 *
 * Real-time contract: process() and reset() run on the real-time thread. They must not
 * allocate, lock, sleep, do I/O or wait; chunkscope counts every heap allocation and every
 * voluntary context switch made inside process() and reports them as findings, and counts
 * NaN, infinite and subnormal samples in its output. create() and destroy() run before and
 * after the stream: they may allocate and fail.
 *
 * Threads: each function below is tagged with the thread it is called on.
 *   [setup]       the command's main thread, before the stream starts (not real-time);
 *   [processing]  the thread that processes the chunks (real-time: the engine's processor
 *                 thread, or the source's or the audio callback's with --inline);
 *   [teardown]    the command's main thread, after the stream has stopped (not real-time).
 * create() and destroy() are never called at the same time as each other. Under --streams N
 * (and in compare's lanes) every stream has instances of its own, and process() of different
 * instances runs at the same time on different threads: state the instances share (a static,
 * a global table) must be safe for that, or the streams' output will differ.
 *
 * Units: lengths of audio are frames (one sample per channel); a block of `frames` frames
 * holds frames x channels samples.
 *
 * Written in C++: include this header and define chunkscope_stage_entry as declared below;
 * the declaration gives it C linkage, so the library exports the unmangled name chunkscope
 * loads (examples/gain_stage.cpp). No exception may leave any function of the descriptor.
 *
 * Only C types cross this boundary: no exception may leave any function, nothing returned
 * must be freed by the other side, and every string the stage returns stays valid until
 * destroy() (or for the life of the library, for the descriptor's own).
 *
 * Versioning: a host accepts a descriptor whose abi_version is between 1 and its own
 * CHUNKSCOPE_STAGE_ABI_VERSION; fields are only ever added at the end, behind a new version.
 */
#ifndef CHUNKSCOPE_STAGE_H
#define CHUNKSCOPE_STAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CHUNKSCOPE_STAGE_ABI_VERSION 1u
/* The one symbol a stage library exports (see chunkscope_stage_entry_fn). */
#define CHUNKSCOPE_STAGE_ENTRY "chunkscope_stage_entry"

#if defined(_WIN32)
#define CHUNKSCOPE_STAGE_EXPORT __declspec(dllexport)
#else
#define CHUNKSCOPE_STAGE_EXPORT __attribute__((visibility("default")))
#endif

/* One `key=value` parameter from the chain spec, as written (the value is not parsed). */
typedef struct chunkscope_stage_param {
  const char* key;
  const char* value;
} chunkscope_stage_param;

/* A parameter the stage accepts. When the descriptor lists its parameters, chunkscope
 * refuses a spec naming any other key before the run starts; with none listed, every
 * parameter is passed to create() to judge. */
typedef struct chunkscope_stage_param_info {
  const char* key;
  const char* default_value; /* as text, for the docs and errors; may be NULL */
  const char* description;   /* one line; may be NULL */
} chunkscope_stage_param_info;

/* What create() is told about the stream. The config, the params array and their strings
 * live only while create() runs: an instance copies what it keeps. */
typedef struct chunkscope_stage_config {
  uint32_t struct_size;  /* sizeof(chunkscope_stage_config) of the host */
  double sample_rate;    /* Hz */
  int32_t max_frames;    /* the largest block process() will see */
  int32_t channels;      /* buffers process() gets, one per channel */
  const chunkscope_stage_param* params;
  uint32_t param_count;
} chunkscope_stage_config;

typedef struct chunkscope_stage_descriptor {
  uint32_t abi_version; /* CHUNKSCOPE_STAGE_ABI_VERSION the stage was built with */
  const char* name;     /* short name for reports, e.g. "compressor" */
  const char* description; /* one line; may be NULL */
  /* Channel counts the stage can take: 0 means any. A chunk outside [min, max] is refused
   * at prepare, naming both, except that a stage with max_channels 1 (a mono stage) on a
   * wider chunk runs as one instance per channel, each created with config.channels 1 and
   * given its own channel, as mono LV2 and LADSPA plugins run. */
  int32_t min_channels, max_channels;
  const chunkscope_stage_param_info* params; /* may be NULL (any key goes to create) */
  uint32_t param_count;

  /* [setup] Makes an instance for `config`. On failure returns NULL and writes a one-line
   * reason (NUL-terminated, at most error_size bytes) to `error`. May allocate. */
  void* (*create)(const chunkscope_stage_config* config, char* error, size_t error_size);
  /* [processing] Processes `frames` frames (1..max_frames) in place: channels[c][0..frames-1]
   * for each of the config's channels. Returns 0, or non-zero to stop the run; then
   * last_error (if given) says why. Real-time: no allocation, lock, sleep or I/O. */
  int (*process)(void* instance, float* const* channels, int32_t frames);
  /* [processing, or setup between runs: compare's rounds, stage-bench] Clears the
   * processing state (as after create) without allocating. Real-time. May be NULL. */
  void (*reset)(void* instance);
  /* [teardown, or setup when a later instance's create() failed] Frees the instance. */
  void (*destroy)(void* instance);
  /* [setup] Frames of delay the stage adds (lookahead), reported as its declared latency.
   * Called once, right after create(). May be NULL (none). */
  uint32_t (*latency)(void* instance);
  /* [processing] The reason for the last non-zero process() return, called right after it;
   * the string stays valid until the next process() or destroy(). Real-time. May be NULL. */
  const char* (*last_error)(void* instance);
} chunkscope_stage_descriptor;

/* The entry point: returns the stage's descriptor, or NULL when the stage cannot serve a host
 * of `host_abi_version`. Called once, before anything else. */
typedef const chunkscope_stage_descriptor* (*chunkscope_stage_entry_fn)(uint32_t host_abi_version);

/* [setup] The entry point a stage library defines, declared here so that it has C linkage in
 * C++ too. A stage defines it as
 *   CHUNKSCOPE_STAGE_EXPORT const chunkscope_stage_descriptor* chunkscope_stage_entry(uint32_t v) { ... }
 * (a host does not call this declaration: it looks the symbol up in the loaded library). */
CHUNKSCOPE_STAGE_EXPORT const chunkscope_stage_descriptor* chunkscope_stage_entry(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* CHUNKSCOPE_STAGE_H */
