#include "src/process_file.hpp"

#include <fmt/format.h>
#include <vector>

#include "rt/cpu_backend.hpp"
#include "src/audio_file.hpp"
#include "src/errors.hpp"

namespace chunkscope {

DType parse_dtype(const std::string& s) {
  if (s == "f32" || s == "float32" || s == "float") return DType::f32;
  if (s == "f64" || s == "float64" || s == "double") return DType::f64;
  throw InputError(fmt::format("--dtype: '{}' is not f32 or f64", s));
}

void check_chunk_frames(long long n, const char* what) {
  if (n < 1 || n > kMaxChunkFrames)
    throw InputError(fmt::format("{}: {} frames is out of range 1..{}", what, n, kMaxChunkFrames));
}

std::unique_ptr<Backend> make_cpu_backend(const Plan& plan, const ProcessSpec& spec) {
  auto b = std::make_unique<CpuBackend>(plan.fused);
  const Status s = b->prepare(spec, plan);
  if (!ok(s)) throw RuntimeFailure(fmt::format("cpu backend: prepare failed: {}", describe(s)));
  return b;
}

CudaOptions::Mode parse_cuda_mode(const std::string& s, const char* what) {
  if (s == "eager") return CudaOptions::Mode::eager;
  if (s == "graph") return CudaOptions::Mode::graph;
  throw InputError(fmt::format("{}: '{}' is not eager or graph", what, s));
}

std::unique_ptr<Backend> make_backend(const BackendChoice& choice, const Plan& plan, const ProcessSpec& spec) {
  if (choice.backend == "cpu") return make_cpu_backend(plan, spec);
  if (choice.backend == "cuda") {
    std::string err;
    auto b = make_cuda_backend(choice.cuda, plan, spec, &err);
    if (!b) throw RuntimeFailure(fmt::format("--backend cuda: {}", err.empty() ? "unavailable" : err));
    return b;
  }
  throw InputError(fmt::format("--backend: '{}' is not cpu or cuda", choice.backend));
}

namespace {

template <class T>
void run(AudioReader& rd, AudioWriter& wr, Backend& be, const ProcessSpec& spec, ProcessResult& res) {
  std::vector<T> buf(static_cast<std::size_t>(spec.max_frames) * static_cast<std::size_t>(spec.channels));
  for (;;) {
    const auto got = rd.read(buf.data(), spec.max_frames);
    if (got == 0) break;
    AudioView v{buf.data(), static_cast<int>(got), spec.channels, spec.dtype};
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

ProcessResult process_file(const std::string& in, const std::string& out, const ProcessOptions& opt) {
  check_chunk_frames(opt.chunk);
  AudioReader rd(in);
  const auto& info = rd.info();
  if (info.channels > kMaxChannels)
    throw InputError(fmt::format("input '{}': {} channels, at most {} are supported", in, info.channels, kMaxChannels));
  const Plan plan = plan_chain(opt.chain, info.rate, opt.fuse);
  const int fmt_out = output_format_for(out, info.format, info.channels, info.rate);
  AudioWriter wr(out, fmt_out, info.rate, info.channels);
  ProcessSpec spec{info.rate, info.channels, opt.chunk, opt.dtype};
  BackendChoice choice;
  choice.backend = opt.backend;
  choice.cuda = opt.cuda;
  auto be = make_backend(choice, plan, spec);
  ProcessResult res;
  res.rate = info.rate;
  res.channels = info.channels;
  res.dispatches_per_chunk = plan.dispatches();
  res.in_format = info.format_name;
  res.out_format = format_name(fmt_out);
  try {
    if (opt.dtype == DType::f32)
      run<float>(rd, wr, *be, spec, res);
    else
      run<double>(rd, wr, *be, spec, res);
  } catch (const TruncatedInput& e) {
    throw InputError(e.what());  // the writer's destructor removes the partial output
  }
  wr.commit();
  return res;
}

}  // namespace chunkscope
