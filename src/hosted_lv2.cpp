#include "src/hosted_lv2.hpp"

#include <fmt/format.h>

#include "rt/alt_stack.hpp"
#include "src/errors.hpp"
#include "src/suggest.hpp"
#include "src/plugin_processor.hpp"

// LV2 is hosted when lilv's headers are on the include path (they live in their own folder,
// which the build adds with the library: pkg-config lilv-0), or when the build says so.
#if !defined(CHUNKSCOPE_WITH_LILV) && __has_include(<lilv/lilv.h>)
#define CHUNKSCOPE_WITH_LILV 1
#endif
#if defined(CHUNKSCOPE_WITH_LILV)
#include <lilv/lilv.h>
#include <lv2/atom/atom.h>
#include <lv2/buf-size/buf-size.h>
#include <lv2/core/lv2.h>
#include <lv2/log/log.h>
#include <lv2/midi/midi.h>
#include <lv2/options/options.h>
#include <lv2/parameters/parameters.h>
#include <lv2/patch/patch.h>
#include <lv2/presets/presets.h>
#include <lv2/resize-port/resize-port.h>
#include <lv2/state/state.h>
#include <lv2/time/time.h>
#include <lv2/urid/urid.h>
#include <lv2/worker/worker.h>
#include <dlfcn.h>
#include <semaphore.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <mutex>
#include <thread>
#endif

namespace chunkscope {

#if defined(CHUNKSCOPE_WITH_LILV)

namespace {

using Controls = std::vector<std::pair<std::string, std::string>>;

// Set on the thread that is inside a plugin's run() (process(), the latency probe): the
// worker queues requests and the log keeps messages in its ring only there.
__attribute__((tls_model("initial-exec"))) thread_local bool t_in_run = false;

struct RunScope {
  RunScope() noexcept { t_in_run = true; }
  ~RunScope() { t_in_run = false; }
  RunScope(const RunScope&) = delete;
  RunScope& operator=(const RunScope&) = delete;
};

// ------------------------------------------------------------------------------ URID map

// Design: open addressing over a fixed table of interned URI strings that are never freed, so
// the pointers unmap() returns stay valid and a lookup takes no lock: a slot goes once from
// null to its string (release here, acquire in the readers). Only a URI never seen before
// takes the mutex and allocates its copy. URID = slot + 1; 0 when the table is 3/4 full.
class UridTable {
 public:
  /// The URID of `uri` (0: none). [no-alloc, no-block] when mapped before; else [allocates, blocks]
  LV2_URID map(const char* uri) noexcept {
    if (!uri) return 0;
    const std::uint32_t h = hash(uri);
    for (std::uint32_t i = 0; i < kSlots; ++i) {
      const std::uint32_t s = (h + i) & (kSlots - 1);
      const char* p = slots_[s].load(std::memory_order_acquire);
      if (!p) return insert(uri, h);
      if (std::strcmp(p, uri) == 0) return s + 1;
    }
    return 0;
  }
  /// The URI of `id`, or nullptr. [no-alloc, no-block]
  const char* unmap(LV2_URID id) const noexcept {
    return id == 0 || id > kSlots ? nullptr : slots_[id - 1].load(std::memory_order_acquire);
  }

