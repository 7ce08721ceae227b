// gain_stage.cpp: a chain stage written in C++ as include/chunkscope/stage.h shows: a gain in dB.
//   chunkscope replay audio/mix_stereo_48k.flac --chain 'so:./build/examples/libgain_stage.so:gain=-6'
// The header declares chunkscope_stage_entry with C linkage: defining it here exports the
// unmangled name the loader looks for, with no extern "C" of the stage's own.
#include <chunkscope/stage.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

const chunkscope_stage_param_info kParams[] = {
    {"gain", "0", "gain in dB, -120..24"},
};

struct Gain {
  float factor = 1.0f;
  int channels = 0;
};

// Reads gain=DB; false with a one-line reason in `error`.
bool read_gain(const chunkscope_stage_config* c, float& factor, char* error, std::size_t error_size) {
  double db = 0;
  for (std::uint32_t i = 0; i < c->param_count; ++i) {
    if (std::strcmp(c->params[i].key, "gain") != 0) continue;
    char* end = nullptr;
    errno = 0;
    db = std::strtod(c->params[i].value, &end);
    if (end == c->params[i].value || *end != '\0' || errno != 0 || !(db >= -120 && db <= 24)) {
      std::snprintf(error, error_size, "gain=%s: not a number of dB in -120..24", c->params[i].value);
      return false;
    }
  }
  factor = static_cast<float>(std::pow(10.0, db / 20.0));
  return true;
}

void* create(const chunkscope_stage_config* c, char* error, std::size_t error_size) {
  float factor = 1.0f;
  if (!read_gain(c, factor, error, error_size)) return nullptr;
  auto* g = new (std::nothrow) Gain{factor, c->channels};  // [setup]: may allocate
  if (!g) std::snprintf(error, error_size, "out of memory");
  return g;
}

int process(void* instance, float* const* ch, std::int32_t frames) {  // [processing]: no allocation
  const auto* g = static_cast<const Gain*>(instance);
  for (int c = 0; c < g->channels; ++c)
    for (std::int32_t n = 0; n < frames; ++n) ch[c][n] *= g->factor;
  return 0;
}

void destroy(void* instance) { delete static_cast<Gain*>(instance); }

const chunkscope_stage_descriptor kDescriptor = {
    CHUNKSCOPE_STAGE_ABI_VERSION, "gain", "a gain in dB (a stage written in C++)", 1, 0, kParams, 1,
    create, process, nullptr, destroy, nullptr, nullptr,
};

}  // namespace

CHUNKSCOPE_STAGE_EXPORT const chunkscope_stage_descriptor* chunkscope_stage_entry(std::uint32_t host_abi_version) {
  return host_abi_version >= CHUNKSCOPE_STAGE_ABI_VERSION ? &kDescriptor : nullptr;
}
