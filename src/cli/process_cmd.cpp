#include "src/cli/process_cmd.hpp"

#include <fmt/format.h>
#include <vector>

#include "src/backends.hpp"
#include "src/io/audio_file.hpp"
#include "src/chain_spec.hpp"
#include "src/errors.hpp"
#include "src/io/output_file.hpp"

namespace chunkscope {

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
  std::vector<PathRole> inputs{{"input", in}};
  for (const auto& f : chain_files(opt.chain)) inputs.push_back({"sos file", f});
  check_distinct_paths(inputs, {{"output", out}});
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