 private:
  static constexpr std::uint32_t kSlots = 1u << 13;
  static std::uint32_t hash(const char* s) noexcept {
    std::uint32_t h = 2166136261u;  // FNV-1a
    for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 16777619u;
    return h;
  }
  LV2_URID insert(const char* uri, std::uint32_t h) noexcept {
    std::lock_guard lock(mutex_);
    for (std::uint32_t i = 0; i < kSlots; ++i) {
      const std::uint32_t s = (h + i) & (kSlots - 1);
      const char* p = slots_[s].load(std::memory_order_relaxed);
      if (p && std::strcmp(p, uri) == 0) return s + 1;  // another thread was first
      if (p) continue;
      if (count_ >= kSlots / 4 * 3) return 0;
      char* copy = strdup(uri);
      if (!copy) return 0;
      slots_[s].store(copy, std::memory_order_release);
      ++count_;
      return s + 1;
    }
    return 0;
  }
  std::array<std::atomic<const char*>, kSlots> slots_{};
  std::mutex mutex_;
  std::uint32_t count_ = 0;
};

// Host callbacks a plugin calls (inside a marked foreign call): a fault in them is the host's.
LV2_URID urid_map(LV2_URID_Map_Handle h, const char* uri) {
  const HostCode host;
  return static_cast<UridTable*>(h)->map(uri);
}
const char* urid_unmap(LV2_URID_Unmap_Handle h, LV2_URID id) {
  const HostCode host;
  return static_cast<UridTable*>(h)->unmap(id);
}

// URIs mapped when the table is made, so that a plugin mapping one of them in run() finds it.
constexpr const char* kPremapped[] = {
    LV2_ATOM__Blank, LV2_ATOM__Bool, LV2_ATOM__Chunk, LV2_ATOM__Double, LV2_ATOM__Event, LV2_ATOM__Float,
    LV2_ATOM__Int, LV2_ATOM__Literal, LV2_ATOM__Long, LV2_ATOM__Object, LV2_ATOM__Path, LV2_ATOM__Property,
    LV2_ATOM__Resource, LV2_ATOM__Sequence, LV2_ATOM__Sound, LV2_ATOM__String, LV2_ATOM__Tuple, LV2_ATOM__URI,
    LV2_ATOM__URID, LV2_ATOM__Vector, LV2_ATOM__atomTransfer, LV2_ATOM__eventTransfer, LV2_ATOM__frameTime,
    LV2_MIDI__MidiEvent, LV2_TIME__Position, LV2_TIME__bar, LV2_TIME__barBeat, LV2_TIME__beat,
    LV2_TIME__beatUnit, LV2_TIME__beatsPerBar, LV2_TIME__beatsPerMinute, LV2_TIME__frame, LV2_TIME__speed,
    LV2_PATCH__Get, LV2_PATCH__Set, LV2_PATCH__Put, LV2_PATCH__Patch, LV2_PATCH__property, LV2_PATCH__value,
    LV2_PATCH__subject, LV2_PATCH__body, LV2_PATCH__add, LV2_PATCH__remove, LV2_PARAMETERS__sampleRate,
    LV2_BUF_SIZE__minBlockLength, LV2_BUF_SIZE__maxBlockLength, LV2_BUF_SIZE__nominalBlockLength,
    LV2_BUF_SIZE__sequenceSize, LV2_LOG__Error, LV2_LOG__Warning, LV2_LOG__Note, LV2_LOG__Trace,
    LV2_STATE__StateChanged, LV2_CORE__enabled, LV2_CORE__freeWheeling};

struct UridHost {
  UridTable table;
  LV2_URID_Map map{&table, urid_map};
  LV2_URID_Unmap unmap{&table, urid_unmap};
  UridHost() {
    for (const char* u : kPremapped) table.map(u);
  }
};

// The process-wide map: made on first use, never freed (unmap's strings live as long). [blocks once]
UridHost& urid_host() {
  static UridHost* h = new UridHost();
  return *h;
}

// The URIDs this host uses itself.
struct Urids {
  LV2_URID atom_Float, atom_Int, atom_Double, atom_Long, atom_Bool, atom_Sequence, atom_Chunk;
  LV2_URID param_sampleRate, bufsz_min, bufsz_max, bufsz_nominal, bufsz_sequence;
  LV2_URID log_Error, log_Warning;
};
const Urids& urids() {
  static const Urids u = [] {
    UridTable& t = urid_host().table;
    return Urids{t.map(LV2_ATOM__Float), t.map(LV2_ATOM__Int), t.map(LV2_ATOM__Double), t.map(LV2_ATOM__Long),
                 t.map(LV2_ATOM__Bool), t.map(LV2_ATOM__Sequence), t.map(LV2_ATOM__Chunk),
                 t.map(LV2_PARAMETERS__sampleRate), t.map(LV2_BUF_SIZE__minBlockLength),
                 t.map(LV2_BUF_SIZE__maxBlockLength), t.map(LV2_BUF_SIZE__nominalBlockLength),
                 t.map(LV2_BUF_SIZE__sequenceSize), t.map(LV2_LOG__Error), t.map(LV2_LOG__Warning)};
  }();
  return u;
}

// ---------------------------------------------------------------------------- the world

// One lilv world per process, loaded on first use and never freed: factories hold its
// plugins to the end. lilv is not thread-safe, and instantiating or freeing an instance
// touches the world's list of open libraries: every lilv call holds `mutex` (recursive: an
// instance that fails inside create() is freed while create() holds it).
struct Lv2World {
  LilvWorld* world = lilv_world_new();
  std::recursive_mutex mutex;
  LilvNode* uri(const char* u) { return lilv_new_uri(world, u); }
  LilvNode *audio = uri(LV2_CORE__AudioPort), *control = uri(LV2_CORE__ControlPort), *cv = uri(LV2_CORE__CVPort);
  LilvNode *atom = uri(LV2_ATOM__AtomPort), *input = uri(LV2_CORE__InputPort), *output = uri(LV2_CORE__OutputPort);
  LilvNode *optional = uri(LV2_CORE__connectionOptional), *sample_rate = uri(LV2_CORE__sampleRate);
  LilvNode *min_size = uri(LV2_RESIZE_PORT__minimumSize), *preset = uri(LV2_PRESETS__Preset);
  LilvNode *label = uri(LILV_NS_RDFS "label"), *required_option = uri(LV2_OPTIONS__requiredOption);
  LilvNode* default_state = uri(LV2_STATE__loadDefaultState);
  LilvNode *integer = uri(LV2_CORE__integer), *toggled = uri(LV2_CORE__toggled), *enumeration = uri(LV2_CORE__enumeration);
  Lv2World() {
    absolute_lv2_path();
    lilv_world_load_all(world);
  }
  // lilv takes LV2_PATH's folders as they are written, and a relative one makes it map an
  // invalid URI and crash: make each absolute (for this process) before it reads them.
  static void absolute_lv2_path() {
    const char* env = std::getenv("LV2_PATH");
    if (!env || !*env) return;
    std::string out, part;
    std::stringstream ss(env);
    while (std::getline(ss, part, ':')) {
      std::error_code ec;
      if (!part.empty() && part[0] != '/' && part[0] != '~') part = std::filesystem::absolute(part, ec).string();
      out += (out.empty() ? "" : ":") + part;
    }
    ::setenv("LV2_PATH", out.c_str(), 1);
  }
};

Lv2World& lv2_world() {
  static Lv2World* w = new Lv2World();
  return *w;
}
using WorldLock = std::lock_guard<std::recursive_mutex>;

struct NodeFree {
  void operator()(LilvNode* n) const noexcept { lilv_node_free(n); }
};
struct NodesFree {
  void operator()(LilvNodes* n) const noexcept { lilv_nodes_free(n); }
};
struct StateFree {
  void operator()(LilvState* s) const noexcept { lilv_state_free(s); }
};
using Node = std::unique_ptr<LilvNode, NodeFree>;
using Nodes = std::unique_ptr<LilvNodes, NodesFree>;
using State = std::unique_ptr<LilvState, StateFree>;

std::string text_of(const LilvNode* n) {
  const char* s = n ? lilv_node_as_string(n) : nullptr;
  return s ? s : "";
}
// A numeric literal as written in the plugin's data ("1.4", not 1.39999997), else NaN.
double number_of(const LilvNode* n) {
  if (n && (lilv_node_is_float(n) || lilv_node_is_int(n))) {
    const std::string t = text_of(n);
    double v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return ec == std::errc() && end == t.data() + t.size() ? v : lilv_node_as_float(n);
  }
  if (n && lilv_node_is_bool(n)) return lilv_node_as_bool(n) ? 1.0 : 0.0;
  return NAN;
}

// ------------------------------------------------------------------------ plugin model

enum class Kind { audio_in, audio_out, control_in, control_out, cv_in, cv_out, atom_in, atom_out, other };
const char* kind_name(Kind k) {
  static constexpr const char* names[] = {"audio_in", "audio_out", "control_in", "control_out", "cv_in",
                                          "cv_out",   "atom_in",   "atom_out",   "other"};
  return names[static_cast<int>(k)];
}
// "a control output", for messages.
const char* kind_words(Kind k) {
  static constexpr const char* words[] = {"an audio input", "an audio output", "a control input", "a control output",
                                          "a CV input",     "a CV output",     "an atom input",   "an atom output",
                                          "a port of a type chunkscope does not know"};
  return words[static_cast<int>(k)];
}
bool is_input(Kind k) { return k == Kind::audio_in || k == Kind::control_in || k == Kind::cv_in || k == Kind::atom_in; }

struct PortModel {
  std::string symbol, name, type;  // type: a class URI, for `other`
  Kind kind = Kind::other;
  double min = NAN, max = NAN, def = NAN;  // NaN: not given
  bool sample_rate = false, optional = false, latency = false;
  bool def_absolute = false;  // a sample-rate port's default outside [min, max]: in Hz, not a fraction
  std::uint32_t atom_size = 0;  // rsz:minimumSize
  // the values a control takes: lv2:integer, lv2:toggled (0 or 1), lv2:enumeration (one of
  // its scale points, value and label)
  bool integer = false, toggled = false, enumeration = false;
  std::vector<std::pair<double, std::string>> points;
};

// What chunkscope knows of a plugin, read once from lilv (world lock held).
struct PluginModel {
  const LilvPlugin* plugin = nullptr;
  std::string uri, name, library, label;
  std::vector<PortModel> ports;
  std::vector<std::string> required_features, presets;
  std::vector<std::uint32_t> audio_in, audio_out;  // port indices
  int latency_port = -1;
  bool default_state = false;  // lists state:loadDefaultState
  bool has_library = false;    // the library file exists (whether it loads is not known here)
  std::string why_not;         // empty: hostable on a chunk with a matching channel count, as far as lilv's data says
};

constexpr const char* kHostedFeatures[] = {
    LV2_URID__map,       LV2_URID__unmap,          LV2_OPTIONS__options,       LV2_BUF_SIZE__boundedBlockLength,
    LV2_BUF_SIZE__coarseBlockLength, LV2_WORKER__schedule, LV2_STATE__loadDefaultState, LV2_LOG__log,
    LV2_CORE__inPlaceBroken, LV2_CORE__isLive, LV2_CORE__hardRTCapable};
constexpr const char* kProvidedOptions[] = {LV2_PARAMETERS__sampleRate, LV2_BUF_SIZE__nominalBlockLength,
                                            LV2_BUF_SIZE__minBlockLength, LV2_BUF_SIZE__maxBlockLength,
                                            LV2_BUF_SIZE__sequenceSize};

template <std::size_t N>
bool listed(const char* const (&list)[N], const std::string& uri) {
  return std::any_of(std::begin(list), std::end(list), [&](const char* u) { return uri == u; });
}

Kind port_kind(Lv2World& w, const LilvPlugin* p, const LilvPort* port, std::string& type) {
  const bool in = lilv_port_is_a(p, port, w.input), out = lilv_port_is_a(p, port, w.output);
  const auto pick = [&](Kind i, Kind o) { return in ? i : o; };
  if (in == out) return Kind::other;  // neither or both: not a port chunkscope can connect
  if (lilv_port_is_a(p, port, w.audio)) return pick(Kind::audio_in, Kind::audio_out);
  if (lilv_port_is_a(p, port, w.control)) return pick(Kind::control_in, Kind::control_out);
  if (lilv_port_is_a(p, port, w.cv)) return pick(Kind::cv_in, Kind::cv_out);
  if (lilv_port_is_a(p, port, w.atom)) return pick(Kind::atom_in, Kind::atom_out);
  const LilvNodes* classes = lilv_port_get_classes(p, port);
  LILV_FOREACH (nodes, i, classes) {
    const LilvNode* c = lilv_nodes_get(classes, i);
    if (!lilv_node_equals(c, w.input) && !lilv_node_equals(c, w.output)) type = text_of(c);
  }
  return Kind::other;
}

// Which values a control input takes: its integer, toggled and enumeration properties and
// its scale points (sorted by value).
void read_values(Lv2World& w, const LilvPlugin* p, const LilvPort* port, PortModel& m) {
  m.integer = lilv_port_has_property(p, port, w.integer);
  m.toggled = lilv_port_has_property(p, port, w.toggled);
  m.enumeration = lilv_port_has_property(p, port, w.enumeration);
  if (LilvScalePoints* sp = lilv_port_get_scale_points(p, port)) {
    LILV_FOREACH (scale_points, i, sp) {
      const LilvScalePoint* pt = lilv_scale_points_get(sp, i);
      const double v = number_of(lilv_scale_point_get_value(pt));
      if (!std::isnan(v)) m.points.emplace_back(v, text_of(lilv_scale_point_get_label(pt)));
    }
    lilv_scale_points_free(sp);
  }
  std::sort(m.points.begin(), m.points.end());
}

PortModel port_model(Lv2World& w, const LilvPlugin* p, const LilvPort* port) {
  PortModel m;
  m.symbol = text_of(lilv_port_get_symbol(p, port));
  const Node name(lilv_port_get_name(p, port));
  m.name = text_of(name.get());
  m.kind = port_kind(w, p, port, m.type);
  LilvNode *def = nullptr, *lo = nullptr, *hi = nullptr;
  lilv_port_get_range(p, port, &def, &lo, &hi);
  m.def = number_of(def);
  m.min = number_of(lo);
  m.max = number_of(hi);
  lilv_node_free(def);
  lilv_node_free(lo);
  lilv_node_free(hi);
  m.sample_rate = lilv_port_has_property(p, port, w.sample_rate);
  // lv2:sampleRate scales the bounds; plugins converted from LADSPA (swh) also write defaults
  // in Hz (440 on a 0..0.4 port): a default that cannot be a fraction within them is taken as one
  m.def_absolute = m.sample_rate && !std::isnan(m.def) && (m.def < m.min || m.def > m.max);
  m.optional = lilv_port_has_property(p, port, w.optional);
  if (m.kind == Kind::control_in) read_values(w, p, port, m);
  if (m.kind == Kind::atom_in || m.kind == Kind::atom_out) {
    const Node size(lilv_port_get(p, port, w.min_size));
    if (size && lilv_node_is_int(size.get()))
      m.atom_size = static_cast<std::uint32_t>(std::max(0, lilv_node_as_int(size.get())));
  }
  return m;
}


// Why the plugin's library cannot be loaded in this process (dlopen's reason), or "": a
// library with an undefined symbol is refused here rather than at instantiation. Runs the
// library's constructors and destructors.
std::string library_problem(const std::string& path) {
  void* h = nullptr;
  {
    HostedPhase in("loading", path.c_str());  // the library's constructors run here
    h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!h) {
    const char* e = dlerror();
    return fmt::format("has a library that cannot be loaded ({})", one_line(e ? e : "dlopen failed"));
  }
  const bool entry = dlsym(h, "lv2_descriptor") || dlsym(h, "lv2_lib_descriptor");
  {
    HostedPhase in("unloading", path.c_str());  // and its destructors here
    dlclose(h);
  }
  return entry ? "" : fmt::format("has a library without an lv2_descriptor symbol ({})", path);
}

// library_problem() in a child process: a constructor that crashes, exits or hangs ends only
// the child, and says so.
std::string library_problem_apart(const std::string& path) {
  const ChildOutcome c = run_in_child([&] { return library_problem(path); });
  if (!c.finished)
    return fmt::format("has a library that cannot be loaded (the process that loaded it to check it {})", c.failure);
  return c.answer;
}

// Why chunkscope cannot host the plugin whatever the chunk's channels, or "": from lilv's
// data alone (the library file exists; it is not loaded).
std::string why_not_hosted(Lv2World& w, const PluginModel& m) {
  if (!lilv_plugin_verify(m.plugin)) return "has an invalid description (lilv_plugin_verify failed)";
  if (!m.has_library)
    return fmt::format("has no library ({} is missing)", m.library.empty() ? "lv2:binary" : m.library);
  for (const auto& f : m.required_features)
    if (!listed(kHostedFeatures, f)) return fmt::format("requires feature {}, which chunkscope does not host", f);
  const Nodes options(lilv_plugin_get_value(m.plugin, w.required_option));
  LILV_FOREACH (nodes, i, options.get()) {
    const std::string o = text_of(lilv_nodes_get(options.get(), i));
    if (!listed(kProvidedOptions, o)) return fmt::format("requires option {}, which chunkscope does not provide", o);
  }
  for (const auto& p : m.ports)
    if (p.kind == Kind::other && !p.optional)
      return fmt::format("has port '{}' of type {}, which chunkscope does not host", p.symbol,
                         p.type.empty() ? "unknown" : p.type);
  if (m.audio_in.empty() || m.audio_in.size() != m.audio_out.size())
    return fmt::format("has {} and {}; chunkscope runs plugins with as many audio outputs as inputs",
                       plural(m.audio_in.size(), "audio input"), plural(m.audio_out.size(), "output"));
  return "";
}

std::string label_of(const std::string& uri) {
  auto cut = uri.find_last_of('/');
  if (cut == std::string::npos) cut = uri.find_last_of(':');  // a URN
  const std::string tail = cut == std::string::npos || cut + 1 == uri.size() ? uri : uri.substr(cut + 1);
  return "lv2:" + tail;
}

std::string library_of(const LilvPlugin* p) {
  char* path = lilv_file_uri_parse(text_of(lilv_plugin_get_library_uri(p)).c_str(), nullptr);
  std::string s = path ? path : "";
  lilv_free(path);
  return s;
}

PluginModel model_of(Lv2World& w, const LilvPlugin* p) {
  PluginModel m;
  m.plugin = p;
  m.uri = text_of(lilv_plugin_get_uri(p));
  const Node name(lilv_plugin_get_name(p));
  m.name = text_of(name.get());
  m.library = library_of(p);
  m.label = label_of(m.uri);
  for (std::uint32_t i = 0; i < lilv_plugin_get_num_ports(p); ++i) {
    m.ports.push_back(port_model(w, p, lilv_plugin_get_port_by_index(p, i)));
    if (m.ports.back().kind == Kind::audio_in) m.audio_in.push_back(i);
    if (m.ports.back().kind == Kind::audio_out) m.audio_out.push_back(i);
  }
  if (lilv_plugin_has_latency(p)) {
    const std::uint32_t i = lilv_plugin_get_latency_port_index(p);
    if (i < m.ports.size() && m.ports[i].kind == Kind::control_out) {
      m.latency_port = static_cast<int>(i);
      m.ports[i].latency = true;
    }
  }
  const Nodes required(lilv_plugin_get_required_features(p));
  LILV_FOREACH (nodes, i, required.get()) m.required_features.push_back(text_of(lilv_nodes_get(required.get(), i)));
  const Nodes presets(lilv_plugin_get_related(p, w.preset));
  LILV_FOREACH (nodes, i, presets.get()) m.presets.push_back(text_of(lilv_nodes_get(presets.get(), i)));
  std::sort(m.presets.begin(), m.presets.end());
  m.default_state = lilv_plugin_has_feature(p, w.default_state);
  std::error_code ec;
  m.has_library = !m.library.empty() && std::filesystem::exists(m.library, ec);
  m.why_not = why_not_hosted(w, m);
  return m;
}

// ------------------------------------------------------------------- finding a plugin

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Whether `suffix` ends `s` and starts at a boundary: the start of `s`, after a character that
// is not a letter or digit, or with such a character itself ("#stereo", "fil4#stereo").
bool boundary_suffix(const std::string& s, const std::string& suffix) {
  if (suffix.empty() || suffix.size() > s.size() || s.compare(s.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  const std::size_t at = s.size() - suffix.size();
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  return at == 0 || !alnum(s[at - 1]) || !alnum(suffix[0]);
}

// "a, b, c" of at most `most` items, then "and N more".
std::string some_of(const std::vector<std::string>& items, std::size_t most = 10) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < most; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > most) out += fmt::format(" and {} more", items.size() - most);
  return out;
}

const LilvPlugin* find_plugin(Lv2World& w, const std::string& id, const std::string& where) {
  const LilvPlugins* all = lilv_world_get_all_plugins(w.world);
  // a URI has a scheme ("http:", "urn:"): anything else would make serd complain on stderr
  const auto colon = id.find(':');
  const bool uri_like = colon != std::string::npos && colon > 0 && id.find_first_of("/#") > colon;
  const Node uri(uri_like ? lilv_new_uri(w.world, id.c_str()) : nullptr);
  if (const LilvPlugin* exact = uri ? lilv_plugins_get_by_uri(all, uri.get()) : nullptr) return exact;
  const std::string id_lower = lower(id);
  std::vector<const LilvPlugin*> hits, labelled;
  std::vector<std::string> names, labels;
  LILV_FOREACH (plugins, i, all) {
    const LilvPlugin* p = lilv_plugins_get(all, i);
    if (lilv_plugin_is_replaced(p)) continue;
    const std::string u = text_of(lilv_plugin_get_uri(p));
    const Node name(lilv_plugin_get_name(p));
    labels.push_back(label_of(u));
    if (labels.back() == "lv2:" + id) labelled.push_back(p);  // the label `plugins` and reports show
    if (boundary_suffix(u, id) || boundary_suffix(lower(text_of(name.get())), id_lower)) {
      hits.push_back(p);
      names.push_back(u);
    }
  }
  if (labelled.size() == 1) return labelled[0];  // a stage's own label wins over name suffixes
  if (hits.size() == 1) return hits[0];
  if (hits.empty())
    throw InputError(fmt::format("{}: no installed LV2 plugin matches '{}'{} (give a plugin URI, or the end of one or "
                                 "of a plugin's name; `chunkscope plugins` lists them)",
                                 where, one_line(id), did_you_mean("lv2:" + id, labels)));
  std::sort(names.begin(), names.end());
  throw InputError(fmt::format("{}: '{}' is ambiguous: it matches {} LV2 plugins: {}", where, one_line(id),
                               names.size(), some_of(names)));
}

// ------------------------------------------------------------------------ the stage

enum class Origin : std::uint8_t { fallback, user, preset };

// A loaded, checked stage: shared by its factory, processors and instances.
struct Lv2Stage {
  PluginModel model;
  std::vector<double> values;  // per port: control inputs' start values (a sample-rate port's default as a fraction)
  std::vector<Origin> origin;  // per port: where the value came from
  std::vector<State> states;   // restored on each instance in order (default state, preset)
};

// The port's value before any control is given: its default, else its minimum, else 0.
double fallback_value(const PortModel& p) {
  if (!std::isnan(p.def)) return p.def;
  if (!std::isnan(p.min) && p.min > 0) return p.min;
  if (!std::isnan(p.max) && p.max < 0) return p.max;
  return 0.0;
}

// lilv_state_emit_port_values' callback: a preset's value for a control input.
void set_preset_value(const char* symbol, void* data, const void* value, std::uint32_t size, std::uint32_t type) {
  auto* st = static_cast<Lv2Stage*>(data);
  const Urids& u = urids();
  double v = NAN;
  if (type == u.atom_Float && size == sizeof(float)) v = *static_cast<const float*>(value);
  if (type == u.atom_Double && size == sizeof(double)) v = *static_cast<const double*>(value);
  if ((type == u.atom_Int || type == u.atom_Bool) && size == sizeof(std::int32_t))
    v = *static_cast<const std::int32_t*>(value);
  if (type == u.atom_Long && size == sizeof(std::int64_t))
    v = static_cast<double>(*static_cast<const std::int64_t*>(value));
  for (std::size_t i = 0; i < st->model.ports.size(); ++i)
    if (st->model.ports[i].symbol == symbol && st->model.ports[i].kind == Kind::control_in && !std::isnan(v)) {
      st->values[i] = v;
      st->origin[i] = Origin::preset;
    }
}

// Reads `node`'s state (a preset, or the plugin's default state), applies its port values and
// keeps it for the instances when it holds more than port values.
bool take_state(Lv2World& w, Lv2Stage& st, const LilvNode* node) {
  State s(lilv_state_new_from_world(w.world, &urid_host().map, node));
  if (!s) return false;
  lilv_state_emit_port_values(s.get(), set_preset_value, &st);
  if (lilv_state_get_num_properties(s.get()) > 0) st.states.push_back(std::move(s));
  return true;
}

std::string preset_label(Lv2World& w, const LilvNode* preset) {
  lilv_world_load_resource(w.world, preset);
  const Node label(lilv_world_get(w.world, preset, w.label, nullptr));
  return text_of(label.get());
}

void apply_preset(Lv2World& w, Lv2Stage& st, const std::string& want, const std::string& where) {
  std::vector<std::string> hits, labels;
  for (const auto& uri : st.model.presets) {
    const Node node(lilv_new_uri(w.world, uri.c_str()));
    const std::string label = preset_label(w, node.get());
    labels.push_back(label.empty() ? uri : fmt::format("'{}' ({})", label, uri.substr(uri.find_last_of("/#") + 1)));
    if (uri == want || (!label.empty() && lower(label) == lower(want))) {
      hits = {uri};  // an exact URI or label wins over suffixes
      break;
    }
    if (boundary_suffix(uri, want) || boundary_suffix(lower(label), lower(want))) hits.push_back(uri);
  }
  if (hits.empty())
    throw InputError(st.model.presets.empty()
                         ? fmt::format("{}: preset '{}': {} has no presets", where, one_line(want), st.model.uri)
                         : fmt::format("{}: no preset '{}' (presets: {})", where, one_line(want), some_of(labels, 20)));
  if (hits.size() > 1)
    throw InputError(fmt::format("{}: preset '{}' is ambiguous: it matches {}", where, one_line(want), some_of(hits)));
  const Node node(lilv_new_uri(w.world, hits[0].c_str()));
  if (!take_state(w, st, node.get()))
    throw InputError(fmt::format("{}: preset {} could not be read", where, hits[0]));
}

std::vector<std::string> control_names(const PluginModel& m) {
  std::vector<std::string> s;
  for (const auto& p : m.ports)
    if (p.kind == Kind::control_in) s.push_back(p.symbol);
  return s;
}

std::string control_symbols(const PluginModel& m) {
  const auto s = control_names(m);
  return s.empty() ? "it has none" : "controls: " + some_of(s, 64);
}

// `text` as a plain decimal number (locale-independent), or throws naming the control.
double parse_control(const std::string& text, const std::string& symbol, const std::string& where) {
  const char* b = text.data() + (!text.empty() && text[0] == '+');
  const char* e = text.data() + text.size();
  double v = 0;
  const auto [end, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || end != e || b == e || !std::isfinite(v))
    throw InputError(fmt::format("{}: control '{}': '{}' is not a number (plain decimal numbers only, e.g. 0.5, -12, 2e3)",
                                 where, symbol, one_line(text)));
  return v;
}

// "[min, max]" for an error message, scaled by `rate` when given.
std::string range_text(const PortModel& p, double rate = 1) {
  const auto bound = [&](double v) { return std::isnan(v) ? std::string("unbounded") : fmt::format("{}", v * rate); };
  return fmt::format("[{}, {}]", bound(p.min), bound(p.max));
}
bool in_range(const PortModel& p, double v, double rate = 1) {
  return !((!std::isnan(p.min) && v < p.min * rate) || (!std::isnan(p.max) && v > p.max * rate));
}

// Why `v` is not a value the control takes ("is not one of its values: 0 (Off), 1 (On)"),
// or "" when it is: an enumeration takes its scale points, a toggle 0 or 1, an integer
// control whole numbers.
std::string not_a_value(const PortModel& p, double v) {
  if (p.enumeration && !p.points.empty()) {
    for (const auto& pt : p.points)
      if (pt.first == v) return "";
    std::vector<std::string> values;
    for (const auto& [x, label] : p.points) values.push_back(label.empty() ? fmt::format("{}", x) : fmt::format("{} ({})", x, label));
    return "is not one of its values: " + some_of(values, 32);
  }
  if (p.toggled) return v == 0 || v == 1 ? "" : "is not one of its values: 0 (off), 1 (on)";
  if (p.integer) return v == std::floor(v) ? "" : "is not a whole number (an integer control)";
  return "";
}

void apply_control(Lv2Stage& st, const std::string& key, const std::string& text, const std::string& where) {
  const auto& ports = st.model.ports;
  const auto it = std::find_if(ports.begin(), ports.end(), [&](const PortModel& p) { return p.symbol == key; });
  if (it == ports.end())
    throw InputError(fmt::format("{}: unknown control '{}'{} ({})", where, one_line(key),
                                 did_you_mean(key, control_names(st.model)), control_symbols(st.model)));
  if (it->kind != Kind::control_in)
    throw InputError(fmt::format("{}: '{}' is {}, not a control input ({})", where, key, kind_words(it->kind),
                                 control_symbols(st.model)));
  const auto i = static_cast<std::size_t>(it - ports.begin());
  if (st.origin[i] == Origin::user) throw InputError(fmt::format("{}: control '{}' is given twice", where, key));
  const double v = parse_control(text, key, where);
  if (!it->sample_rate && !in_range(*it, v))
    throw InputError(
        fmt::format("{}: control '{}': {} is outside its range {}", where, key, one_line(text), range_text(*it)));
  if (const std::string no = not_a_value(*it, v); !no.empty())
    throw InputError(fmt::format("{}: control '{}': {} {}", where, key, one_line(text), no));
  st.values[i] = v;
  st.origin[i] = Origin::user;
}

std::shared_ptr<Lv2Stage> make_stage(Lv2World& w, const LilvPlugin* p, const Controls& controls, const std::string& where) {
  auto st = std::make_shared<Lv2Stage>();
  st->model = model_of(w, p);
  if (st->model.why_not.empty()) st->model.why_not = library_problem(st->model.library);  // it is loaded to run anyway
  if (!st->model.why_not.empty()) throw InputError(fmt::format("{}: {} {}", where, st->model.uri, st->model.why_not));
  for (const auto& port : st->model.ports) st->values.push_back(port.kind == Kind::control_in ? fallback_value(port) : 0.0);
  st->origin.assign(st->model.ports.size(), Origin::fallback);
  if (st->model.default_state) {
    const Node uri(lilv_new_uri(w.world, st->model.uri.c_str()));
    take_state(w, *st, uri.get());
  }
  for (const auto& [k, v] : controls)
    if (k == "preset") apply_preset(w, *st, v, where);
  for (const auto& [k, v] : controls)
    if (k != "preset") apply_control(*st, k, v, where);
  return st;
}

// ------------------------------------------------------------------- worker plumbing

// Design: a single-producer single-consumer ring of messages (a 32-bit size, then the bytes)
// over a power-of-two byte array. Positions are free-running counters, each on its own cache
// line; the producer publishes with a release store of `head_`, the consumer frees with one
// of `tail_`. push and pop: [no-alloc, no-block].
class ByteRing {
 public:
  explicit ByteRing(std::size_t capacity) : buf_(capacity), mask_(capacity - 1) {}
  bool push(std::uint32_t size, const void* data) noexcept {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    const std::size_t tail = tail_.load(std::memory_order_acquire);
    if (buf_.size() - (head - tail) < sizeof size + size) return false;
    copy_in(head, &size, sizeof size);
    copy_in(head + sizeof size, data, size);
    head_.store(head + sizeof size + size, std::memory_order_release);
    return true;
  }
  /// The next message into `out` (room for the ring's capacity). False when empty.
  bool pop(void* out, std::uint32_t& size) noexcept {
    const std::size_t tail = tail_.load(std::memory_order_relaxed);
    const std::size_t head = head_.load(std::memory_order_acquire);
    if (head - tail < sizeof size) return false;
    copy_out(tail, &size, sizeof size);
    copy_out(tail + sizeof size, out, size);
    tail_.store(tail + sizeof size + size, std::memory_order_release);
    return true;
  }
  /// Drops every message queued (the consumer's side).
  void clear() noexcept { tail_.store(head_.load(std::memory_order_acquire), std::memory_order_release); }

