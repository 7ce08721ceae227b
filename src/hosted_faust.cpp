#include "src/hosted_faust.hpp"

#include <fmt/format.h>

#include <string>

#include "src/errors.hpp"

// Faust programs are hosted when CMake found libfaust's C headers (faust-common).
#if defined(CHUNKSCOPE_WITH_FAUST)
#include <dlfcn.h>
#include <faust/dsp/interpreter-dsp-c.h>
#include <faust/dsp/llvm-dsp-c.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "src/plugin_processor.hpp"
#include "src/suggest.hpp"
#endif

namespace chunkscope {

#if defined(CHUNKSCOPE_WITH_FAUST)

namespace {

namespace fs = std::filesystem;
using Params = std::vector<std::pair<std::string, std::string>>;

// ------------------------------------------------------------------------------- libfaust

// The C API of libfaust, found in the library opened at run time (the headers give the types).
struct Api {
  const char* (*version)();
  decltype(&createCDSPFactoryFromFile) llvm_factory;
  decltype(&deleteCDSPFactory) llvm_delete_factory;
  decltype(&createCDSPInstance) llvm_create;
  decltype(&deleteCDSPInstance) llvm_delete;
  decltype(&initCDSPInstance) llvm_init;
  decltype(&instanceClearCDSPInstance) llvm_clear;
  decltype(&computeCDSPInstance) llvm_compute;
  decltype(&buildUserInterfaceCDSPInstance) llvm_ui;
  decltype(&getNumInputsCDSPInstance) llvm_inputs;
  decltype(&getNumOutputsCDSPInstance) llvm_outputs;
  decltype(&createCInterpreterDSPFactoryFromFile) interp_factory;
  decltype(&deleteCInterpreterDSPFactory) interp_delete_factory;
  decltype(&createCInterpreterDSPInstance) interp_create;
  decltype(&deleteCInterpreterDSPInstance) interp_delete;
  decltype(&initCInterpreterDSPInstance) interp_init;
  decltype(&instanceClearCInterpreterDSPInstance) interp_clear;
  decltype(&computeCInterpreterDSPInstance) interp_compute;
  decltype(&buildUserInterfaceCInterpreterDSPInstance) interp_ui;
  decltype(&getNumInputsCInterpreterDSPInstance) interp_inputs;
  decltype(&getNumOutputsCInterpreterDSPInstance) interp_outputs;
};

// Held around every libfaust call that makes or deletes a factory or an instance.
std::mutex& faust_mutex() {
  static std::mutex m;
  return m;
}

// Looks up every function of Api in `h`; the name of the first one missing, or "".
std::string find_symbols(void* h, Api& a) {
  std::string missing;
  const auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (!fn && missing.empty()) missing = name;
  };
  get(a.version, "getCLibFaustVersion");
  get(a.llvm_factory, "createCDSPFactoryFromFile");
  get(a.llvm_delete_factory, "deleteCDSPFactory");
  get(a.llvm_create, "createCDSPInstance");
  get(a.llvm_delete, "deleteCDSPInstance");
  get(a.llvm_init, "initCDSPInstance");
  get(a.llvm_clear, "instanceClearCDSPInstance");
  get(a.llvm_compute, "computeCDSPInstance");
  get(a.llvm_ui, "buildUserInterfaceCDSPInstance");
  get(a.llvm_inputs, "getNumInputsCDSPInstance");
  get(a.llvm_outputs, "getNumOutputsCDSPInstance");
  get(a.interp_factory, "createCInterpreterDSPFactoryFromFile");
  get(a.interp_delete_factory, "deleteCInterpreterDSPFactory");
  get(a.interp_create, "createCInterpreterDSPInstance");
  get(a.interp_delete, "deleteCInterpreterDSPInstance");
  get(a.interp_init, "initCInterpreterDSPInstance");
  get(a.interp_clear, "instanceClearCInterpreterDSPInstance");
  get(a.interp_compute, "computeCInterpreterDSPInstance");
  get(a.interp_ui, "buildUserInterfaceCInterpreterDSPInstance");
  get(a.interp_inputs, "getNumInputsCInterpreterDSPInstance");
  get(a.interp_outputs, "getNumOutputsCInterpreterDSPInstance");
  return missing;
}

constexpr const char* kLibfaust = "libfaust.so.2";

// Opens `soname` and finds the functions a faust: stage needs: "" and `out` filled, or why not
// (one line).
std::string open_libfaust(const std::string& soname, Api& out) {
  void* h = nullptr;
  {
    const HostedPhase in("loading", "libfaust");  // LLVM's constructors run here
    h = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!h) {
    const char* e = dlerror();
    return fmt::format("libfaust could not be loaded (install libfaust2): {}", one_line(e ? e : soname + ": dlopen failed"));
  }
  if (const std::string missing = find_symbols(h, out); !missing.empty()) {
    dlclose(h);
    return fmt::format("libfaust could not be loaded (install libfaust2): {} has no {}() (not libfaust 2 with its LLVM "
                       "and interpreter backends)",
                       one_line(soname), missing);
  }
  return "";
}

// libfaust, opened on the first call and kept for the life of the process (LLVM is not made
// to be unloaded). Throws InputError naming `where` when it cannot be opened or lacks a function.
const Api& libfaust(const std::string& where) {
  static std::mutex m;
  static Api api{};
  static bool loaded = false;
  const std::lock_guard lock(m);
  if (loaded) return api;
  Api found{};
  if (const std::string why = open_libfaust(kLibfaust, found); !why.empty())
    throw InputError(fmt::format("{}: {}", where, why));
  api = found;
  loaded = true;
  return api;
}

// --------------------------------------------------------------------------- the program

// A control of the program, as its buildUserInterface() declares it.
struct Control {
  std::string label, path;
  float init = 0, min = 0, max = 0;
  bool output = false;  // a bargraph: the program writes it
};

// What PluginProcessor reads of a stage: its audio outputs.
struct FaustModel {
  std::vector<std::size_t> audio_out;
};

// A compiled program: its factory, the backend that made it, its channels and controls, and
// the values the spec gives. Deletes the factory when the last instance is gone.
struct FaustProgram {
  FaustModel model;
  const Api* api = nullptr;
  void* factory = nullptr;
  bool interp = false;
  std::string label;
  int inputs = 0, outputs = 0;
  std::vector<Control> controls;
  std::vector<std::pair<std::size_t, float>> values;  // control index, value
  FaustBuild build;
  FaustProgram() = default;
  FaustProgram(const FaustProgram&) = delete;
  FaustProgram& operator=(const FaustProgram&) = delete;
  ~FaustProgram() {
    if (!factory) return;
    const std::lock_guard lock(faust_mutex());
    const HostedPhase in("deleteDSPFactory", label.c_str());
    if (interp)
      api->interp_delete_factory(static_cast<interpreter_dsp_factory*>(factory));
    else
      api->llvm_delete_factory(static_cast<llvm_dsp_factory*>(factory));
  }
};

// '/'-separated path parts as Faust's PathBuilder writes them: these characters become '_'.
std::string path_part(std::string s) {
  for (char& c : s)
    if (std::string_view(" #*,?[]{}()").find(c) != std::string_view::npos) c = '_';
  return s;
}

// Collects the controls and their zones from buildUserInterface(). The callbacks are
// chunkscope's code, called from the program's (HostCode).
struct UiCollector {
  std::vector<std::string> groups;
  std::vector<Control> controls;
  std::vector<float*> zones;
  std::string soundfile;  // the label of the first soundfile the program asks for

