// bench_stage_bare: times a stage library's process() alone, with no chunkscope around it,
// as the baseline chunkscope's own measurement of an `so:` stage is compared with.
//
//   bench_stage_bare LIB.so AUDIO_FILE FRAMES [key=value ...]
//
// Loads the stage, creates it for the file's rate and channels with max_frames = FRAMES and
// the given parameters, reads the whole file, and calls process() once per full chunk of
// FRAMES frames (a last partial chunk is left out). Deinterleaving happens before each call
// and outside the timed region; only the call itself is timed, with CLOCK_MONOTONIC.
// Prints one line:
//
//   bare_process_ns p50=<ns> p90=<ns> p99=<ns> mean=<ns> calls=<n>
//
// Percentiles are exact nearest-rank ones, as chunkscope's reports compute them: the value at
// rank ceil(q * n) (1-based, clamped to 1..n) of the sorted times.
// Exit status: 0 done, 1 process() failed, 2 bad usage, file or library.
#include "chunkscope/stage.h"

#include <dlfcn.h>
#include <sndfile.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace {

struct Audio {
  int rate = 0;
  int channels = 0;
  std::vector<float> interleaved;  // frames * channels
  std::int64_t frames = 0;
};

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "bench_stage_bare: %s\n", message.c_str());
  std::exit(2);
}

Audio read_audio(const char* path) {
  SF_INFO info{};
  SNDFILE* f = sf_open(path, SFM_READ, &info);
  if (f == nullptr) fail(std::string(path) + ": " + sf_strerror(nullptr));
  Audio a;
  a.rate = info.samplerate;
  a.channels = info.channels;
  a.interleaved.resize(static_cast<std::size_t>(info.frames) * static_cast<std::size_t>(info.channels));
  a.frames = sf_readf_float(f, a.interleaved.data(), info.frames);
  sf_close(f);
  return a;
}

const chunkscope_stage_descriptor* load_stage(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);  // kept open until exit
  if (lib == nullptr) fail(std::string("dlopen: ") + dlerror());
  auto entry = reinterpret_cast<chunkscope_stage_entry_fn>(dlsym(lib, CHUNKSCOPE_STAGE_ENTRY));
  if (entry == nullptr) fail(std::string(path) + ": no " + CHUNKSCOPE_STAGE_ENTRY);
  const chunkscope_stage_descriptor* d = entry(CHUNKSCOPE_STAGE_ABI_VERSION);
  if (d == nullptr) fail(std::string(path) + ": the entry point returned no descriptor");
  if (d->abi_version < 1 || d->abi_version > CHUNKSCOPE_STAGE_ABI_VERSION)
    fail(std::string(path) + ": stage ABI version " + std::to_string(d->abi_version) +
         ", this harness knows 1.." + std::to_string(CHUNKSCOPE_STAGE_ABI_VERSION));
  return d;
}

std::int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// Times process() over every full chunk; the times in ns, one per call.
std::vector<std::int64_t> time_chunks(const chunkscope_stage_descriptor* d, void* stage,
                                      const Audio& a, int frames) {
  const auto ch = static_cast<std::size_t>(a.channels);
  std::vector<std::vector<float>> planar(ch, std::vector<float>(static_cast<std::size_t>(frames)));
  std::vector<float*> ptrs(ch);
  for (std::size_t c = 0; c < ch; ++c) ptrs[c] = planar[c].data();
  const std::int64_t chunks = a.frames / frames;
  std::vector<std::int64_t> times;
  times.reserve(static_cast<std::size_t>(chunks));
  for (std::int64_t k = 0; k < chunks; ++k) {
    const float* src = a.interleaved.data() + static_cast<std::size_t>(k * frames) * ch;
    for (int n = 0; n < frames; ++n)
      for (std::size_t c = 0; c < ch; ++c) planar[c][static_cast<std::size_t>(n)] = src[static_cast<std::size_t>(n) * ch + c];
    const std::int64_t t0 = now_ns();
    const int rc = d->process(stage, ptrs.data(), frames);
    const std::int64_t t1 = now_ns();
    if (rc != 0) {
      const char* why = d->last_error != nullptr ? d->last_error(stage) : nullptr;
      std::fprintf(stderr, "bench_stage_bare: process() failed at call %lld: %s\n",
                   static_cast<long long>(k), why != nullptr ? why : "(no reason given)");
      d->destroy(stage);
      std::exit(1);
    }
    times.push_back(t1 - t0);
  }
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) fail("usage: bench_stage_bare LIB.so AUDIO_FILE FRAMES [key=value ...]");
  char* end = nullptr;
  const long frames = std::strtol(argv[3], &end, 10);
  if (end == argv[3] || *end != '\0' || frames < 1 || frames > (1L << 24))
    fail(std::string("FRAMES=") + argv[3] + ": not a positive integer");

  std::vector<std::string> keys, values;  // the strings the params point into
  for (int i = 4; i < argc; ++i) {
    const char* eq = std::strchr(argv[i], '=');
    if (eq == nullptr || eq == argv[i]) fail(std::string(argv[i]) + ": not key=value");
    keys.emplace_back(argv[i], static_cast<std::size_t>(eq - argv[i]));
    values.emplace_back(eq + 1);
  }
  std::vector<chunkscope_stage_param> params(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) params[i] = {keys[i].c_str(), values[i].c_str()};

  const chunkscope_stage_descriptor* d = load_stage(argv[1]);
  const Audio audio = read_audio(argv[2]);
  if (audio.frames < frames) fail(std::string(argv[2]) + ": shorter than one chunk");

  chunkscope_stage_config config{};
  config.struct_size = sizeof config;
  config.sample_rate = audio.rate;
  config.max_frames = static_cast<std::int32_t>(frames);
  config.channels = audio.channels;
  config.params = params.empty() ? nullptr : params.data();
  config.param_count = static_cast<std::uint32_t>(params.size());
  char error[512] = "";
  void* stage = d->create(&config, error, sizeof error);
  if (stage == nullptr) fail(std::string(d->name != nullptr ? d->name : "stage") + ": " + error);

  std::vector<std::int64_t> t = time_chunks(d, stage, audio, static_cast<int>(frames));
  d->destroy(stage);

  std::sort(t.begin(), t.end());
  const auto at = [&](double q) {  // as src/render/series_view.cpp's rank_percentile
    auto r = static_cast<std::size_t>(std::ceil(q * static_cast<double>(t.size()) * (1 - 1e-12)));
    return t[std::clamp<std::size_t>(r, 1, t.size()) - 1];
  };
  const double mean = static_cast<double>(std::accumulate(t.begin(), t.end(), std::int64_t{0})) /
                      static_cast<double>(t.size());
  std::printf("bare_process_ns p50=%lld p90=%lld p99=%lld mean=%.0f calls=%zu\n",
              static_cast<long long>(at(0.50)), static_cast<long long>(at(0.90)),
              static_cast<long long>(at(0.99)), mean, t.size());
  return 0;
}