 private:
  void copy_in(std::size_t at, const void* src, std::size_t n) noexcept {
    const std::size_t i = at & mask_, first = std::min(n, buf_.size() - i);
    std::memcpy(buf_.data() + i, src, first);
    std::memcpy(buf_.data(), static_cast<const unsigned char*>(src) + first, n - first);
  }
  void copy_out(std::size_t at, void* dst, std::size_t n) const noexcept {
    const std::size_t i = at & mask_, first = std::min(n, buf_.size() - i);
    std::memcpy(dst, buf_.data() + i, first);
    std::memcpy(static_cast<unsigned char*>(dst) + first, buf_.data(), n - first);
  }
  std::vector<unsigned char> buf_;
  std::size_t mask_;
  alignas(64) std::atomic<std::size_t> head_{0};  // written by the producer
  alignas(64) std::atomic<std::size_t> tail_{0};  // written by the consumer
};

// An 8-byte-aligned scratch buffer for a message (LV2 messages are often cast to structs).
using Scratch = std::vector<std::uint64_t>;
constexpr std::size_t kRingBytes = 1u << 16;

// Design: the LV2 worker of one instance. run() schedules with schedule(), which copies the
// request into `requests_` and posts the semaphore (sem_post neither locks nor blocks); the
// thread started by start() takes requests one at a time and calls the plugin's work(), whose
// responses go into `responses_`; deliver() hands them to work_response() on the processor
// thread. work() never runs twice at once, nor beside the plugin's activate() or
// deactivate(): `work_mutex_` is held around it (the request taken from the ring under it),
// also when work is done at once outside run() (state restore, instantiation), and by
// quiesce() around a reset. So the rings' ends are each used by one side at a time: requests
// are pushed by the processor's side and popped under the mutex, responses pushed under the
// mutex and popped by the processor's side, whose calls (run, reset) never overlap.
class Worker {
 public:
  Worker() = default;
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() { stop(); }

