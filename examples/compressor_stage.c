/* compressor_stage.c: a feed-forward compressor as a chunkscope stage (chunkscope/stage.h).
 *
 *   chunkscope ... --chain 'so:./build/examples/libcompressor_stage.so:ratio=4:threshold=-18'
 *
 * Signal flow, per sample frame:
 *   1. detector: the peak |x| across all channels (linked, so the stereo image stays put),
 *      sample by sample, with no peak hold: on a steady tone the smoother averages the
 *      reduction over the waveform, so it settles a little under the static curve's;
 *   2. gain computer: the level in dB above the threshold, bent by a soft knee, scaled by
 *      1 - 1/ratio, gives the wanted gain reduction in dB;
 *   3. ballistics: a one-pole smoother on that reduction, fast (attack) while it rises and
 *      slow (release) while it falls;
 *   4. the (optionally delayed, for lookahead) input is multiplied by the resulting gain and
 *      the makeup gain.
 *
 * Everything is computed per sample from the state carried between samples, never per
 * block, so the output does not depend on how the host cuts the stream into chunks: one call
 * over N frames and N calls over one frame give the same bits. process() and reset() do not
 * allocate, lock or do I/O; create() allocates the instance and the lookahead delay line.
 */
#include "chunkscope/stage.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- parameters */

enum { P_THRESHOLD, P_RATIO, P_ATTACK, P_RELEASE, P_KNEE, P_MAKEUP, P_LOOKAHEAD, P_COUNT };

static const chunkscope_stage_param_info k_params[P_COUNT] = {
    {"threshold", "-18", "level in dBFS above which the gain is reduced (-100..20)"},
    {"ratio", "4", "input dB over the threshold per output dB over it (1..100)"},
    {"attack", "5", "time constant in ms of the gain reduction rising (0..1000)"},
    {"release", "50", "time constant in ms of the gain reduction falling (0..5000)"},
    {"knee", "6", "width in dB of the soft knee centred on the threshold (0..48)"},
    {"makeup", "0", "gain in dB applied after compression (-40..40)"},
    {"lookahead", "0", "delay in ms so the gain reacts before the peak arrives (0..100)"},
};

/* Accepted range of each parameter, in the order of k_params. */
static const double k_min[P_COUNT] = {-100.0, 1.0, 0.0, 0.0, 0.0, -40.0, 0.0};
static const double k_max[P_COUNT] = {20.0, 100.0, 1000.0, 5000.0, 48.0, 40.0, 100.0};

/* ---------------------------------------------------------------- instance */

typedef struct compressor {
  int32_t channels;
  /* settings, derived once in create() */
  double threshold_db, slope, knee_db; /* slope = 1 - 1/ratio */
  double knee_lo_lin;                  /* linear level below which no reduction applies */
  double attack_coef, release_coef;    /* one-pole coefficients, 0 = instant */
  double makeup_db, makeup_lin;
  uint32_t delay;                      /* lookahead in samples */
  /* state, cleared by reset() */
  double env_db;                       /* smoothed gain reduction in dB (>= 0) */
  uint32_t pos;                        /* write/read index in the delay line */
  float* line;                         /* channels * delay samples, channel-major */
} compressor;

/* ---------------------------------------------------------------- parsing */

/* Parses `text` strictly as a finite number in [lo, hi]; on failure writes why. */
static int parse_number(const char* key, const char* text, double lo, double hi,
                        double* out, char* error, size_t error_size) {
  char* end = NULL;
  errno = 0;
  double v = (text[0] == '\0' || text[0] == ' ' || text[0] == '\t') ? NAN : strtod(text, &end);
  if (end == NULL || end == text || *end != '\0' || isnan(v)) {
    snprintf(error, error_size, "%s=%s: not a number", key, text);
    return 0;
  }
  if (errno == ERANGE || isinf(v)) {
    snprintf(error, error_size, "%s=%s: out of range", key, text);
    return 0;
  }
  if (v < lo) {
    snprintf(error, error_size, "%s=%s: must be at least %g", key, text, lo);
    return 0;
  }
  if (v > hi) {
    snprintf(error, error_size, "%s=%s: must be at most %g", key, text, hi);
    return 0;
  }
  *out = v;
  return 1;
}

/* Fills values[] with the defaults, then with the config's parameters; 0 on a bad one. */
static int read_params(const chunkscope_stage_config* config, double values[P_COUNT],
                       char* error, size_t error_size) {
  for (int p = 0; p < P_COUNT; ++p) values[p] = strtod(k_params[p].default_value, NULL);
  for (uint32_t i = 0; i < config->param_count; ++i) {
    const chunkscope_stage_param* kv = &config->params[i];
    int p = 0;
    while (p < P_COUNT && strcmp(kv->key, k_params[p].key) != 0) ++p;
    if (p == P_COUNT) { /* the host refuses these already; this is for other hosts */
      snprintf(error, error_size, "%s: unknown parameter", kv->key);
      return 0;
    }
    const char* text = kv->value ? kv->value : "";
    if (!parse_number(kv->key, text, k_min[p], k_max[p], &values[p], error, error_size))
      return 0;
  }
  return 1;
}

/* ---------------------------------------------------------------- dsp helpers */

/* dB per doubling, 20 * log10(2): dB = K * log2(linear); log2/exp2 are cheaper than
 * log10/pow, which matters at one call per sample. */
#define K_DB_PER_LOG2 6.020599913279624

/* One-pole coefficient for a time constant of `ms` at `rate`: 0 means no smoothing. */
static double time_coef(double ms, double rate) {
  return ms > 0.0 ? exp(-1000.0 / (ms * rate)) : 0.0;
}

