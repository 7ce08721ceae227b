// The options module: defaults held once, and command lines that leave them out.
#include <doctest/doctest.h>

#include "src/errors.hpp"
#include "src/options.hpp"

using namespace chunkscope;

TEST_CASE("options: a command line of default options is the bare command") {
  CHECK(stream_command_line("synth", StreamOptions{}) == "chunkscope synth");
  CHECK(stream_command_line("replay", StreamOptions{}) == "chunkscope replay FILE");
  CHECK(monitor_command_line(MonitorOptions{}) == "chunkscope monitor");
}

TEST_CASE("options: only the options that differ from the defaults are printed, quoted for the shell") {
  StreamOptions o;
  o.input = "takes/take 3.wav";
  o.chain = "hp:80:4 | lp:12000:8";
  o.chunk = 512;
  o.fuse = false;
  o.backend.backend = BackendKind::cuda;
  o.backend.cuda.mode = CudaOptions::Mode::graph;
  o.speed = "max";
  o.expect_rate = 44100;
  CHECK(stream_command_line("replay", o) ==
        "chunkscope replay 'takes/take 3.wav' --rate 44100 --chain 'hp:80:4 | lp:12000:8' --chunk 512 --no-fuse "
        "--backend cuda --mode graph --speed max");
  StreamOptions s;
  s.signal = "noise";
  s.duration = "5000ms";  // the default length written another way
  s.speed = "1.0";
  s.rate = 44100;
  s.margin = "1.5ms";
  s.backend.cuda.gpu_timing = false;
  s.report_dir = "out";
  s.fail_on_miss = true;
  CHECK(stream_command_line("synth", s) ==
        "chunkscope synth --signal noise --rate 44100 --gpu-timing off --margin 1.5ms --report-dir out --fail-on-miss");
}

TEST_CASE("options: monitor lines leave out what a device run does not take") {
  MonitorOptions m;
  m.input = "system";
  m.output = "none";
  m.duration = "10s";
  m.latency_chunks = 3;
  m.stream.chain = "lp:1k";
  m.stream.speed = "4";    // not a monitor option
  m.stream.output = "x";   // neither: monitor's --output is a device
  CHECK(monitor_command_line(m) ==
        "chunkscope monitor --input system --output none --duration 10s --latency-chunks 3 --chain lp:1k");
}

TEST_CASE("options: the option words parse and print back") {
  CHECK(parse_on_off("on", "--gpu-timing"));
  CHECK_FALSE(parse_on_off(on_off(false), "--gpu-timing"));
  CHECK_THROWS_WITH_AS(parse_on_off("maybe", "--gpu-timing"), "--gpu-timing: 'maybe' is not on or off", InputError);
  CHECK(parse_short_chunk(short_chunk_name(true)));
  CHECK_THROWS_WITH_AS(parse_short_chunk("drop"), "--short-chunk: 'drop' is not eager or recapture", InputError);
  CHECK(parse_backend_kind(backend_name(BackendKind::cuda)) == BackendKind::cuda);
  CHECK_THROWS_WITH_AS(parse_backend_kind("tpu"), "--backend: 'tpu' is not cpu or cuda", InputError);
  CHECK(shell_quote("it's") == "'it'\\''s'");
}