  /// Starts the worker thread for `iface` on `handle`. [allocates, blocks]
  void start(const LV2_Worker_Interface* iface, LV2_Handle handle, const char* label) {
    requests_ = std::make_unique<ByteRing>(kRingBytes);
    responses_ = std::make_unique<ByteRing>(kRingBytes);
    work_buf_.assign(kRingBytes / sizeof(std::uint64_t), 0);
    response_buf_.assign(kRingBytes / sizeof(std::uint64_t), 0);
    sem_init(&sem_, 0, 0);
    iface_ = iface, handle_ = handle, label_ = label;
    thread_ = std::thread([this] { loop(); });
  }
  /// Stops and joins the thread. [blocks]
  void stop() noexcept {
    if (!thread_.joinable()) return;
    exit_.store(true, std::memory_order_release);
    sem_post(&sem_);
    thread_.join();
    sem_destroy(&sem_);
  }
  /// The plugin's schedule_work(). Inside run(): [no-alloc, no-block]; elsewhere the work is done now.
  LV2_Worker_Status schedule(std::uint32_t size, const void* data) noexcept {
    if (!iface_) return LV2_WORKER_ERR_UNKNOWN;
    if (!t_in_run) {
      const std::lock_guard hold(work_mutex_);
      work(size, data);
      return LV2_WORKER_SUCCESS;
    }
    if (!requests_->push(size, data)) return LV2_WORKER_ERR_NO_SPACE;
    sem_post(&sem_);
    return LV2_WORKER_SUCCESS;
  }
  /// Hands every queued response to the plugin. Processor's side. [no-alloc, no-block]
  void deliver() noexcept {
    if (!iface_ || !iface_->work_response) return;
    std::uint32_t size = 0;
    while (responses_->pop(response_buf_.data(), size)) {
      const ForeignCall call("work_response");
      iface_->work_response(handle_, size, response_buf_.data());
    }
  }
  /// The plugin's end_run(), if any. [no-alloc, no-block]
  void end_run() noexcept {
    if (!iface_ || !iface_->end_run) return;
    const ForeignCall call("end_run");
    iface_->end_run(handle_);
  }
  /// Runs `between` (deactivate, activate) with the worker held off, after finishing what was
  /// asked before: every queued request is worked on this thread and every response handed
  /// to the plugin (a response may ask for more work: a few passes), so nothing from before
  /// reaches the plugin after and nothing asked is lost. Processor's side, outside run().
  /// [blocks: waits for a work() under way; allocates as work() does]
  template <class Between>
  void quiesce(Between&& between) noexcept {
    const std::lock_guard hold(work_mutex_);
    if (iface_) finish_queued();
    between();
  }