  void add(const char* label, float* zone, float init, float lo, float hi, bool output) {
    Control c;
    c.label = label ? label : "";
    for (const auto& g : groups)
      if (g != "0x00") c.path += "/" + path_part(g);  // "0x00": an anonymous group
    c.path += "/" + path_part(c.label);
    c.init = init, c.min = lo, c.max = hi, c.output = output;
    controls.push_back(std::move(c));
    zones.push_back(zone);
  }
  static UiCollector& of(void* ui) { return *static_cast<UiCollector*>(ui); }
  static void open(void* ui, const char* label) {
    const HostCode ours;
    of(ui).groups.emplace_back(label ? label : "");
  }
  static void close(void* ui) {
    const HostCode ours;
    if (!of(ui).groups.empty()) of(ui).groups.pop_back();
  }
  static void button(void* ui, const char* label, float* zone) {
    const HostCode ours;
    of(ui).add(label, zone, 0, 0, 1, false);
  }
  static void slider(void* ui, const char* label, float* zone, float init, float lo, float hi, float) {
    const HostCode ours;
    of(ui).add(label, zone, init, lo, hi, false);
  }
  static void bargraph(void* ui, const char* label, float* zone, float lo, float hi) {
    const HostCode ours;
    of(ui).add(label, zone, lo, lo, hi, true);
  }
  static void sound(void* ui, const char* label, const char*, Soundfile**) {
    const HostCode ours;
    if (of(ui).soundfile.empty()) of(ui).soundfile = label && *label ? label : "?";
  }
  static void declare(void*, float*, const char*, const char*) {}

