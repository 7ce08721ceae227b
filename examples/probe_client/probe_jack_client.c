/* A JACK client instrumented with chunkscope's probe (include/chunkscope/probe.h).
 *
 * Two inputs, two outputs; its process callback runs a small chain of its own (a one-pole
 * lowpass and a soft clipper per channel: section "filter") and, every --slow-every
 * blocks, a deliberately slow part that spins for --slow-us microseconds (section "slow").
 * JACK's xrun callback is passed to the probe. After --seconds it stops, closes the probe
 * (which writes the report) and prints one line for a check:
 *   blocks B server_cycles C
 * where C is the server's own count of cycles between the first and the last callback
 * (jack_last_frame_time / period).
 *
 *   probe_jack_client [--seconds S] [--report-dir DIR] [--slow-every N] [--slow-us U]
 *                     [--margin M] [--name NAME]
 * Exit codes: 0 done, 2 bad arguments or probe configuration, 3 JACK or report failure.
 */
#include <chunkscope/probe.h>
#include <jack/jack.h>

#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kChannels = 2, kFilter = 0, kSlow = 1 };

typedef struct {
  jack_client_t* jack;
  chunkscope_probe* probe;
  jack_port_t* in[kChannels];
  jack_port_t* out[kChannels];
  float state[kChannels];
  float coef;
  long slow_every, slow_us;
  uint64_t blocks;
  jack_nframes_t first_frame, last_frame; /* the server's frame time at the first and last callback */
} Client;

static volatile sig_atomic_t g_stop = 0;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The client's own processing: a one-pole lowpass, then a soft clipper. */
static void filter(Client* c, jack_nframes_t n) {
  for (int ch = 0; ch < kChannels; ++ch) {
    const float* x = jack_port_get_buffer(c->in[ch], n);
    float* y = jack_port_get_buffer(c->out[ch], n);
    float s = c->state[ch];
    for (jack_nframes_t i = 0; i < n; ++i) {
      s += c->coef * (x[i] - s);
      y[i] = s / (1.0f + fabsf(s));
    }
    c->state[ch] = s;
  }
}

/* A part that is sometimes too slow: spins (no system call) for slow_us. */
static void slow_part(Client* c) {
  if (c->slow_every <= 0 || c->blocks % (uint64_t)c->slow_every != (uint64_t)c->slow_every - 1) return;
  const int64_t until = now_us() + c->slow_us;
  while (now_us() < until) {
  }
}

static int process(jack_nframes_t n, void* arg) {
  Client* c = arg;
  chunkscope_probe_begin(c->probe, (int)n);
  chunkscope_probe_section_begin(c->probe, kFilter);
  filter(c, n);
  chunkscope_probe_section_end(c->probe, kFilter);
  chunkscope_probe_section_begin(c->probe, kSlow);
  slow_part(c);
  chunkscope_probe_section_end(c->probe, kSlow);
  chunkscope_probe_end(c->probe);
  const jack_nframes_t f = jack_last_frame_time(c->jack);
  if (c->blocks == 0) c->first_frame = f;
  c->last_frame = f;
  ++c->blocks;
  return 0;
}

static int on_xrun(void* arg) {
  chunkscope_probe_xrun(((Client*)arg)->probe);
  return 0;
}

typedef struct {
  double seconds;
  const char* report_dir;
  const char* margin;
  const char* name;
  long slow_every, slow_us;
} Args;

static int parse_args(int argc, char** argv, Args* a) {
  a->seconds = 3;
  a->report_dir = "probe-report";
  a->margin = NULL;
  a->name = "probe_jack_client";
  a->slow_every = 50;
  a->slow_us = 8000;
  for (int i = 1; i < argc; ++i) {
    const char* k = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "probe_jack_client: %s needs a value\n", k);
      return 0;
    }
    if (!strcmp(k, "--seconds")) a->seconds = atof(v);
    else if (!strcmp(k, "--report-dir")) a->report_dir = v;
    else if (!strcmp(k, "--margin")) a->margin = v;
    else if (!strcmp(k, "--name")) a->name = v;
    else if (!strcmp(k, "--slow-every")) a->slow_every = atol(v);
    else if (!strcmp(k, "--slow-us")) a->slow_us = atol(v);
    else {
      fprintf(stderr, "probe_jack_client: unknown option '%s'\n", k);
      return 0;
    }
    ++i;
  }
  if (!(a->seconds > 0) || a->slow_every < 0 || a->slow_us < 0) {
    fprintf(stderr, "probe_jack_client: --seconds must be above 0, --slow-every and --slow-us 0 or more\n");
    return 0;
  }
  return 1;
}