 private:
  static constexpr int kFinishPasses = 8;
  void finish_queued() noexcept {
    std::uint32_t size = 0;
    for (int pass = 0; pass < kFinishPasses; ++pass) {
      bool any = false;
      for (; requests_->pop(work_buf_.data(), size); any = true) work(size, work_buf_.data());
      if (!iface_->work_response) responses_->clear();
      for (; responses_->pop(response_buf_.data(), size); any = true) {
        const ForeignCall call("work_response");
        iface_->work_response(handle_, size, response_buf_.data());
      }
      if (!any) return;
    }
    requests_->clear();  // a plugin that keeps asking: what it asks last is dropped
    responses_->clear();
  }
  void loop() noexcept {
    ensure_alt_stack();  // a fault handler runs even when work() overflowed this stack
    while (true) {
      while (sem_wait(&sem_) != 0 && errno == EINTR) {
      }
      if (exit_.load(std::memory_order_acquire)) return;
      const std::lock_guard hold(work_mutex_);
      std::uint32_t size = 0;
      if (requests_->pop(work_buf_.data(), size)) work(size, work_buf_.data());
    }
  }
  // The plugin's work(); `work_mutex_` held.
  void work(std::uint32_t size, const void* data) noexcept {
    HostedPhase in("worker", label_);
    iface_->work(handle_, &respond, this, size, data);
  }
  static LV2_Worker_Status respond(LV2_Worker_Respond_Handle h, std::uint32_t size, const void* data) {
    const HostCode host;
    auto* self = static_cast<Worker*>(h);
    return self->responses_->push(size, data) ? LV2_WORKER_SUCCESS : LV2_WORKER_ERR_NO_SPACE;
  }