  UIGlue glue() {
    UIGlue g{};
    g.uiInterface = this;
    g.openTabBox = g.openHorizontalBox = g.openVerticalBox = &UiCollector::open;
    g.closeBox = &UiCollector::close;
    g.addButton = g.addCheckButton = &UiCollector::button;
    g.addVerticalSlider = g.addHorizontalSlider = g.addNumEntry = &UiCollector::slider;
    g.addHorizontalBargraph = g.addVerticalBargraph = &UiCollector::bargraph;
    g.addSoundfile = &UiCollector::sound;
    g.declare = &UiCollector::declare;
    return g;
  }
};

// -------------------------------------------------------------------------- an instance

// One instance of the program: made and initialised for a rate with the spec's values, its
// audio outputs its own buffers. Each call into libfaust or the compiled code is marked.
class FaustInstance {
 public:
  FaustInstance(std::shared_ptr<const FaustProgram> p, int max_frames)
      : p_(std::move(p)),
        bufs_(static_cast<std::size_t>(p_->outputs), std::vector<float>(static_cast<std::size_t>(max_frames), 0.0f)) {
    for (auto& b : bufs_) outs_.push_back(b.data());
  }
  FaustInstance(const FaustInstance&) = delete;
  FaustInstance& operator=(const FaustInstance&) = delete;
  ~FaustInstance() {
    if (!dsp_) return;
    const std::lock_guard lock(faust_mutex());
    const HostedPhase in("deleteDSPInstance", p_->label.c_str());
    if (p_->interp)
      p_->api->interp_delete(static_cast<interpreter_dsp*>(dsp_));
    else
      p_->api->llvm_delete(static_cast<llvm_dsp*>(dsp_));
  }
  /// Makes the instance (not initialised). [allocates, blocks]
  bool make(std::string& error) {
    {
      const std::lock_guard lock(faust_mutex());
      const HostedPhase in("createDSPInstance", p_->label.c_str());
      dsp_ = p_->interp ? static_cast<void*>(p_->api->interp_create(static_cast<interpreter_dsp_factory*>(p_->factory)))
                        : static_cast<void*>(p_->api->llvm_create(static_cast<llvm_dsp_factory*>(p_->factory)));
    }
    if (!dsp_) error = "libfaust could not make an instance of the program";
    return dsp_ != nullptr;
  }
  /// Its audio inputs and outputs, and its controls with their zones. [allocates]
  void describe(int& inputs, int& outputs, UiCollector& ui) {
    const HostedPhase named(nullptr, p_->label.c_str());  // each call marks itself below
    UIGlue glue = ui.glue();
    const Api& a = *p_->api;
    if (p_->interp) {
      auto* d = static_cast<interpreter_dsp*>(dsp_);
      { const ForeignCall call("getNumInputs"); inputs = a.interp_inputs(d); }
      { const ForeignCall call("getNumOutputs"); outputs = a.interp_outputs(d); }
      { const ForeignCall call("buildUserInterface"); a.interp_ui(d, &glue); }
    } else {
      auto* d = static_cast<llvm_dsp*>(dsp_);
      { const ForeignCall call("getNumInputs"); inputs = a.llvm_inputs(d); }
      { const ForeignCall call("getNumOutputs"); outputs = a.llvm_outputs(d); }
      { const ForeignCall call("buildUserInterface"); a.llvm_ui(d, &glue); }
    }
  }
  /// Makes and initialises the instance at `rate` and sets the spec's values. [allocates, blocks]
  bool open(int rate, std::string& error) {
    if (!make(error)) return false;
    {
      // init also fills the program's class tables, which its instances share
      const std::lock_guard lock(faust_mutex());
      const HostedPhase in("init", p_->label.c_str());
      if (p_->interp)
        p_->api->interp_init(static_cast<interpreter_dsp*>(dsp_), rate);
      else
        p_->api->llvm_init(static_cast<llvm_dsp*>(dsp_), rate);
    }
    UiCollector ui;
    int ins = 0, outs = 0;
    describe(ins, outs, ui);
    if (ui.zones.size() != p_->controls.size() || ins != p_->inputs || outs != p_->outputs) {
      error = "an instance of the program differs from the one checked when it was compiled";
      return false;
    }
    for (const auto& [i, v] : p_->values) *ui.zones[i] = v;
    return true;
  }
  /// One compute() from `in` (one buffer per input) into the instance's outputs. [no-alloc, no-block]
  void run(float* const* in, int frames) noexcept {
    auto** ins = const_cast<float**>(in);
    if (p_->interp) {
      const ForeignCall call("compute");
      p_->api->interp_compute(static_cast<interpreter_dsp*>(dsp_), frames, ins, outs_.data());
    } else {
      const ForeignCall call("compute");
      p_->api->llvm_compute(static_cast<llvm_dsp*>(dsp_), frames, ins, outs_.data());
    }
  }
  /// Clears the program's state (its controls keep their values). [no-alloc, no-block]
  void restart() noexcept {
    if (p_->interp) {
      const ForeignCall call("instanceClear");
      p_->api->interp_clear(static_cast<interpreter_dsp*>(dsp_));
    } else {
      const ForeignCall call("instanceClear");
      p_->api->llvm_clear(static_cast<llvm_dsp*>(dsp_));
    }
  }
  const float* output(std::size_t k) const noexcept { return outs_[k]; }

