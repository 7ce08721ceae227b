#include "src/hosted_ladspa.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <strings.h>

#include "src/errors.hpp"
#include "src/suggest.hpp"
#include "src/plugin_processor.hpp"

// LADSPA is hosted when ladspa.h (ladspa-sdk) is found, or when the build says so.
#if !defined(CHUNKSCOPE_WITH_LADSPA) && __has_include(<ladspa.h>)
#define CHUNKSCOPE_WITH_LADSPA 1
#endif
#if defined(CHUNKSCOPE_WITH_LADSPA)
#include <dlfcn.h>
#include <ladspa.h>
#endif

namespace chunkscope {

namespace fs = std::filesystem;

std::vector<std::string> ladspa_search_path() {
  std::vector<std::string> dirs;
  const auto add = [&](const std::string& d) {
    if (!d.empty() && std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  };
  if (const char* env = std::getenv("LADSPA_PATH")) {
    const std::string s = env;
    for (std::size_t b = 0, e; b <= s.size(); b = e + 1) {
      e = std::min(s.find(':', b), s.size());
      add(s.substr(b, e - b));
    }
  }
  for (const char* d : {"/usr/lib/ladspa", "/usr/local/lib/ladspa", "/usr/lib/x86_64-linux-gnu/ladspa"}) add(d);
  return dirs;
}

std::vector<std::string> ladspa_port_symbols(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& name : names) {
    std::string s;
    for (const char ch : name) {
      const auto c = static_cast<unsigned char>(ch);
      const bool keep = c < 0x80 && std::isalnum(c);
      if (keep) s += static_cast<char>(std::tolower(c));
      else if (!s.empty() && s.back() != '_') s += '_';
    }
    while (!s.empty() && s.back() == '_') s.pop_back();
    if (s.empty()) s = "port";
    std::string unique = s;
    for (int n = 2; std::find(out.begin(), out.end(), unique) != out.end(); ++n) unique = fmt::format("{}_{}", s, n);
    out.push_back(unique);
  }
  return out;
}

#if defined(CHUNKSCOPE_WITH_LADSPA)

namespace {

using Controls = std::vector<std::pair<std::string, std::string>>;

// A loaded library: closed when its factory, its processors and its models are gone.
struct Library {
  std::string path;
  void* handle = nullptr;
  LADSPA_Descriptor_Function entry = nullptr;
  ~Library() {
    if (!handle) return;
    HostedPhase in("unloading", path.c_str());  // the library's destructors run here
    dlclose(handle);
  }
};

// dlopen's handle of `path` and its entry point, or nullptr and the reason in `why`. Runs the
// library's constructors. The caller closes the handle.
void* open_handle(const std::string& path, LADSPA_Descriptor_Function& entry, std::string& why) {
  void* h = nullptr;
  {
    HostedPhase in("loading", path.c_str());  // the library's constructors run here
    h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!h) {
    const char* e = dlerror();
    why = fmt::format("not a loadable shared object ({})", one_line(e ? e : "dlopen failed"));
    return nullptr;
  }
  entry = reinterpret_cast<LADSPA_Descriptor_Function>(dlsym(h, "ladspa_descriptor"));
  if (!entry) why = "no ladspa_descriptor symbol (not a LADSPA library)";
  return h;
}

// The library at `path` (a path with a '/'), loaded in this process, or nullptr and the
// reason in `why`.
std::shared_ptr<const Library> open_library(const std::string& path, std::string& why) {
  auto lib = std::make_shared<Library>();
  lib->path = path;
  lib->handle = open_handle(path, lib->entry, why);
  return lib->entry ? lib : nullptr;
}

// The descriptors `entry` gives, in index order; `path` names the library for a crash handler.
std::vector<const LADSPA_Descriptor*> descriptors(LADSPA_Descriptor_Function entry, const std::string& path) {
  std::vector<const LADSPA_Descriptor*> out;
  for (unsigned long i = 0; i < 4096; ++i) {
    const LADSPA_Descriptor* d = nullptr;
    {
      HostedPhase in("ladspa_descriptor", path.c_str());
      d = entry(i);
    }
    if (!d) break;
    if (d->Label) out.push_back(d);
  }
  return out;
}
std::vector<const LADSPA_Descriptor*> descriptors(const Library& lib) { return descriptors(lib.entry, lib.path); }

const LADSPA_Descriptor* find_label(const Library& lib, const std::string& label) {
  for (const auto* d : descriptors(lib))
    if (label == d->Label) return d;
  return nullptr;
}

// ------------------------------------------------------- descriptors read apart

// What a descriptor says, copied: a plugin's model is made from it, so that the list needs
// neither the library kept loaded nor loaded in this process at all.
struct DescriptorCopy {
  std::string label, name;
  bool complete = false;  // instantiate, connect_port, run and cleanup are given
  std::vector<LADSPA_PortDescriptor> ports;
  std::vector<std::string> port_names;
  std::vector<LADSPA_PortRangeHint> hints;  // empty: the descriptor gives none
};

DescriptorCopy copy_of(const LADSPA_Descriptor* d) {
  DescriptorCopy c;
  c.label = d->Label;
  c.name = d->Name ? d->Name : "";
  c.complete = d->instantiate && d->connect_port && d->run && d->cleanup;
  for (unsigned long i = 0; i < d->PortCount; ++i) {
    c.ports.push_back(d->PortDescriptors[i]);
    c.port_names.emplace_back(d->PortNames && d->PortNames[i] ? d->PortNames[i] : "");
    if (d->PortRangeHints) c.hints.push_back(d->PortRangeHints[i]);
  }
  return c;
}

// A library's plugins as read in a child process: `why` says why none could be.
struct LibraryRead {
  std::string path, why;
  std::vector<DescriptorCopy> plugins;
};

// The child's answer, a line-free byte format: 'E' and the reason, or 'L' and the plugins.
class WireOut {
 public:
  void u32(std::uint32_t v) { s_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void f32(float v) { s_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(const std::string& v) {
    u32(static_cast<std::uint32_t>(v.size()));
    s_ += v;
  }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};

class WireIn {
 public:
  explicit WireIn(const std::string& s) : s_(s) {}
  std::uint32_t u32() { return get<std::uint32_t>(); }
  float f32() { return get<float>(); }
  std::string str() {
    const std::uint32_t n = u32();
    if (!ok_ || n > s_.size() - at_) return fail(std::string());
    at_ += n;
    return s_.substr(at_ - n, n);
  }
  bool ok() const { return ok_; }

 private:
  template <class T>
  T get() {
    T v{};
    if (!ok_ || sizeof v > s_.size() - at_) return fail(v);
    std::memcpy(&v, s_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  template <class T>
  T fail(T v) {
    ok_ = false;
    return v;
  }
  const std::string& s_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

void put_copy(WireOut& w, const DescriptorCopy& c) {
  w.str(c.label);
  w.str(c.name);
  w.u32(c.complete ? 1 : 0);
  w.u32(static_cast<std::uint32_t>(c.ports.size()));
  w.u32(c.hints.empty() ? 0 : 1);
  for (std::size_t i = 0; i < c.ports.size(); ++i) {
    w.u32(static_cast<std::uint32_t>(c.ports[i]));
    w.str(c.port_names[i]);
    if (c.hints.empty()) continue;
    w.u32(static_cast<std::uint32_t>(c.hints[i].HintDescriptor));
    w.f32(c.hints[i].LowerBound);
    w.f32(c.hints[i].UpperBound);
  }
}

DescriptorCopy get_copy(WireIn& r) {
  DescriptorCopy c;
  c.label = r.str();
  c.name = r.str();
  c.complete = r.u32() != 0;
  const std::uint32_t n = r.u32();
  const bool hints = r.u32() != 0;
  for (std::uint32_t i = 0; i < n && r.ok(); ++i) {
    c.ports.push_back(static_cast<LADSPA_PortDescriptor>(r.u32()));
    c.port_names.push_back(r.str());
    if (!hints) continue;
    LADSPA_PortRangeHint h{};
    h.HintDescriptor = static_cast<LADSPA_PortRangeHintDescriptor>(r.u32());
    h.LowerBound = r.f32();
    h.UpperBound = r.f32();
    c.hints.push_back(h);
  }
  return c;
}

// In the child: loads `path`, copies its descriptors, answers. The library is not closed:
// the child ends at once.
std::string read_here(const std::string& path) {
  WireOut w;
  LADSPA_Descriptor_Function entry = nullptr;
  std::string why;
  if (!open_handle(path, entry, why) || !entry) {
    w.u32('E');
    w.str(why);
    return w.take();
  }
  const auto ds = descriptors(entry, path);
  w.u32('L');
  w.u32(static_cast<std::uint32_t>(ds.size()));
  for (const auto* d : ds) put_copy(w, copy_of(d));
  return w.take();
}

// The plugins of the library at `path`, read in a child process: a constructor (or a
// ladspa_descriptor) that crashes, exits or hangs costs only that library.
LibraryRead read_apart(const std::string& path) {
  LibraryRead out;
  out.path = path;
  const ChildOutcome c = run_in_child([&] { return read_here(path); });
  if (!c.finished) {
    out.why = fmt::format("cannot be loaded: the process that loaded it to read its plugins {}", c.failure);
    return out;
  }
  WireIn r(c.answer);
  const std::uint32_t kind = r.u32();
  if (kind == 'E') out.why = r.str();
  for (std::uint32_t i = 0, n = kind == 'L' ? r.u32() : 0; i < n && r.ok(); ++i) out.plugins.push_back(get_copy(r));
  if (!r.ok() || (kind != 'E' && kind != 'L')) {
    out.plugins.clear();
    out.why = "cannot be read (the process that loaded it gave an answer that could not be read)";
  }
  return out;
}

// The .so files of the search path's folders, folder by folder, sorted within each.
std::vector<std::string> library_files() {
  std::vector<std::string> out;
  for (const auto& dir : ladspa_search_path()) {
    std::error_code ec;
    std::vector<std::string> here;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".so" && !it->is_directory(ec)) here.push_back(it->path().string());
    std::sort(here.begin(), here.end());
    out.insert(out.end(), here.begin(), here.end());
  }
  return out;
}

std::string search_text() {
  std::string s;
  for (const auto& d : ladspa_search_path()) s += (s.empty() ? "" : ":") + d;
  return s;
}

// `path` as the file to open: a path with a '/' as given, a bare name found on the search path.
std::string locate(const std::string& path, const std::string& where) {
  std::error_code ec;
  if (path.find('/') == std::string::npos) {
    for (const auto& dir : ladspa_search_path())
      if (fs::is_regular_file(fs::path(dir) / path, ec)) return (fs::path(dir) / path).string();
    throw InputError(
        fmt::format("{}: no LADSPA library '{}' on the search path ({})", where, one_line(path), search_text()));
  }
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw InputError(fmt::format("{}: {}: not found", where, one_line(path)));
  if (fs::is_directory(st))
    throw InputError(fmt::format("{}: {}: is a folder, not a LADSPA library", where, one_line(path)));
  return path;
}

struct Found {
  std::shared_ptr<const Library> lib;
  const LADSPA_Descriptor* desc = nullptr;
};

std::string no_label(const std::string& where, const std::string& label, const std::string& file,
                     const std::vector<std::string>& labels) {
  const std::string known = labels.empty() ? "it has none" : "labels: " + fmt::format("{}", fmt::join(labels, ", "));
  return fmt::format("{}: no plugin labelled '{}' in {} ({})", where, one_line(label), file, known);
}

// The plugin `label` of the library `file`, loaded in this process.
Found find_in(const std::string& file, const std::string& label, const std::string& where) {
  std::string why;
  auto lib = open_library(file, why);
  if (!lib) throw InputError(fmt::format("{}: {}: {}", where, one_line(file), why));
  if (const auto* d = find_label(*lib, label)) return {lib, d};
  std::vector<std::string> labels;
  for (const auto* d : descriptors(*lib)) labels.push_back(d->Label);
  throw InputError(no_label(where, label, file, labels));
}

// The plugin `label`, read apart (read_apart): in the library `path`, or in the one library
// on the search path that has it. A label that several libraries have is ambiguous: the error
// names each as `ladspa:LIBRARY:LABEL`, so what resolves never depends on which other plugin
// packages the machine happens to have. A library that cannot be read does not hide the others.
struct Resolved {
  std::string file;
  DescriptorCopy copy;
};
Resolved resolve(const std::string& path, const std::string& label, const std::string& where) {
  if (label.empty()) throw InputError(fmt::format("{}: missing plugin label (usage: ladspa:[library.so:]label)", where));
  const auto has = [&](const LibraryRead& r) {
    return std::find_if(r.plugins.begin(), r.plugins.end(), [&](const DescriptorCopy& c) { return c.label == label; });
  };
  if (!path.empty()) {
    const LibraryRead r = read_apart(locate(path, where));
    if (!r.why.empty()) throw InputError(fmt::format("{}: {}: {}", where, one_line(r.path), r.why));
    if (const auto it = has(r); it != r.plugins.end()) return {r.path, *it};
    std::vector<std::string> labels;
    for (const auto& c : r.plugins) labels.push_back(c.label);
    throw InputError(no_label(where, label, r.path, labels));
  }
  const auto files = library_files();
  std::vector<Resolved> hits;
  std::vector<std::string> names, labels;
  for (const auto& file : files) {
    const LibraryRead r = read_apart(file);
    for (const auto& c : r.plugins) labels.push_back(c.label);
    if (const auto it = has(r); it != r.plugins.end()) {
      hits.push_back({file, *it});
      names.push_back(fmt::format("ladspa:{}:{}", fs::path(file).filename().string(), label));
    }
  }
  if (hits.size() == 1) return hits[0];
  if (hits.size() > 1)
    throw InputError(fmt::format("{}: '{}' is ambiguous: {} LADSPA libraries have it: {} (name the library)", where,
                                 one_line(label), hits.size(), fmt::join(names, ", ")));
  throw InputError(fmt::format("{}: no LADSPA plugin labelled '{}' in the {} on the search path ({}){}", where,
                               one_line(label), files.size() == 1 ? "1 library" : fmt::format("{} libraries", files.size()),
                               search_text(), did_you_mean(label, labels)));
}

// The plugin to host: the library named is loaded here at once (its errors as dlopen gives
// them); a bare label is found apart first, and only its library is loaded here.
Found find_plugin(const std::string& path, const std::string& label, const std::string& where) {
  if (label.empty()) throw InputError(fmt::format("{}: missing plugin label (usage: ladspa:[library.so:]label)", where));
  if (!path.empty()) return find_in(locate(path, where), label, where);
  return find_in(resolve(path, label, where).file, label, where);
}

// ----------------------------------------------------------------------- plugin model

enum class Kind { audio_in, audio_out, control_in, control_out, other };
const char* kind_name(Kind k) {
  static constexpr const char* names[] = {"audio_in", "audio_out", "control_in", "control_out", "other"};
  return names[static_cast<int>(k)];
}

struct PortModel {
  std::string symbol, name;
  Kind kind = Kind::other;
  float min = NAN, max = NAN, def = NAN;  // NaN: not given
  bool sample_rate = false;               // bounds are fractions of the rate
  bool def_absolute = false;              // def is absolute even on a sample-rate port
  bool latency = false;
  bool integer = false, toggled = false;  // LADSPA_HINT_INTEGER, LADSPA_HINT_TOGGLED
};

// A plugin as its descriptor's copy says; `lib` and `desc` are set for a plugin loaded here
// to be hosted, and null in the list.
struct PluginModel {
  std::shared_ptr<const Library> lib;
  const LADSPA_Descriptor* desc = nullptr;
  std::string path, id, label, name;
  bool complete = false;  // the descriptor gives instantiate, connect_port, run and cleanup
  std::vector<PortModel> ports;
  std::vector<unsigned long> audio_in, audio_out;
  int latency_port = -1;
  std::string why_not;
};

// The default a range hint names (LADSPA's rules: low and high are 1/4 of the way, on a
// logarithmic scale when the hint says so); `absolute` when it is a constant.
float hint_default(const LADSPA_PortRangeHint& h, bool& absolute) {
  const int d = h.HintDescriptor;
  const float lo = h.LowerBound, hi = h.UpperBound;
  const bool log = LADSPA_IS_HINT_LOGARITHMIC(d) && lo > 0 && hi > 0;
  const auto between = [&](float t) {
    return log ? std::exp(std::log(lo) * (1 - t) + std::log(hi) * t) : lo * (1 - t) + hi * t;
  };
  absolute = false;
  switch (d & LADSPA_HINT_DEFAULT_MASK) {
    case LADSPA_HINT_DEFAULT_MINIMUM: return lo;
    case LADSPA_HINT_DEFAULT_LOW: return between(0.25f);
    case LADSPA_HINT_DEFAULT_MIDDLE: return between(0.5f);
    case LADSPA_HINT_DEFAULT_HIGH: return between(0.75f);
    case LADSPA_HINT_DEFAULT_MAXIMUM: return hi;
  }
  absolute = true;
  switch (d & LADSPA_HINT_DEFAULT_MASK) {
    case LADSPA_HINT_DEFAULT_0: return 0;
    case LADSPA_HINT_DEFAULT_1: return 1;
    case LADSPA_HINT_DEFAULT_100: return 100;
    case LADSPA_HINT_DEFAULT_440: return 440;
  }
  return NAN;
}

PortModel port_model(const DescriptorCopy& d, std::size_t i) {
  PortModel p;
  const LADSPA_PortDescriptor pd = d.ports[i];
  const bool in = LADSPA_IS_PORT_INPUT(pd), out = LADSPA_IS_PORT_OUTPUT(pd);
  const bool audio = LADSPA_IS_PORT_AUDIO(pd), control = LADSPA_IS_PORT_CONTROL(pd);
  if (in != out && audio != control)
    p.kind = audio ? (in ? Kind::audio_in : Kind::audio_out) : (in ? Kind::control_in : Kind::control_out);
  p.name = d.port_names[i];
  if (d.hints.empty() || !control) return p;  // hints on audio ports (caps has some) mean nothing here
  const LADSPA_PortRangeHint& h = d.hints[i];
  if (LADSPA_IS_HINT_BOUNDED_BELOW(h.HintDescriptor)) p.min = h.LowerBound;
  if (LADSPA_IS_HINT_BOUNDED_ABOVE(h.HintDescriptor)) p.max = h.UpperBound;
  if (LADSPA_IS_HINT_TOGGLED(h.HintDescriptor)) p.min = 0, p.max = 1;
  p.toggled = LADSPA_IS_HINT_TOGGLED(h.HintDescriptor);
  p.integer = LADSPA_IS_HINT_INTEGER(h.HintDescriptor);
  p.sample_rate = LADSPA_IS_HINT_SAMPLE_RATE(h.HintDescriptor);
  p.def = hint_default(h, p.def_absolute);
  return p;
}

const char* kind_words(Kind k) {
  static constexpr const char* words[] = {"an audio input", "an audio output", "a control input", "a control output",
                                          "a port of a type chunkscope does not know"};
  return words[static_cast<int>(k)];
}


std::string why_not_hosted(const PluginModel& m) {
  for (const auto& p : m.ports)
    if (p.kind == Kind::other)
      return fmt::format("has port '{}', which is neither an audio nor a control input or output", p.symbol);
  if (!m.complete)
    return "lacks one of instantiate, connect_port, run, cleanup in its descriptor";
  if (m.audio_in.empty() || m.audio_in.size() != m.audio_out.size())
    return fmt::format("has {} and {}; chunkscope runs plugins with as many audio outputs as inputs",
                       plural(m.audio_in.size(), "audio input"), plural(m.audio_out.size(), "output"));
  return "";
}

// The model of the plugin `d` describes in the library `path`.
PluginModel model_of(const std::string& path, const DescriptorCopy& d) {
  PluginModel m;
  m.path = path, m.name = d.name, m.complete = d.complete;
  m.id = path + ":" + d.label;
  m.label = "ladspa:" + d.label;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < d.ports.size(); ++i) {
    m.ports.push_back(port_model(d, i));
    names.push_back(m.ports.back().name);
    if (m.ports.back().kind == Kind::audio_in) m.audio_in.push_back(i);
    if (m.ports.back().kind == Kind::audio_out) m.audio_out.push_back(i);
  }
  const auto symbols = ladspa_port_symbols(names);
  for (std::size_t i = 0; i < m.ports.size(); ++i) {
    PortModel& p = m.ports[i];
    p.symbol = symbols[i];
    const bool named = strcasecmp(p.name.c_str(), "latency") == 0 || strcasecmp(p.name.c_str(), "_latency") == 0;
    if (named && p.kind == Kind::control_out && m.latency_port < 0) {
      m.latency_port = static_cast<int>(i);
      p.latency = true;
    }
  }
  m.why_not = why_not_hosted(m);
  return m;
}

// --------------------------------------------------------------------------- controls

enum class Origin : std::uint8_t { fallback, user };

struct LadspaStage {
  PluginModel model;
  std::vector<float> values;   // per port: control inputs' start values (relative defaults as fractions)
  std::vector<Origin> origin;  // per port
};

float fallback_value(const PortModel& p) {
  if (!std::isnan(p.def)) return p.def;
  if (!std::isnan(p.min) && p.min > 0) return p.min;
  if (!std::isnan(p.max) && p.max < 0) return p.max;
  return 0.0f;
}

std::vector<std::string> control_names(const PluginModel& m) {
  std::vector<std::string> s;
  for (const auto& p : m.ports)
    if (p.kind == Kind::control_in) s.push_back(p.symbol);
  return s;
}

std::string control_symbols(const PluginModel& m) {
  std::vector<std::string> s;
  for (std::size_t i = 0; i < m.ports.size(); ++i)
    if (m.ports[i].kind == Kind::control_in) s.push_back(fmt::format("{} ({})", m.ports[i].symbol, i));
  return s.empty() ? "it has none" : fmt::format("controls: {}", fmt::join(s, ", "));
}

float parse_control(const std::string& text, const std::string& key, const std::string& where) {
  const char* b = text.data() + (!text.empty() && text[0] == '+');
  const char* e = text.data() + text.size();
  double v = 0;
  const auto [end, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || end != e || b == e || !std::isfinite(v))
    throw InputError(fmt::format("{}: control '{}': '{}' is not a number (plain decimal numbers only, e.g. 0.5, -12, 2e3)",
                                 where, one_line(key), one_line(text)));
  return static_cast<float>(v);
}

std::string range_text(const PortModel& p, double rate = 1) {
  const auto bound = [&](float v) { return std::isnan(v) ? std::string("unbounded") : fmt::format("{}", v * rate); };
  return fmt::format("[{}, {}]", bound(p.min), bound(p.max));
}
bool in_range(const PortModel& p, double v, double rate = 1) {
  return !((!std::isnan(p.min) && v < p.min * rate) || (!std::isnan(p.max) && v > p.max * rate));
}

// The port `key` names: its index among all ports (digits), else its symbol.
std::size_t port_index(const PluginModel& m, const std::string& key, const std::string& where) {
  std::size_t i = m.ports.size();
  const bool digits = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits) std::from_chars(key.data(), key.data() + key.size(), i);
  for (std::size_t j = 0; !digits && j < m.ports.size(); ++j)
    if (m.ports[j].symbol == key) i = j;
  if (i >= m.ports.size())
    throw InputError(fmt::format("{}: unknown control '{}'{} ({})", where, one_line(key),
                                 did_you_mean(key, control_names(m)), control_symbols(m)));
  if (m.ports[i].kind != Kind::control_in)
    throw InputError(fmt::format("{}: '{}' is {}, not a control input ({})", where, key, kind_words(m.ports[i].kind),
                                 control_symbols(m)));
  return i;
}

void apply_control(LadspaStage& st, const std::string& key, const std::string& text, const std::string& where) {
  const std::size_t i = port_index(st.model, key, where);
  const PortModel& p = st.model.ports[i];
  if (st.origin[i] == Origin::user) throw InputError(fmt::format("{}: control '{}' is given twice", where, p.symbol));
  const float v = parse_control(text, key, where);
  if (!p.sample_rate && !in_range(p, v))
    throw InputError(
        fmt::format("{}: control '{}': {} is outside its range {}", where, p.symbol, one_line(text), range_text(p)));
  // a toggle takes 0 or 1 (LADSPA: off at 0 or below, on above), an integer control whole numbers
  if (p.toggled && v != 0 && v != 1)
    throw InputError(fmt::format("{}: control '{}': {} is not one of its values: 0 (off), 1 (on)", where, p.symbol,
                                 one_line(text)));
  if (p.integer && !p.sample_rate && v != std::floor(v))
    throw InputError(fmt::format("{}: control '{}': {} is not a whole number (an integer control)", where, p.symbol,
                                 one_line(text)));
  st.values[i] = v;
  st.origin[i] = Origin::user;
}

// ------------------------------------------------------------------------ an instance

// One plugin instance: controls and audio outputs connected to its own buffers, audio inputs
// connected by run() to the chunk's channels.
class LadspaInstance {
 public:
  LadspaInstance(std::shared_ptr<const LadspaStage> st, int max_frames, std::vector<float> values)
      : st_(std::move(st)), values_(std::move(values)), bufs_(st_->model.ports.size()) {
    for (std::size_t i = 0; i < bufs_.size(); ++i)
      if (st_->model.ports[i].kind == Kind::audio_out) bufs_[i].assign(static_cast<std::size_t>(max_frames), 0.0f);
  }
  LadspaInstance(const LadspaInstance&) = delete;
  LadspaInstance& operator=(const LadspaInstance&) = delete;
  ~LadspaInstance() {
    if (!h_) return;
    const LADSPA_Descriptor* d = st_->model.desc;
    const char* label = st_->model.label.c_str();
    if (d->deactivate) {
      HostedPhase in("deactivate", label);
      d->deactivate(h_);
    }
    HostedPhase in("cleanup", label);
    d->cleanup(h_);
  }
  /// Instantiates, connects and activates. [allocates, blocks]
  bool open(double rate, std::string& error) {
    const LADSPA_Descriptor* d = st_->model.desc;
    const char* label = st_->model.label.c_str();
    {
      HostedPhase in("instantiate", label);
      h_ = d->instantiate(d, static_cast<unsigned long>(std::lround(rate)));
    }
    if (!h_) {
      error = "instantiate failed (the plugin gave no reason)";
      return false;
    }
    for (unsigned long i = 0; i < bufs_.size(); ++i) {
      const Kind k = st_->model.ports[i].kind;
      void* at = k == Kind::control_in || k == Kind::control_out ? static_cast<void*>(&values_[i])
                 : k == Kind::audio_out                          ? static_cast<void*>(bufs_[i].data())
                                                                 : nullptr;
      if (!at) continue;
      HostedPhase in("connect_port", label);
      d->connect_port(h_, i, static_cast<LADSPA_Data*>(at));
    }
    if (d->activate) {
      HostedPhase in("activate", label);
      d->activate(h_);
    }
    return true;
  }
  /// One call of run() on `frames` frames of `in` (one buffer per audio input); each call into
  /// the plugin marked on its own. [no-alloc, no-block]
  void run(float* const* in, int frames) noexcept {
    const LADSPA_Descriptor* d = st_->model.desc;
    for (std::size_t k = 0; k < st_->model.audio_in.size(); ++k) {
      const ForeignCall call("connect_port");
      d->connect_port(h_, st_->model.audio_in[k], in[k]);
    }
    const ForeignCall call("run");
    d->run(h_, static_cast<unsigned long>(frames));
  }
  /// Deactivates and activates: the plugin clears its state. [blocks]
  void restart() noexcept {
    const LADSPA_Descriptor* d = st_->model.desc;
    if (d->deactivate) {
      const ForeignCall call("deactivate");
      d->deactivate(h_);
    }
    if (d->activate) {
      const ForeignCall call("activate");
      d->activate(h_);
    }
  }
  const float* output(std::size_t k) const noexcept { return bufs_[st_->model.audio_out[k]].data(); }
  float value(std::size_t port) const noexcept { return values_[port]; }

 private:
  std::shared_ptr<const LadspaStage> st_;
  LADSPA_Handle h_ = nullptr;
  std::vector<float> values_;             // per port: control values
  std::vector<std::vector<float>> bufs_;  // per port: audio outputs
};

// ---------------------------------------------------------------- processor, factory

// the LADSPA host runs nothing around a call
struct NoGuard {};
using LadspaProcessor = PluginProcessor<LadspaStage, LadspaInstance, NoGuard>;

class LadspaFactory final : public HostedFactory {
 public:
  explicit LadspaFactory(std::shared_ptr<const LadspaStage> st) : st_(std::move(st)) {}
  const std::string& label() const noexcept override { return st_->model.label; }
  std::unique_ptr<HostedProcessor> create(const HostedShape& shape, std::string& error) const override {
    return create_or_explain([&](std::string& why) { return make(shape, why); }, error);
  }

 private:
  std::unique_ptr<HostedProcessor> make(const HostedShape& shape, std::string& error) const {
    const PluginModel& m = st_->model;
    bool per_channel = false;
    if (!plugin_fits(m.audio_in.size(), m.audio_out.size(), shape.channels, per_channel, error)) return nullptr;
    std::vector<float> values;
    if (!values_at(shape.rate, values, error)) return nullptr;
    std::vector<std::unique_ptr<LadspaInstance>> insts;
    for (int c = 0; c < (per_channel ? shape.channels : 1); ++c) {
      insts.push_back(std::make_unique<LadspaInstance>(st_, shape.max_frames, values));
      if (!insts.back()->open(shape.rate, error)) return nullptr;
    }
    std::uint32_t latency = 0;
    if (m.latency_port >= 0 && !probe_latency(shape, values, latency, error)) return nullptr;
    return std::make_unique<LadspaProcessor>(st_, shape.max_frames, per_channel, std::move(insts), latency);
  }
  // The latency port's value, on an instance of its own.
  bool probe_latency(const HostedShape& shape, const std::vector<float>& values, std::uint32_t& latency,
                     std::string& error) const {
    LadspaInstance probe(st_, shape.max_frames, values);
    if (!probe.open(shape.rate, error)) return false;
    latency = chunkscope::probe_latency<NoGuard>(probe, st_->model.audio_in.size(), shape.max_frames,
                                                 static_cast<std::size_t>(st_->model.latency_port), st_->model.label);
    return true;
  }

  // The start values at `rate`: relative defaults scaled, given values of sample-rate ports checked.
  bool values_at(double rate, std::vector<float>& values, std::string& error) const {
    values = st_->values;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const PortModel& p = st_->model.ports[i];
      if (p.kind != Kind::control_in || !p.sample_rate) continue;
      if (st_->origin[i] == Origin::fallback && !p.def_absolute) values[i] = static_cast<float>(values[i] * rate);
      if (st_->origin[i] == Origin::user && !in_range(p, values[i], rate)) {
        error = fmt::format("control '{}': {} is outside its range {} at {} Hz", p.symbol, values[i],
                            range_text(p, rate), rate);
        return false;
      }
    }
    return true;
  }
  std::shared_ptr<const LadspaStage> st_;
};

PluginInfo info_of(const PluginModel& m) {
  PluginInfo info;
  info.api = "ladspa", info.id = m.id, info.label = m.label, info.library = m.path;
  info.name = m.name;
  info.runnable = m.why_not.empty();
  info.why_not = m.why_not;
  const auto opt = [](float v) { return std::isnan(v) ? std::nullopt : std::optional<double>(v); };
  for (const auto& p : m.ports)
    info.ports.push_back({p.symbol, p.name, kind_name(p.kind), opt(p.min), opt(p.max), opt(p.def), p.latency,
                          p.sample_rate, p.sample_rate && p.def_absolute});
  return info;
}

// A label that several libraries on the path have does not find its plugin alone: the list
// shows those plugins as `ladspa:LIBRARY:LABEL`, the spec that does.
void qualify_shared_labels(std::vector<PluginInfo>& list) {
  std::map<std::string, int> seen;
  for (const auto& p : list)
    if (!p.label.empty()) ++seen[p.label];
  for (auto& p : list)
    if (!p.label.empty() && seen[p.label] > 1)
      p.label = fmt::format("ladspa:{}:{}", fs::path(p.library).filename().string(), p.label.substr(7));
}

}  // namespace

bool ladspa_available() noexcept { return true; }

std::shared_ptr<const HostedFactory> load_ladspa_stage(const std::string& path, const std::string& label,
                                                       const Controls& controls, const std::string& where) {
  const Found f = find_plugin(path, label, where);
  auto st = std::make_shared<LadspaStage>();
  st->model = model_of(f.lib->path, copy_of(f.desc));
  st->model.lib = f.lib, st->model.desc = f.desc;
  if (!st->model.why_not.empty()) throw InputError(fmt::format("{}: {} {}", where, st->model.id, st->model.why_not));
  for (const auto& p : st->model.ports) st->values.push_back(p.kind == Kind::control_in ? fallback_value(p) : 0.0f);
  st->origin.assign(st->model.ports.size(), Origin::fallback);
  for (const auto& [k, v] : controls) apply_control(*st, k, v, where);
  return std::make_shared<LadspaFactory>(std::move(st));
}

// Each library is read apart (read_apart): none is loaded in this process.
std::vector<PluginInfo> list_ladspa_plugins() {
  std::vector<PluginInfo> out;
  for (const auto& file : library_files()) {
    const LibraryRead r = read_apart(file);
    if (!r.why.empty()) {
      PluginInfo broken;
      broken.api = "ladspa", broken.id = file, broken.library = file, broken.why_not = r.why;
      out.push_back(std::move(broken));
      continue;
    }
    for (const auto& c : r.plugins) out.push_back(info_of(model_of(file, c)));
  }
  qualify_shared_labels(out);
  return out;
}

PluginInfo describe_ladspa_plugin(const std::string& path, const std::string& label, const std::string& where) {
  const Resolved r = resolve(path, label, where);
  return info_of(model_of(r.file, r.copy));
}

#else  // built without ladspa.h: the same interface, answering that LADSPA is not hosted

namespace {
constexpr const char* kNoLadspa =
    "this chunkscope was built without LADSPA hosting (ladspa.h not found; install ladspa-sdk)";
}

bool ladspa_available() noexcept { return false; }

std::shared_ptr<const HostedFactory> load_ladspa_stage(const std::string&, const std::string&,
                                                       const std::vector<std::pair<std::string, std::string>>&,
                                                       const std::string& where) {
  throw InputError(fmt::format("{}: {}", where, kNoLadspa));
}

std::vector<PluginInfo> list_ladspa_plugins() { return {}; }

PluginInfo describe_ladspa_plugin(const std::string&, const std::string&, const std::string& where) {
  throw InputError(fmt::format("{}: {}", where, kNoLadspa));
}

#endif

}  // namespace chunkscope