  const LV2_Worker_Interface* iface_ = nullptr;
  LV2_Handle handle_ = nullptr;
  const char* label_ = "";
  std::unique_ptr<ByteRing> requests_, responses_;
  Scratch work_buf_, response_buf_;
  std::recursive_mutex work_mutex_;  // recursive: a response handed over in quiesce() may ask for work at once
  sem_t sem_{};
  std::atomic<bool> exit_{false};
  std::thread thread_;
};

// log:log messages kept from run(), printed when the instance goes. Written only by the
// processor thread, read after it is done.
struct LogRing {
  static constexpr int kSlots = 32;
  std::array<std::array<char, 240>, kSlots> text{};
  std::array<bool, kSlots> error{};
  int used = 0, dropped = 0;
};

// ----------------------------------------------------------------------- an instance

// One plugin instance with its buffers, features and worker. Its ports stay connected to
// its own buffers, except the audio inputs, which run() connects to the chunk's channels.
class Lv2Instance {
 public:
  Lv2Instance(std::shared_ptr<const Lv2Stage> st, const HostedShape& shape, const std::vector<float>& values);
  ~Lv2Instance();
  Lv2Instance(const Lv2Instance&) = delete;
  Lv2Instance& operator=(const Lv2Instance&) = delete;
  /// Instantiates, restores the stage's states, connects and activates. World lock held. [allocates, blocks]
  bool open(double rate, std::string& error);
  /// One cycle of `frames` frames on `in` (one buffer per audio input). [no-alloc, no-block]
  void run(float* const* in, int frames) noexcept;
  /// Deactivates and activates: the plugin clears its state. The worker is held off and what
  /// it was asked before is finished first (Worker::quiesce). [blocks]
  void restart() noexcept;
  /// Audio output k's buffer after run(). [no-alloc, no-block]
  const float* output(std::size_t k) const noexcept { return bufs_[st_->model.audio_out[k]].data(); }
  /// A control port's value. [no-alloc, no-block]
  float value(std::size_t port) const noexcept { return values_[port]; }

 private:
  void set_features(const HostedShape& shape);
  void connect_ports() noexcept;
  void prepare_atoms() noexcept;
  int log(LV2_URID type, const char* fmt, va_list ap) noexcept;
  void flush_log() noexcept;
  // host callbacks a plugin calls (inside a marked foreign call): a fault in them is the host's
  static int log_printf(LV2_Log_Handle h, LV2_URID type, const char* fmt, ...);
  static int log_vprintf(LV2_Log_Handle h, LV2_URID type, const char* fmt, va_list ap) {
    const HostCode host;
    return static_cast<Lv2Instance*>(h)->log(type, fmt, ap);
  }
  static LV2_Worker_Status schedule(LV2_Worker_Schedule_Handle h, std::uint32_t size, const void* data) {
    const HostCode host;
    return static_cast<Lv2Instance*>(h)->worker_.schedule(size, data);
  }