 private:
  std::shared_ptr<const FaustProgram> p_;
  void* dsp_ = nullptr;
  std::vector<std::vector<float>> bufs_;  // per audio output
  std::vector<float*> outs_;
};

// the Faust host runs nothing around a call
struct NoGuard {};
using FaustProcessor = PluginProcessor<FaustProgram, FaustInstance, NoGuard>;

class FaustFactory final : public HostedFactory {
 public:
  explicit FaustFactory(std::shared_ptr<const FaustProgram> p) : p_(std::move(p)) {}
  const std::string& label() const noexcept override { return p_->label; }
  std::unique_ptr<HostedProcessor> create(const HostedShape& shape, std::string& error) const override {
    return create_or_explain([&](std::string& why) { return make(shape, why); }, error);
  }
  const FaustProgram& program() const noexcept { return *p_; }

 private:
  std::unique_ptr<HostedProcessor> make(const HostedShape& shape, std::string& error) const {
    const int ins = p_->inputs, outs = p_->outputs;
    const bool per_channel = ins == 1 && outs == 1;
    if (!per_channel && (ins != shape.channels || outs != shape.channels)) {
      error = fmt::format(
          "has {} and {}; the chunk has {} (a program runs once per channel with 1 input and 1 output, or once on "
          "the chunk with an input and an output per channel)",
          plural(static_cast<std::size_t>(ins), "input"), plural(static_cast<std::size_t>(outs), "output"),
          plural(static_cast<std::size_t>(std::max(0, shape.channels)), "channel"));
      return nullptr;
    }
    const int rate = static_cast<int>(std::lround(shape.rate));
    std::vector<std::unique_ptr<FaustInstance>> insts;
    for (int c = 0; c < (per_channel ? shape.channels : 1); ++c) {
      insts.push_back(std::make_unique<FaustInstance>(p_, shape.max_frames));
      if (!insts.back()->open(rate, error)) return nullptr;
    }
    return std::make_unique<FaustProcessor>(p_, shape.max_frames, per_channel, std::move(insts), 0);
  }
  std::shared_ptr<const FaustProgram> p_;
};

// ------------------------------------------------------------------------------ loading

// The spec's fields: compiler options, the backend asked for, the controls.
struct Fields {
  std::vector<std::string> opts;
  std::string backend;  // "", "llvm" or "interp"
  Params controls;
};

// Why chunkscope refuses the compiler option `o`, or nullptr.
const char* refused_option(const std::string& o) {
  static constexpr const char* kFloats = "chunkscope passes the program float buffers (-single, the default)";
  static constexpr const char* kThreads = "its code runs worker threads beside the real-time one";
  static constexpr const char* kMath = "its math functions would have to be linked into chunkscope";
  static const std::pair<const char*, const char*> kRefused[] = {
      {"-double", kFloats}, {"--double-precision-floats", kFloats}, {"-quad", kFloats},
      {"--quad-precision-floats", kFloats}, {"-fx", kFloats}, {"--fixed-point", kFloats},
      {"-sch", kThreads}, {"--scheduler", kThreads}, {"-omp", kThreads}, {"--openmp", kThreads},
      {"-fm", kMath}, {"--fast-math", kMath}};
  for (const auto& [name, why] : kRefused)
    if (o == name) return why;
  return nullptr;
}

Fields split_fields(const Params& params, const std::string& where) {
  Fields f;
  for (const auto& [key, value] : params) {
    if (key == "opts") {
      std::istringstream words(value);
      for (std::string w; words >> w;) {
        if (const char* why = refused_option(w))
          throw InputError(fmt::format("{}: opts: {} is refused: {}", where, one_line(w), why));
        f.opts.push_back(w);
      }
    } else if (key == "backend") {
      if (value != "llvm" && value != "interp")
        throw InputError(fmt::format("{}: backend={}: give llvm or interp", where, one_line(value)));
      f.backend = value;
    } else {
      f.controls.emplace_back(key, value);
    }
  }
  return f;
}

// Line `n` (1-based) of the file at `path`, trimmed, or "".
std::string line_of(const std::string& path, long n) {
  std::ifstream in(path);
  std::string line;
  for (long i = 1; i <= n && std::getline(in, line); ++i)
    if (i == n) {
      const auto b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
      return b == std::string::npos ? "" : line.substr(b, e - b + 1);
    }
  return "";
}

// The compiler's message as one line: "prog.dsp : 2 : ERROR : what" becomes "prog.dsp:2: what
// (line 2: 'text')" when the line is in the program's own file; other lines join with "; ".
std::string compiler_message(const std::string& text, const std::string& path) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(l.substr(0, l.find_last_not_of(" \t\r") + 1));
  if (lines.empty()) return "the Faust compiler failed without a message";
  std::string first = lines[0], where_in;
  const auto a = first.find(" : "), b = a == std::string::npos ? a : first.find(" : ", a + 3);
  long line = 0;
  const char* digits = a == std::string::npos || b == std::string::npos ? nullptr : first.data() + a + 3;
  if (digits && std::from_chars(digits, first.data() + b, line).ptr == first.data() + b && line > 0) {
    const std::string file = first.substr(0, a);
    std::string what = first.substr(b + 3);
    if (what.rfind("ERROR : ", 0) == 0) what.erase(0, 8);
    first = fmt::format("{}:{}: {}", file, line, what);
    // the compiler names the program's own file by its name, or by its name without ".dsp"
    const fs::path own(path);
    const bool ours = file == own.filename().string() || file == own.stem().string();
    const std::string text_at = ours ? line_of(path, line) : "";
    if (!text_at.empty()) where_in = fmt::format(" (line {}: '{}')", line, text_at);
  } else if (first.rfind("ERROR : ", 0) == 0) {
    first.erase(0, 8);
  }
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const bool ended = std::string_view(";:,.").find(first.back()) != std::string_view::npos;
    first += (ended ? " " : "; ") + lines[i].substr(std::min(lines[i].find_first_not_of(" \t"), lines[i].size()));
  }
  return one_line(first + where_in);
}