/* Static curve: the wanted gain reduction in dB (>= 0) for a peak of `peak` (linear). */
static double gain_reduction_db(const compressor* s, double peak) {
  if (peak <= s->knee_lo_lin) return 0.0; /* below the knee: cheap exit, no log */
  if (!(peak < 1e20)) peak = 1e20;        /* an infinite input must not poison the state */
  double over = K_DB_PER_LOG2 * log2(peak) - s->threshold_db; /* dB above the threshold */
  double half = 0.5 * s->knee_db;
  if (over <= -half) return 0.0;
  if (over < half) { /* inside the knee: quadratic blend between 1:1 and 1:ratio */
    double x = over + half;
    return s->slope * x * x / (2.0 * s->knee_db);
  }
  return s->slope * over;
}

/* Advances the smoothed reduction towards `target` by one sample and returns the gain. */
static float next_gain(compressor* s, double target) {
  double coef = target > s->env_db ? s->attack_coef : s->release_coef;
  s->env_db = target + coef * (s->env_db - target);
  if (s->env_db < 1e-9) s->env_db = 0.0; /* inaudible: stop before subnormals */
  if (s->env_db == 0.0) return (float)s->makeup_lin;
  return (float)exp2((s->makeup_db - s->env_db) / K_DB_PER_LOG2);
}

/* ---------------------------------------------------------------- callbacks */

/* Processes frames in place, one frame at a time (see the top of the file). */
static int comp_process(void* instance, float* const* ch, int32_t frames) {
  compressor* s = (compressor*)instance;
  for (int32_t n = 0; n < frames; ++n) {
    float peak = 0.0f;
    for (int32_t c = 0; c < s->channels; ++c) {
      float a = fabsf(ch[c][n]);
      if (a > peak) peak = a; /* a NaN input is ignored by the detector */
    }
    float g = next_gain(s, gain_reduction_db(s, (double)peak));
    if (s->delay == 0) {
      for (int32_t c = 0; c < s->channels; ++c) ch[c][n] *= g;
      continue;
    }
    for (int32_t c = 0; c < s->channels; ++c) { /* swap the input with the delayed sample */
      float* slot = &s->line[(size_t)c * s->delay + s->pos];
      float delayed = *slot;
      *slot = ch[c][n];
      ch[c][n] = delayed * g;
    }
    if (++s->pos == s->delay) s->pos = 0;
  }
  return 0;
}

/* Back to the state after create: no gain reduction, a silent delay line. */
static void comp_reset(void* instance) {
  compressor* s = (compressor*)instance;
  s->env_db = 0.0;
  s->pos = 0;
  if (s->line) memset(s->line, 0, (size_t)s->channels * s->delay * sizeof(float));
}

static void comp_destroy(void* instance) {
  compressor* s = (compressor*)instance;
  if (!s) return;
  free(s->line);
  free(s);
}

/* The lookahead is the only delay the stage adds. */
static uint32_t comp_latency(void* instance) { return ((const compressor*)instance)->delay; }


/* Turns validated parameter values into the instance's settings. */
static void configure(compressor* s, const double v[P_COUNT], double rate) {
  s->threshold_db = v[P_THRESHOLD];
  s->slope = 1.0 - 1.0 / v[P_RATIO];
  s->knee_db = v[P_KNEE];
  s->knee_lo_lin = exp2((s->threshold_db - 0.5 * s->knee_db) / K_DB_PER_LOG2);
  s->attack_coef = time_coef(v[P_ATTACK], rate);
  s->release_coef = time_coef(v[P_RELEASE], rate);
  s->makeup_db = v[P_MAKEUP];
  s->makeup_lin = exp2(s->makeup_db / K_DB_PER_LOG2);
  s->delay = (uint32_t)lround(v[P_LOOKAHEAD] * rate / 1000.0);
}

/* Validates the stream and the parameters, then allocates the instance and delay line. */
static void* comp_create(const chunkscope_stage_config* config, char* error, size_t error_size) {
  double v[P_COUNT];
  if (!(config->sample_rate > 0.0) || config->channels < 1) {
    snprintf(error, error_size, "needs a positive sample rate and at least one channel");
    return NULL;
  }
  if (!read_params(config, v, error, error_size)) return NULL;
  compressor* s = (compressor*)calloc(1, sizeof *s);
  if (!s) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  s->channels = config->channels;
  configure(s, v, config->sample_rate);
  if (s->delay > 0) {
    s->line = (float*)calloc((size_t)s->channels * s->delay, sizeof(float));
    if (!s->line) {
      snprintf(error, error_size, "out of memory for a %u-sample lookahead", s->delay);
      free(s);
      return NULL;
    }
  }
  return s;
}

static const chunkscope_stage_descriptor k_descriptor = {
    CHUNKSCOPE_STAGE_ABI_VERSION,
    "compressor",
    "feed-forward compressor: linked peak detector, soft knee, attack/release, lookahead",
    1, 0, /* any channel count from 1 */
    k_params, P_COUNT,
    comp_create, comp_process, comp_reset, comp_destroy, comp_latency,
    NULL, /* process() never fails */
};

/* The one exported symbol. A host older than this ABI cannot read the descriptor. */
CHUNKSCOPE_STAGE_EXPORT const chunkscope_stage_descriptor* chunkscope_stage_entry(
    uint32_t host_abi_version) {
  return host_abi_version >= CHUNKSCOPE_STAGE_ABI_VERSION ? &k_descriptor : NULL;
}