  std::shared_ptr<const Lv2Stage> st_;
  const char* label_;
  LilvInstance* inst_ = nullptr;
  bool active_ = false;
  std::vector<float> values_;             // per port: control values
  std::vector<std::vector<float>> bufs_;  // per port: audio outputs, CV ports
  std::vector<Scratch> atoms_;            // per port: atom sequences
  std::uint32_t atom_bytes_ = 8192;
  Worker worker_;
  LogRing log_;
  float rate_ = 0;
  std::int32_t nominal_ = 0, min_len_ = 1, max_len_ = 0, seq_size_ = 0;
  std::array<LV2_Options_Option, 6> options_{};
  LV2_Worker_Schedule schedule_{this, &Lv2Instance::schedule};
  LV2_Log_Log log_iface_{this, &Lv2Instance::log_printf, &Lv2Instance::log_vprintf};
  std::array<LV2_Feature, 8> feature_{};
  std::array<const LV2_Feature*, 9> features_{};
};

Lv2Instance::Lv2Instance(std::shared_ptr<const Lv2Stage> st, const HostedShape& shape, const std::vector<float>& values)
    : st_(std::move(st)), label_(st_->model.label.c_str()), values_(values) {
  const auto& ports = st_->model.ports;
  for (const auto& p : ports) atom_bytes_ = std::max(atom_bytes_, (p.atom_size + 7) / 8 * 8);
  bufs_.resize(ports.size());
  atoms_.resize(ports.size());
  const auto frames = static_cast<std::size_t>(shape.max_frames);
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const Kind k = ports[i].kind;
    if (k == Kind::audio_out || k == Kind::cv_in || k == Kind::cv_out) bufs_[i].assign(frames, 0.0f);
    if (k == Kind::atom_in || k == Kind::atom_out) atoms_[i].assign(atom_bytes_ / sizeof(std::uint64_t), 0);
  }
  set_features(shape);
}

void Lv2Instance::set_features(const HostedShape& shape) {
  const Urids& u = urids();
  rate_ = static_cast<float>(shape.rate);
  nominal_ = max_len_ = shape.max_frames;
  seq_size_ = static_cast<std::int32_t>(atom_bytes_);
  const auto opt = [](LV2_URID key, LV2_URID type, const void* v, std::uint32_t size) {
    return LV2_Options_Option{LV2_OPTIONS_INSTANCE, 0, key, size, type, v};
  };
  options_ = {opt(u.param_sampleRate, u.atom_Float, &rate_, sizeof rate_),
              opt(u.bufsz_nominal, u.atom_Int, &nominal_, sizeof nominal_),
              opt(u.bufsz_min, u.atom_Int, &min_len_, sizeof min_len_),
              opt(u.bufsz_max, u.atom_Int, &max_len_, sizeof max_len_),
              opt(u.bufsz_sequence, u.atom_Int, &seq_size_, sizeof seq_size_),
              LV2_Options_Option{LV2_OPTIONS_INSTANCE, 0, 0, 0, 0, nullptr}};
  UridHost& h = urid_host();
  feature_ = {LV2_Feature{LV2_URID__map, &h.map},
              {LV2_URID__unmap, &h.unmap},
              {LV2_OPTIONS__options, options_.data()},
              {LV2_BUF_SIZE__boundedBlockLength, nullptr},
              {LV2_BUF_SIZE__coarseBlockLength, nullptr},
              {LV2_WORKER__schedule, &schedule_},
              {LV2_LOG__log, &log_iface_},
              {LV2_STATE__loadDefaultState, nullptr}};
  for (std::size_t i = 0; i < feature_.size(); ++i) features_[i] = &feature_[i];
  features_.back() = nullptr;
}

bool Lv2Instance::open(double rate, std::string& error) {
  {
    HostedPhase in("instantiate", label_);
    inst_ = lilv_plugin_instantiate(st_->model.plugin, rate, features_.data());
  }
  if (!inst_) {
    error = "instantiate failed (the plugin or lilv may have said why above)";
    return false;
  }
  const LV2_Worker_Interface* wi = nullptr;
  {
    HostedPhase in("extension_data", label_);
    wi = static_cast<const LV2_Worker_Interface*>(lilv_instance_get_extension_data(inst_, LV2_WORKER__interface));
  }
  if (wi && wi->work) worker_.start(wi, lilv_instance_get_handle(inst_), label_);
  for (const auto& s : st_->states) {
    HostedPhase in("restore", label_);
    lilv_state_restore(s.get(), inst_, nullptr, nullptr, 0, features_.data());
  }
  connect_ports();
  {
    HostedPhase in("activate", label_);
    lilv_instance_activate(inst_);
  }
  active_ = true;
  return true;
}

void Lv2Instance::connect_ports() noexcept {
  for (std::uint32_t i = 0; i < st_->model.ports.size(); ++i) {
    void* at = nullptr;
    switch (st_->model.ports[i].kind) {
      case Kind::control_in:
      case Kind::control_out: at = &values_[i]; break;
      case Kind::audio_out:
      case Kind::cv_in:
      case Kind::cv_out: at = bufs_[i].data(); break;
      case Kind::atom_in:
      case Kind::atom_out: at = atoms_[i].data(); break;
      case Kind::audio_in:  // run() connects it to the chunk
      case Kind::other: break;
    }
    HostedPhase in("connect_port", label_);
    lilv_instance_connect_port(inst_, i, at);
  }
}

// Input sequences empty, output sequences given their whole capacity.
void Lv2Instance::prepare_atoms() noexcept {
  const Urids& u = urids();
  for (std::size_t i = 0; i < atoms_.size(); ++i) {
    if (atoms_[i].empty()) continue;
    auto* seq = reinterpret_cast<LV2_Atom_Sequence*>(atoms_[i].data());
    if (is_input(st_->model.ports[i].kind)) {
      seq->atom = {static_cast<std::uint32_t>(sizeof(LV2_Atom_Sequence_Body)), u.atom_Sequence};
      seq->body = {0, 0};
    } else {
      seq->atom = {atom_bytes_ - static_cast<std::uint32_t>(sizeof(LV2_Atom)), u.atom_Chunk};
    }
  }
}

// Each call into the plugin is marked on its own (a ForeignCall: two thread-local stores);
// the atoms, the worker's rings and the caller's copies around them are chunkscope's.
void Lv2Instance::run(float* const* in, int frames) noexcept {
  prepare_atoms();
  worker_.deliver();
  const auto& audio_in = st_->model.audio_in;
  for (std::size_t k = 0; k < audio_in.size(); ++k) {
    const ForeignCall call("connect_port");
    lilv_instance_connect_port(inst_, audio_in[k], in[k]);
  }
  {
    const ForeignCall call("run");
    lilv_instance_run(inst_, static_cast<std::uint32_t>(frames));
  }
  worker_.end_run();
}

void Lv2Instance::restart() noexcept {
  worker_.quiesce([this] {
    {
      const ForeignCall call("deactivate");
      lilv_instance_deactivate(inst_);
    }
    const ForeignCall call("activate");
    lilv_instance_activate(inst_);
  });
}

Lv2Instance::~Lv2Instance() {
  worker_.stop();
  if (inst_) {
    if (active_) {
      HostedPhase in("deactivate", label_);
      lilv_instance_deactivate(inst_);
    }
    const WorldLock lock(lv2_world().mutex);
    HostedPhase in("cleanup", label_);  // the plugin's cleanup(), then its library's destructors when it is the last
    lilv_instance_free(inst_);
  }
  flush_log();
}

int Lv2Instance::log_printf(LV2_Log_Handle h, LV2_URID type, const char* fmt, ...) {
  const HostCode host;
  va_list ap;
  va_start(ap, fmt);
  const int n = static_cast<Lv2Instance*>(h)->log(type, fmt, ap);
  va_end(ap);
  return n;
}

// A plugin's log message as one line, its trailing newlines dropped.
std::string log_line(const char* text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return one_line(t);
}

// Errors and warnings only: at once to stderr off the processor thread, into the ring on it.
int Lv2Instance::log(LV2_URID type, const char* fmt, va_list ap) noexcept {
  const Urids& u = urids();
  if (type != u.log_Error && type != u.log_Warning) return 0;
  if (t_in_run) {
    if (log_.used == LogRing::kSlots) {
      ++log_.dropped;
      return 0;
    }
    auto& slot = log_.text[static_cast<std::size_t>(log_.used)];
    log_.error[static_cast<std::size_t>(log_.used++)] = type == u.log_Error;
    return std::vsnprintf(slot.data(), slot.size(), fmt, ap);
  }
  std::array<char, 512> buf{};
  const int n = std::vsnprintf(buf.data(), buf.size(), fmt, ap);
  std::fprintf(stderr, "%s: %s: %s\n", label_, type == u.log_Error ? "error" : "warning", log_line(buf.data()).c_str());
  return n;
}

void Lv2Instance::flush_log() noexcept {
  for (std::size_t i = 0; i < static_cast<std::size_t>(log_.used); ++i)
    std::fprintf(stderr, "%s: %s (in run): %s\n", label_, log_.error[i] ? "error" : "warning",
                 log_line(log_.text[i].data()).c_str());
  if (log_.dropped) std::fprintf(stderr, "%s: %d more log messages from run() dropped\n", label_, log_.dropped);
}

// ---------------------------------------------------------------- processor, factory

using Lv2Processor = PluginProcessor<Lv2Stage, Lv2Instance, RunScope>;

class Lv2Factory final : public HostedFactory {
 public:
  explicit Lv2Factory(std::shared_ptr<const Lv2Stage> st) : st_(std::move(st)) {}
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
    const WorldLock lock(lv2_world().mutex);
    std::vector<std::unique_ptr<Lv2Instance>> insts;
    for (int c = 0; c < (per_channel ? shape.channels : 1); ++c) {
      insts.push_back(std::make_unique<Lv2Instance>(st_, shape, values));
      if (!insts.back()->open(shape.rate, error)) return nullptr;
    }
    std::uint32_t latency = 0;
    if (m.latency_port >= 0 && !probe_latency(shape, values, latency, error)) return nullptr;
    return std::make_unique<Lv2Processor>(st_, shape.max_frames, per_channel, std::move(insts), latency);
  }
  // The latency port's value, on an instance of its own.
  bool probe_latency(const HostedShape& shape, const std::vector<float>& values, std::uint32_t& latency,
                     std::string& error) const {
    Lv2Instance probe(st_, shape, values);
    if (!probe.open(shape.rate, error)) return false;
    latency = chunkscope::probe_latency<RunScope>(probe, st_->model.audio_in.size(), shape.max_frames,
                                                  static_cast<std::size_t>(st_->model.latency_port), st_->model.label);
    return true;
  }

