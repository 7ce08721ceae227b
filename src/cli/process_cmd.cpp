#include "src/cli/process_cmd.hpp"

#include <fmt/format.h>
#include <cmath>
#include <iostream>
#include <vector>

#include "src/backends.hpp"
#include "src/cli/cli_support.hpp"
#include "src/chain_spec.hpp"
#include "src/errors.hpp"
#include "src/io/output_file.hpp"
#include "src/io/audio_file.hpp"

namespace chunkscope {

namespace {

bool stopped(const std::atomic<bool>* stop) { return stop && stop->load(); }

template <class T>
void run(AudioReader& rd, AudioWriter& wr, Backend& be, const ProcessSpec& spec, ProcessResult& res,
         const std::atomic<bool>* stop) {
  std::vector<T> buf(static_cast<std::size_t>(spec.max_frames) * static_cast<std::size_t>(spec.channels));
  for (;;) {
    if (stopped(stop)) return;  // before the next chunk; the caller abandons the output
    const auto got = rd.read(buf.data(), spec.max_frames);
    if (got == 0) break;
    AudioView v{buf.data(), static_cast<int>(got), spec.channels, spec.dtype, static_cast<std::uint64_t>(res.chunks)};
    const Status s = be.process(v, nullptr);
    if (!ok(s)) {
      const std::string extra = be.last_error();
      throw RuntimeFailure(fmt::format("processing chunk {} failed: {}{}", res.chunks, describe(s),
                                       extra.empty() ? "" : " (" + extra + ")"));
    }
    wr.write(buf.data(), got);
    res.frames += got;
    ++res.chunks;
  }
}

}  // namespace

ProcessResult process_file(const std::string& in, const std::string& out, const ProcessOptions& opt,
                           const std::atomic<bool>* stop) {
  check_chunk_frames(opt.chunk);
  std::vector<PathRole> inputs{{"input", in}};
  for (const auto& f : chain_files(opt.chain)) inputs.push_back({"sos file", f});
  check_distinct_paths(inputs, {{"output", out}});
  cli::guard_outputs({{"output", out}});
  AudioReader rd(in);
  const auto& info = rd.info();
  if (info.channels > kMaxChannels)
    throw InputError(fmt::format("input '{}': {} channels, at most {} are supported", in, info.channels, kMaxChannels));
  const Plan plan = plan_chain(opt.chain, info.rate, opt.fuse);
  const int fmt_out = output_format_for(out, info.format, info.channels, info.rate, parse_output_subtype(opt.output_format));
  AudioWriter wr(out, fmt_out, info.rate, info.channels);
  ProcessSpec spec{info.rate, info.channels, opt.chunk, opt.dtype};
  auto be = make_backend(opt.backend, plan, spec);
  ProcessResult res;
  res.rate = info.rate;
  res.channels = info.channels;
  res.dispatches_per_chunk = plan.dispatches();
  res.in_format = info.format_name;
  res.out_format = format_name(fmt_out);
  // a FIFO or device input has no length
  const bool known_length = info.frames > 0 && info.frames < (std::int64_t{1} << 50);
  res.total_chunks = known_length ? (info.frames + opt.chunk - 1) / opt.chunk : -1;
  try {
    if (opt.dtype == DType::f32)
      run<float>(rd, wr, *be, spec, res, stop);
    else
      run<double>(rd, wr, *be, spec, res, stop);
  } catch (const RuntimeFailure& e) {
    // a read or write cut short by the signal is the interruption, not a failure
    if (!stopped(stop)) {
      if (dynamic_cast<const TruncatedInput*>(&e)) throw InputError(e.what());
      throw;
    }
  }
  // stopped, even after the last chunk: nothing is committed, and the writer's destructor
  // removes the temporary file, as it does on any error
  if (stopped(stop)) {
    res.interrupted = true;
    return res;
  }
  wr.commit();
  res.clips = wr.clips();
  res.samples = wr.samples_written();
  res.over_full_scale = wr.over_full_scale();
  res.peak = wr.peak();
  return res;
}

std::string clipping_line(const ProcessResult& r) {
  if (r.over_full_scale == 0 || r.samples == 0) return "";
  const double share = 100.0 * static_cast<double>(r.over_full_scale) / static_cast<double>(r.samples);
  const double peak_db = 20.0 * std::log10(r.peak);
  if (!r.clips)
    return fmt::format("  beyond full scale: {} of {} samples ({:.2f}%), peak {:+.1f} dBFS, kept as written (float "
                       "samples); a player or an integer file will clip them\n",
                       r.over_full_scale, r.samples, share, peak_db);
  return fmt::format("  CLIPPED: {} of {} samples ({:.2f}%) were beyond full scale (peak {:+.1f} dBFS) and were clipped "
                     "to it in the integer file; keep them with --output-format float, or lower the chain's gain by "
                     "{:.1f} dB\n",
                     r.over_full_scale, r.samples, share, peak_db, peak_db);
}

int run_process(const std::string& in, const std::string& out, const ProcessOptions& opt,
                const std::atomic<bool>* stop) {
  const auto r = process_file(in, out, opt, stop);
  if (r.interrupted) {
    std::cerr << fmt::format("chunkscope: process: interrupted by {} after {}{} chunks; '{}' was not written\n",
                             cli::signal_name(cli::stop_signal()), r.chunks,
                             r.total_chunks >= 0 ? fmt::format(" of {}", r.total_chunks) : "", one_line(out));
    return cli::interrupted_exit_code();
  }
  fmt::print("{} -> {}: {} frames ({:.3f} s, {} ch, {} Hz) in {} chunks of {} frames, {} dispatch(es) per chunk\n", in,
             out, r.frames, static_cast<double>(r.frames) / r.rate, r.channels, r.rate, r.chunks, opt.chunk,
             r.dispatches_per_chunk);
  fmt::print("  read as {}; written as {}\n", r.in_format, r.out_format);
  fmt::print("{}", clipping_line(r));
  return kExitOk;
}

namespace cli {

Command add_process_command(CLI::App& app) {
  struct Args {
    std::string input, output;
    ProcessOptions opt;
  };
  auto a = std::make_shared<Args>();
  ProcessOptions& o = a->opt;
  auto* c = app.add_subcommand("process", "Run a file through the chain in chunks (single thread, no pacing)");
  add_text(c, "input", a->input, "Input audio file (anything libsndfile reads)")->required();
  add_text(c, "output", a->output, "Output file; format from its extension, else the input's")->required();
  add_text(c, "--chain,-c", o.chain, "Chain spec: " + chain_spec_help())->required();
  add_int(c, "--chunk,-n", o.chunk, "Frames per chunk (1..65536)");
  add_parsed<DType>(c, "--dtype", o.dtype, "Sample type for processing: f32 or f64",
                    [](const std::string& s) { return parse_dtype(s); }, dtype_name(o.dtype));
  add_flag(c, "--no-fuse", o.fuse, "One pass per filter (the unfused baseline)", false);
  add_parsed<BackendKind>(c, "--backend", o.backend.backend, "Processing backend: cpu or cuda",
                          [](const std::string& s) { return parse_backend_kind(s); }, backend_name(o.backend.backend));
  add_parsed<CudaOptions::Mode>(c, "--mode", o.backend.cuda.mode, "CUDA: eager or graph",
                                [](const std::string& s) { return parse_cuda_mode(s); },
                                cuda_mode_name(o.backend.cuda.mode));
  add_parsed<std::optional<CpuIsa>>(
      c, "--isa", o.backend.cpu_isa,
      "CPU backend: the instruction set of its kernels, auto (of the sets this CPU has, the one needing the fewest passes over a chunk for this chain: docs/profiler.md, CPU kernels), scalar, sse4, avx2 or avx512",
      [](const std::string& s) { return parse_isa_choice(s); }, isa_choice_name(o.backend.cpu_isa));
  add_text(c, "--output-format", o.output_format,
           "The output's sample type: auto (the input's, or the closest the extension's container holds), float, "
           "double, pcm16, pcm24 or pcm32; float keeps samples beyond full scale, integers clip them (counted)");
  return {c, [a] { return run_process(a->input, a->output, a->opt, stop_on_signals()); }};
}

}  // namespace cli

}  // namespace chunkscope
