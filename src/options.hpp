#pragma once
// The options of the streaming commands with every default in one place: the command line
// registers its flags from these structs, and anything that prints a command for the user
// to run (the diagnosis' rerun hints) compares against the same defaults. Not real-time.
#include <cstddef>
#include <string>

#include "rt/backend.hpp"
#include "src/backends.hpp"

namespace chunkscope {

struct StreamOptions {
  std::string chain;          // empty: no processing stages
  int chunk = 256;
  DType dtype = DType::f32;
  bool fuse = true;
  int queue_depth = 8;
  std::string speed = "1";    // a positive factor or "max"
  long long warmup = 10;
  std::string margin = "20%";
  std::string output;         // file sink; empty: null sink
  std::string json_path, hgrm_dir, trace_path, report_dir;
  bool fail_on_miss = false;
  bool quiet = false;         // no terminal report
  std::size_t trace_capacity = 1u << 20;
  std::size_t series_limit = 1u << 20;  // per-chunk points kept in the report (0: none)
  BackendChoice backend;      // --backend, --mode, --gpu-timing, --short-chunk
  // replay: expected rate/channels (0: take the file's)
  double expect_rate = 0;
  int expect_channels = 0;
  // synth
  std::string signal = "sine:440";
  std::string duration = "5s";
  int channels = 2;
  double rate = 48000;
};

struct MonitorOptions {
  StreamOptions stream;      // chain, chunk, margin, warm-up, queue depth, report files
  std::string input;         // index or name substring; "" = default input
  std::string output;        // index, name substring, "none"; "" = default output
  double rate = 0;           // 0: the input device's default rate
  int channels = 2;
  std::string duration;      // "" = until SIGINT/SIGTERM
  bool live = false;
  int latency_chunks = 2;
};

}  // namespace chunkscope
