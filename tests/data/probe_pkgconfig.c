/* The smallest program built with `pkg-config --cflags --libs chunkscope-probe`, as the docs
 * show it: opens a probe, times 64 blocks that do nothing, writes the report to argv[1]. */
#include <chunkscope/probe.h>
#include <stdio.h>

int main(int argc, char** argv) {
  chunkscope_probe_config cfg;
  chunkscope_probe_config_init(&cfg);
  cfg.rate = 48000;
  cfg.block_frames = 256;
  cfg.channels = 2;
  cfg.json_path = argc > 1 ? argv[1] : NULL;
  chunkscope_probe* probe = NULL;
  if (chunkscope_probe_open(&cfg, &probe) != CHUNKSCOPE_PROBE_OK) {
    fprintf(stderr, "%s\n", chunkscope_probe_last_error());
    return 1;
  }
  for (int i = 0; i < 64; ++i) {
    chunkscope_probe_begin(probe, 256);
    chunkscope_probe_end(probe);
  }
  return chunkscope_probe_close(probe);
}