static int open_probe(Client* c, const Args* a) {
  static const char* sections[] = {"filter", "slow"};
  chunkscope_probe_config cfg;
  chunkscope_probe_config_init(&cfg);
  cfg.name = a->name;
  cfg.rate = jack_get_sample_rate(c->jack);
  cfg.block_frames = (int)jack_get_buffer_size(c->jack);
  cfg.channels = kChannels;
  cfg.margin = a->margin;
  cfg.sections = sections;
  cfg.section_count = 2;
  cfg.report_dir = a->report_dir;
  if (chunkscope_probe_open(&cfg, &c->probe) != CHUNKSCOPE_PROBE_OK) {
    fprintf(stderr, "probe_jack_client: %s\n", chunkscope_probe_last_error());
    return 0;
  }
  return 1;
}

static int register_ports(Client* c) {
  char name[16];
  for (int ch = 0; ch < kChannels; ++ch) {
    snprintf(name, sizeof name, "in_%d", ch + 1);
    c->in[ch] = jack_port_register(c->jack, name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0);
    snprintf(name, sizeof name, "out_%d", ch + 1);
    c->out[ch] = jack_port_register(c->jack, name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
    if (!c->in[ch] || !c->out[ch]) return 0;
  }
  return 1;
}

/* Runs the client for a->seconds (or until SIGINT/SIGTERM). */
static int run(Client* c, const Args* a) {
  jack_set_process_callback(c->jack, process, c);
  jack_set_xrun_callback(c->jack, on_xrun, c);
  if (!register_ports(c) || jack_activate(c->jack) != 0) {
    fprintf(stderr, "probe_jack_client: could not register ports or activate the client\n");
    return 0;
  }
  jack_latency_range_t in_range, out_range;
  jack_port_get_latency_range(c->in[0], JackCaptureLatency, &in_range);
  jack_port_get_latency_range(c->out[0], JackPlaybackLatency, &out_range);
  chunkscope_probe_device_latency(c->probe, (int)in_range.max, (int)out_range.max);
  const int64_t until = now_us() + (int64_t)(a->seconds * 1e6);
  while (!g_stop && now_us() < until) usleep(10000);
  jack_deactivate(c->jack);
  return 1;
}

int main(int argc, char** argv) {
  Args a;
  if (!parse_args(argc, argv, &a)) return 2;
  Client c;
  memset(&c, 0, sizeof c);
  c.coef = 0.05f;
  c.slow_every = a.slow_every;
  c.slow_us = a.slow_us;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  jack_status_t status;
  c.jack = jack_client_open(a.name, JackNoStartServer, &status);
  if (!c.jack) {
    fprintf(stderr, "probe_jack_client: no JACK server to connect to (status 0x%x)\n", (unsigned)status);
    return 3;
  }
  if (!open_probe(&c, &a)) {
    jack_client_close(c.jack);
    return 2;
  }
  const int ran = run(&c, &a);
  const jack_nframes_t period = jack_get_buffer_size(c.jack);
  jack_client_close(c.jack);
  if (chunkscope_probe_close(c.probe) != CHUNKSCOPE_PROBE_OK) {
    fprintf(stderr, "probe_jack_client: %s\n", chunkscope_probe_last_error());
    return 3;
  }
  if (!ran) return 3;
  const unsigned long cycles = c.blocks ? (unsigned long)((c.last_frame - c.first_frame) / period) + 1 : 0;
  printf("blocks %llu server_cycles %lu\n", (unsigned long long)c.blocks, cycles);
  return 0;
}
