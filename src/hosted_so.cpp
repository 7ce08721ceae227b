#include "src/hosted_so.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <vector>
#include <fmt/format.h>

#include "chunkscope/stage.h"
#include "src/errors.hpp"

namespace chunkscope {
namespace {

namespace fs = std::filesystem;
using Params = std::vector<std::pair<std::string, std::string>>;

// The loaded library: closed when the factory and every instance it made are gone.
struct Library {
  void* handle = nullptr;
  const chunkscope_stage_descriptor* desc = nullptr;
  std::string path;
  ~Library() {
    if (!handle) return;
    HostedPhase in("unloading", path.c_str());  // the library's destructors run here
    dlclose(handle);
  }
};

// One instance on all the chunk's channels, or, for a stage that takes one channel, one
// instance per channel (as mono LV2 and LADSPA plugins run), each on its own channel in place.
class SoProcessor final : public HostedProcessor {
 public:
  SoProcessor(std::shared_ptr<const Library> lib, std::vector<void*> insts, std::string label)
      : lib_(std::move(lib)), insts_(std::move(insts)), label_(std::move(label)) {
    HostedPhase in("latency", label_.c_str());
    latency_ = lib_->desc->latency ? lib_->desc->latency(insts_[0]) : 0;
  }
  ~SoProcessor() override {
    HostedPhase in("destroy", label_.c_str());
    for (void* inst : insts_) lib_->desc->destroy(inst);
  }
  bool process(float* const* channels, int frames) noexcept override {
    const auto run = lib_->desc->process;
    if (insts_.size() == 1) {
      const ForeignCall in("process");
      return run(insts_[0], channels, frames) == 0;
    }
    for (std::size_t c = 0; c < insts_.size(); ++c) {
      int rc;
      {
        const ForeignCall in("process");
        rc = run(insts_[c], &channels[c], frames);
      }
      if (rc != 0) {
        failed_ = c;
        return false;
      }
    }
    return true;
  }
  void reset() noexcept override {
    if (!lib_->desc->reset) return;
    for (void* inst : insts_) {
      const ForeignCall in("reset");
      lib_->desc->reset(inst);
    }
  }
  const char* last_error() const noexcept override {
    if (!lib_->desc->last_error) return "";
    const char* e;
    {
      const ForeignCall in("last_error");
      e = lib_->desc->last_error(insts_[failed_]);
    }
    return e ? e : "";
  }
  std::uint32_t latency_frames() const noexcept override { return latency_; }

 private:
  std::shared_ptr<const Library> lib_;
  std::vector<void*> insts_;
  std::size_t failed_ = 0;  // the instance whose process() failed last
  std::string label_;
  std::uint32_t latency_ = 0;
};

class SoFactory final : public HostedFactory {
 public:
  SoFactory(std::shared_ptr<const Library> lib, Params params, std::string label)
      : lib_(std::move(lib)), params_(std::move(params)), label_(std::move(label)) {}
  const std::string& label() const noexcept override { return label_; }
  std::unique_ptr<HostedProcessor> create(const HostedShape& shape, std::string& error) const override {
    const auto* d = lib_->desc;
    const int lo = d->min_channels > 0 ? d->min_channels : 1;
    const int hi = d->max_channels > 0 ? d->max_channels : kAnyChannels;
    const bool per_channel = hi == 1 && shape.channels > 1;  // a mono stage: one instance per channel
    if (!per_channel && (shape.channels < lo || shape.channels > hi)) {
      error = hi == kAnyChannels ? fmt::format("takes at least {} channels; the chunk has {}", lo, shape.channels)
                                 : fmt::format("takes {} to {} channels; the chunk has {}", lo, hi, shape.channels);
      return nullptr;
    }
    std::vector<void*> insts;
    const int each = per_channel ? 1 : shape.channels;
    for (int c = 0; c < (per_channel ? shape.channels : 1); ++c) {
      void* inst = make_one(shape, each, error);
      if (!inst) {
        HostedPhase in("destroy", label_.c_str());
        for (void* made : insts) d->destroy(made);
        return nullptr;
      }
      insts.push_back(inst);
    }
    return std::make_unique<SoProcessor>(lib_, std::move(insts), label_);
  }

