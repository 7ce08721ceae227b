// faust_stage.cpp: a Faust program compiled to C++ by the `faust` command (class mydsp, in the
// file FAUST_GENERATED), as a chunkscope stage (so:): the other side of the equality test of
// faust: stages (tests/test_faust.cpp). The stage takes as many channels as the program has
// inputs (one program with 1 input and 1 output: one instance per channel, as faust: runs it);
// its parameters are the program's controls, by label or by the end of their path at a '/'.
// process() computes into buffers of its own, then copies them into the chunk, as the faust:
// host does. Built with -ffp-contract=off: each multiply and add rounds on its own.
#include <faust/dsp/dsp.h>
#include <faust/gui/UI.h>
#include <faust/gui/meta.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include FAUST_GENERATED

#include "chunkscope/stage.h"

namespace {

// The zones of the program's controls, with their labels and paths ("/group/label").
struct Zones : public UI {
  struct Zone {
    std::string label, path;
    float* zone;
  };
  std::vector<std::string> groups;
  std::vector<Zone> zones;

  void openTabBox(const char* label) override { groups.emplace_back(label); }
  void openHorizontalBox(const char* label) override { groups.emplace_back(label); }
  void openVerticalBox(const char* label) override { groups.emplace_back(label); }
  void closeBox() override { groups.pop_back(); }
  void addButton(const char* label, float* zone) override { add(label, zone); }
  void addCheckButton(const char* label, float* zone) override { add(label, zone); }
  void addVerticalSlider(const char* label, float* zone, float, float, float, float) override { add(label, zone); }
  void addHorizontalSlider(const char* label, float* zone, float, float, float, float) override { add(label, zone); }
  void addNumEntry(const char* label, float* zone, float, float, float, float) override { add(label, zone); }
  void addHorizontalBargraph(const char*, float*, float, float) override {}
  void addVerticalBargraph(const char*, float*, float, float) override {}
  void addSoundfile(const char*, const char*, Soundfile**) override {}

  void add(const char* label, float* zone) {
    std::string path;
    for (const auto& g : groups)
      if (g != "0x00") path += "/" + g;
    zones.push_back({label, path + "/" + label, zone});
  }
  // The zone `key` names: a label, or the end of a path at a '/'; nullptr when none does.
  float* find(const std::string& key) const {
    for (const auto& z : zones) {
      const bool by_path = key.find('/') != std::string::npos;
      const std::string k = by_path && key[0] != '/' ? "/" + key : key;
      if (by_path ? z.path.size() >= k.size() && z.path.compare(z.path.size() - k.size(), k.size(), k) == 0
                  : z.label == key)
        return z.zone;
    }
    return nullptr;
  }
};

struct Instance {
  mydsp dsp;
  int channels = 0;
  std::vector<std::vector<float>> out;
  std::vector<float*> outs;
};

int program_inputs() {
  static const int n = [] {
    mydsp probe;
    return probe.getNumInputs() == probe.getNumOutputs() ? probe.getNumInputs() : -1;
  }();
  return n;
}

void* faust_create(const chunkscope_stage_config* config, char* error, size_t error_size) {
  if (program_inputs() < 1) {
    std::snprintf(error, error_size, "the program's inputs and outputs differ");
    return nullptr;
  }
  auto* s = new (std::nothrow) Instance;
  if (!s) {
    std::snprintf(error, error_size, "out of memory");
    return nullptr;
  }
  s->channels = config->channels;
  s->dsp.init(static_cast<int>(std::lround(config->sample_rate)));
  Zones zones;
  s->dsp.buildUserInterface(&zones);
  for (uint32_t i = 0; i < config->param_count; ++i) {
    const chunkscope_stage_param& kv = config->params[i];
    float* zone = zones.find(kv.key);
    char* end = nullptr;
    errno = 0;
    const double v = kv.value ? std::strtod(kv.value, &end) : NAN;
    if (!zone || !end || *end != '\0' || errno != 0 || !std::isfinite(v)) {
      std::snprintf(error, error_size, "%s=%s: no such control, or not a number", kv.key, kv.value ? kv.value : "");
      delete s;
      return nullptr;
    }
    *zone = static_cast<float>(v);
  }
  s->out.assign(static_cast<size_t>(config->channels), std::vector<float>(static_cast<size_t>(config->max_frames)));
  for (auto& b : s->out) s->outs.push_back(b.data());
  return s;
}

int faust_process(void* instance, float* const* ch, int32_t frames) {
  auto* s = static_cast<Instance*>(instance);
  s->dsp.compute(frames, const_cast<float**>(ch), s->outs.data());
  for (int c = 0; c < s->channels; ++c) std::memcpy(ch[c], s->outs[static_cast<size_t>(c)], sizeof(float) * static_cast<size_t>(frames));
  return 0;
}

void faust_reset(void* instance) { static_cast<Instance*>(instance)->dsp.instanceClear(); }

void faust_destroy(void* instance) { delete static_cast<Instance*>(instance); }

}  // namespace

extern "C" CHUNKSCOPE_STAGE_EXPORT const chunkscope_stage_descriptor* chunkscope_stage_entry(uint32_t host_abi_version) {
  static chunkscope_stage_descriptor d = [] {
    chunkscope_stage_descriptor x{};
    x.abi_version = CHUNKSCOPE_STAGE_ABI_VERSION;
    x.name = "faust_stage";
    x.description = "a Faust program compiled to C++ by the faust command";
    x.min_channels = x.max_channels = program_inputs();
    x.create = faust_create;
    x.process = faust_process;
    x.reset = faust_reset;
    x.destroy = faust_destroy;
    return x;
  }();
  return host_abi_version >= CHUNKSCOPE_STAGE_ABI_VERSION ? &d : nullptr;
}