// The factory of one backend, or nullptr with the compiler's message in `error`; the time it took in `ns`.
void* compile_with(const FaustProgram& p, bool interp, const std::string& path, const std::vector<std::string>& opts,
                   std::string& error, std::int64_t& ns) {
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  argv.push_back(nullptr);
  const int argc = static_cast<int>(opts.size());
  char err[4096] = {};
  void* f = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  {
    const std::lock_guard lock(faust_mutex());
    const HostedPhase in("compile", p.label.c_str());
    f = interp ? static_cast<void*>(p.api->interp_factory(path.c_str(), argc, argv.data(), err))
               : static_cast<void*>(p.api->llvm_factory(path.c_str(), argc, argv.data(), "", err, -1));
  }
  ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  err[sizeof err - 1] = '\0';
  if (!f) error = err;
  return f;
}

// Compiles with LLVM, else (or when asked) with the interpreter. Throws the compiler's message.
void compile(FaustProgram& p, const std::string& path, const Fields& f, const std::string& where) {
  std::string llvm_error, interp_error;
  std::int64_t ns = 0;
  if (f.backend != "interp") {
    p.factory = compile_with(p, false, path, f.opts, llvm_error, ns);
    p.build.backend = "LLVM";
  }
  if (!p.factory && f.backend != "llvm") {
    p.factory = compile_with(p, true, path, f.opts, interp_error, ns);
    p.interp = p.factory != nullptr;
    p.build.backend = "interpreter";
    p.build.llvm_failure = f.backend == "interp" ? "" : compiler_message(llvm_error, path);
  }
  if (!p.factory)
    throw InputError(fmt::format("{}: Faust compiler: {}", where,
                                 compiler_message(llvm_error.empty() ? interp_error : llvm_error, path)));
  p.build.compile_ns = ns;
}