 private:
  // One instance of `channels` channels, or nullptr with the stage's reason in `error`.
  void* make_one(const HostedShape& shape, int channels, std::string& error) const {
    std::vector<chunkscope_stage_param> ps;
    for (const auto& [k, v] : params_) ps.push_back({k.c_str(), v.c_str()});
    chunkscope_stage_config cfg{sizeof(chunkscope_stage_config), shape.rate, shape.max_frames, channels,
                                ps.empty() ? nullptr : ps.data(), static_cast<std::uint32_t>(ps.size())};
    char why[512] = {};
    void* inst = nullptr;
    {
      HostedPhase in("create", label_.c_str());
      inst = lib_->desc->create(&cfg, why, sizeof why);
    }
    if (!inst) {
      why[sizeof why - 1] = '\0';
      error = why[0] ? fmt::format("create failed: {}", one_line(why)) : "create failed (the stage gave no reason)";
    }
    return inst;
  }

  static constexpr int kAnyChannels = 1 << 30;
  std::shared_ptr<const Library> lib_;
  Params params_;
  std::string label_;
};

// The descriptor's own checks: version, the functions a stage must have.
void check_descriptor(const chunkscope_stage_descriptor* d, const std::string& who) {
  if (!d) throw InputError(fmt::format("{}: {} returned no descriptor", who, CHUNKSCOPE_STAGE_ENTRY));
  if (d->abi_version == 0) throw InputError(fmt::format("{}: stage ABI version 0 is not a version", who));
  if (d->abi_version > CHUNKSCOPE_STAGE_ABI_VERSION)
    throw InputError(fmt::format("{}: built for stage ABI version {}, newer than this chunkscope's ({})", who,
                                 d->abi_version, CHUNKSCOPE_STAGE_ABI_VERSION));
  const char* missing = !d->create ? "create" : !d->process ? "process" : !d->destroy ? "destroy" : nullptr;
  if (missing) throw InputError(fmt::format("{}: the descriptor has no {}() function", who, missing));
}

// Keys the descriptor lists; a spec naming another is refused.
void check_params(const chunkscope_stage_descriptor* d, const Params& params, const std::string& who) {
  if (!d->params || d->param_count == 0) return;
  std::string known;
  for (std::uint32_t i = 0; i < d->param_count; ++i)
    known += fmt::format("{}{}", i ? ", " : "", d->params[i].key ? d->params[i].key : "?");
  for (const auto& kv : params) {
    bool found = false;
    for (std::uint32_t i = 0; i < d->param_count && !found; ++i) found = d->params[i].key && kv.first == d->params[i].key;
    if (!found) throw InputError(fmt::format("{}: unknown parameter '{}' (known: {})", who, kv.first, known));
  }
}

}  // namespace

std::shared_ptr<const HostedFactory> load_so_stage(const std::string& path, const Params& params,
                                                   const std::string& where) {
  const std::string& who = where;  // names the stage, its path included
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    // a bare name is not looked for on the library path: say where it was looked for
    const bool bare = path.find('/') == std::string::npos;
    throw InputError(fmt::format("{}: not found: no file {}{}", who, fs::absolute(path, ec).lexically_normal().string(),
                                 bare ? " (a bare file name is looked for in the current folder only; give a path "
                                        "with a '/' for a library elsewhere)"
                                      : ""));
  }
  if (fs::is_directory(st)) throw InputError(fmt::format("{}: is a folder, not a shared object", who));
  // dlopen searches the library path for a name without '/': make it a path
  const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  auto lib = std::make_shared<Library>();
  lib->path = path;
  {
    HostedPhase in("loading", path.c_str());  // the library's own constructors run here
    lib->handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib->handle) {
    const char* e = dlerror();
    throw InputError(fmt::format("{}: not a loadable shared object ({})", who, one_line(e ? e : "dlopen failed")));
  }
  dlerror();
  void* sym = dlsym(lib->handle, CHUNKSCOPE_STAGE_ENTRY);
  if (!sym)
    throw InputError(fmt::format("{}: no {} symbol (not a chunkscope stage; see include/chunkscope/stage.h)", who,
                                 CHUNKSCOPE_STAGE_ENTRY));
  auto entry = reinterpret_cast<chunkscope_stage_entry_fn>(sym);
  {
    HostedPhase in("chunkscope_stage_entry", path.c_str());
    lib->desc = entry(CHUNKSCOPE_STAGE_ABI_VERSION);
  }
  check_descriptor(lib->desc, who);
  check_params(lib->desc, params, who);
  const std::string label = "so:" + fs::path(path).filename().string();
  return std::make_shared<SoFactory>(std::move(lib), params, label);
}

}  // namespace chunkscope