  // The start values at `rate`: sample-rate ports' defaults scaled, their given values checked.
  bool values_at(double rate, std::vector<float>& values, std::string& error) const {
    values.assign(st_->values.size(), 0.0f);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const PortModel& p = st_->model.ports[i];
      const double v = st_->values[i];
      const bool fraction = p.sample_rate && !p.def_absolute && st_->origin[i] == Origin::fallback;
      values[i] = static_cast<float>(fraction ? v * rate : v);
      if (p.kind == Kind::control_in && p.sample_rate && st_->origin[i] == Origin::user && !in_range(p, v, rate)) {
        error = fmt::format("control '{}': {} is outside its range {} at {} Hz", p.symbol, v, range_text(p, rate), rate);
        return false;
      }
    }
    return true;
  }
  std::shared_ptr<const Lv2Stage> st_;
};

PluginInfo info_of(const PluginModel& m) {
  PluginInfo info;
  info.api = "lv2", info.id = m.uri, info.name = m.name, info.library = m.library, info.label = m.label;
  info.runnable = m.why_not.empty();
  info.why_not = m.why_not;
  info.required_features = m.required_features;
  info.presets = m.presets;
  for (const auto& p : m.ports) {
    const bool ranged =
        p.kind == Kind::control_in || p.kind == Kind::control_out || p.kind == Kind::cv_in || p.kind == Kind::cv_out;
    const auto opt = [&](double v) { return std::isnan(v) || !ranged ? std::nullopt : std::optional<double>(v); };
    info.ports.push_back({p.symbol, p.name, kind_name(p.kind), opt(p.min), opt(p.max), opt(p.def), p.latency, p.sample_rate,
                          p.def_absolute});
  }
  return info;
}

}  // namespace

bool lv2_available() noexcept { return true; }

std::shared_ptr<const HostedFactory> load_lv2_stage(const std::string& id, const Controls& controls,
                                                    const std::string& where) {
  if (id.empty())
    throw InputError(fmt::format("{}: missing plugin (usage: lv2:<URI or its end>[:symbol=value...])", where));
  Lv2World& w = lv2_world();
  const WorldLock lock(w.mutex);
  const LilvPlugin* p = find_plugin(w, id, where);
  return std::make_shared<Lv2Factory>(make_stage(w, p, controls, where));
}

std::vector<PluginInfo> list_lv2_plugins() {
  Lv2World& w = lv2_world();
  const WorldLock lock(w.mutex);
  std::vector<PluginInfo> out;
  const LilvPlugins* all = lilv_world_get_all_plugins(w.world);
  LILV_FOREACH (plugins, i, all) {
    const LilvPlugin* p = lilv_plugins_get(all, i);
    if (!lilv_plugin_is_replaced(p)) out.push_back(info_of(model_of(w, p)));
  }
  std::sort(out.begin(), out.end(), [](const PluginInfo& a, const PluginInfo& b) { return a.id < b.id; });
  return out;
}

PluginInfo describe_lv2_plugin(const std::string& id, const std::string& where) {
  Lv2World& w = lv2_world();
  const WorldLock lock(w.mutex);
  PluginModel m = model_of(w, find_plugin(w, id, where));
  // the one library asked for is loaded, in a process of its own: whether it loads comes first
  if (m.has_library)
    if (std::string why = library_problem_apart(m.library); !why.empty()) m.why_not = std::move(why);
  return info_of(m);
}

#else  // built without lilv: the same interface, answering that LV2 is not hosted

namespace {
constexpr const char* kNoLv2 = "this chunkscope was built without LV2 hosting (lilv not found; install liblilv-dev)";
}

bool lv2_available() noexcept { return false; }

std::shared_ptr<const HostedFactory> load_lv2_stage(const std::string&,
                                                    const std::vector<std::pair<std::string, std::string>>&,
                                                    const std::string& where) {
  throw InputError(fmt::format("{}: {}", where, kNoLv2));
}

std::vector<PluginInfo> list_lv2_plugins() { return {}; }

PluginInfo describe_lv2_plugin(const std::string&, const std::string& where) {
  throw InputError(fmt::format("{}: {}", where, kNoLv2));
}

#endif

}  // namespace chunkscope