// The program's channels and controls, from an instance made to look at them.
void describe(const std::shared_ptr<FaustProgram>& p, const std::string& where) {
  FaustInstance probe(p, 0);
  std::string error;
  if (!probe.make(error)) throw InputError(fmt::format("{}: {}", where, error));
  UiCollector ui;
  probe.describe(p->inputs, p->outputs, ui);
  if (!ui.soundfile.empty())
    throw InputError(fmt::format("{}: the program reads a soundfile ('{}'), which chunkscope does not load for it", where,
                                 one_line(ui.soundfile)));
  p->controls = std::move(ui.controls);
  for (int k = 0; k < p->outputs; ++k) p->model.audio_out.push_back(static_cast<std::size_t>(k));
}

std::string control_list(const std::vector<Control>& cs) {
  std::string s;
  for (const auto& c : cs)
    if (!c.output) s += fmt::format("{}{}", s.empty() ? "" : ", ", c.path);
  return s.empty() ? "the program has none" : "controls: " + s;
}

// The control `key` names: a label, or a path (one ending with it at a '/').
std::size_t control_index(const std::vector<Control>& cs, const std::string& key, const std::string& where) {
  std::vector<std::size_t> hits;
  std::vector<std::string> names;
  const bool by_path = key.find('/') != std::string::npos;
  std::string k;  // the key as a path: leading '/', no anonymous groups, parts as Faust writes them
  for (std::size_t b = 0; by_path && b < key.size();) {
    const std::size_t e = std::min(key.find('/', b), key.size());
    if (e > b && key.substr(b, e - b) != "0x00") k += "/" + path_part(key.substr(b, e - b));
    b = e + 1;
  }
  for (std::size_t i = 0; i < cs.size(); ++i) {
    if (by_path && cs[i].path == k) return i;
    const auto& path = cs[i].path;
    const bool hit = by_path ? path.size() > k.size() && path.compare(path.size() - k.size(), k.size(), k) == 0
                             : cs[i].label == key || path_part(cs[i].label) == key;
    if (hit) hits.push_back(i);
    names.push_back(by_path ? path : cs[i].label);
  }
  if (hits.size() == 1) return hits[0];
  if (hits.size() > 1) {
    std::string paths;
    for (auto i : hits) paths += fmt::format("{}{}", paths.empty() ? "" : ", ", cs[i].path);
    throw InputError(fmt::format("{}: '{}' names {} controls ({}); give one's path", where, one_line(key),
                                 hits.size(), paths));
  }
  throw InputError(fmt::format("{}: unknown control '{}'{} ({})", where, one_line(key), did_you_mean(key, names),
                               control_list(cs)));
}

// The spec's control values, checked against the controls' ranges.
void set_values(FaustProgram& p, const Params& controls, const std::string& where) {
  for (const auto& [key, text] : controls) {
    const std::size_t i = control_index(p.controls, key, where);
    const Control& c = p.controls[i];
    const std::string name = key == c.path ? fmt::format("'{}'", c.path) : fmt::format("'{}' ({})", one_line(key), c.path);
    if (c.output)
      throw InputError(fmt::format("{}: {} is an output of the program (a bargraph), not a control", where, name));
    for (const auto& [j, v] : p.values)
      if (j == i) throw InputError(fmt::format("{}: control {} is given twice", where, name));
    const char* b = text.data() + (!text.empty() && text[0] == '+');
    const char* e = text.data() + text.size();
    double v = 0;
    const auto [end, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || end != e || b == e || !std::isfinite(v))
      throw InputError(fmt::format("{}: control {}: '{}' is not a number (plain decimal numbers only, e.g. 0.5, -12, 2e3)",
                                   where, name, one_line(text)));
    const float f = static_cast<float>(v);
    if (!(f >= c.min && f <= c.max))
      throw InputError(fmt::format("{}: control {}: {} is outside its range [{}, {}]", where, name, one_line(text),
                                   c.min, c.max));
    p.values.emplace_back(i, f);
  }
}

// A file that is there and readable; InputError naming `where` otherwise.
void check_file(const std::string& path, const std::string& where) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    throw InputError(fmt::format("{}: not found: no file {}", where, fs::absolute(path, ec).lexically_normal().string()));
  if (fs::is_directory(st)) throw InputError(fmt::format("{}: is a folder, not a Faust program", where));
  if (!std::ifstream(path)) throw InputError(fmt::format("{}: cannot be read", where));
}

}  // namespace

bool faust_available() noexcept { return true; }

std::string faust_library_problem(const std::string& soname) {
  Api api{};
  return open_libfaust(soname, api);
}

std::shared_ptr<const HostedFactory> load_faust_stage(const std::string& path, const Params& params,
                                                      const std::string& where) {
  check_file(path, where);
  Fields f = split_fields(params, where);
  // the program's own folder is searched for what it imports, as the faust command does
  std::error_code ec;
  f.opts.push_back("-I");
  f.opts.push_back(fs::absolute(path, ec).parent_path().string());
  auto p = std::make_shared<FaustProgram>();
  p->label = "faust:" + fs::path(path).filename().string();
  p->api = &libfaust(where);
  compile(*p, path, f, where);
  if (p->interp) p->label += " (interpreter)";
  describe(p, where);
  set_values(*p, f.controls, where);
  return std::make_shared<FaustFactory>(std::move(p));
}

std::optional<FaustBuild> faust_build_of(const HostedFactory& f) {
  const auto* ff = dynamic_cast<const FaustFactory*>(&f);
  if (!ff) return std::nullopt;
  return ff->program().build;
}

std::string faust_build_note(const HostedFactory& f) {
  const auto b = faust_build_of(f);
  if (!b) return "";
  const auto* ff = dynamic_cast<const FaustFactory*>(&f);
  const char* version = ff->program().api->version();
  std::string note = fmt::format("compiled by libfaust {}'s {} backend in {:.1f} ms", version ? version : "?",
                                 b->backend, static_cast<double>(b->compile_ns) / 1e6);
  if (!b->llvm_failure.empty()) note += fmt::format(" (LLVM could not: {})", b->llvm_failure);
  return note;
}

#else  // built without libfaust's headers: the same interface, answering that Faust is not hosted

namespace {
constexpr const char* kNoFaust =
    "this chunkscope was built without Faust (libfaust's headers not found; install faust-common and libfaust2, "
    "then build again)";
}

bool faust_available() noexcept { return false; }

std::shared_ptr<const HostedFactory> load_faust_stage(const std::string&,
                                                      const std::vector<std::pair<std::string, std::string>>&,
                                                      const std::string& where) {
  throw InputError(fmt::format("{}: {}", where, kNoFaust));
}

std::optional<FaustBuild> faust_build_of(const HostedFactory&) { return std::nullopt; }

std::string faust_library_problem(const std::string&) { return kNoFaust; }

std::string faust_build_note(const HostedFactory&) { return ""; }

#endif  // CHUNKSCOPE_WITH_FAUST

}  // namespace chunkscope
