#include "src/chain_spec.hpp"

#include <algorithm>

#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "src/errors.hpp"
#include "src/hosted_faust.hpp"

namespace chunkscope {
namespace {

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const auto p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos) break;
    start = p + 1;
  }
  return out;
}

bool ends_with_ci(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  auto tail = s.substr(s.size() - suffix.size());
  for (std::size_t i = 0; i < suffix.size(); ++i) {
    char a = tail[i], b = suffix[i];
    if (a >= 'A' && a <= 'Z') a = static_cast<char>(a - 'A' + 'a');
    if (a != b) return false;
  }
  return true;
}

struct KindName {
  const char* name;
  StageKind kind;
};
constexpr KindName kKinds[] = {
    {"lp", StageKind::lowpass},       {"hp", StageKind::highpass},
    {"bp", StageKind::bandpass},      {"bs", StageKind::bandstop},
    {"peak", StageKind::peak},        {"lowshelf", StageKind::lowshelf},
    {"highshelf", StageKind::highshelf}, {"notch", StageKind::notch},
    {"allpass", StageKind::allpass},  {"lp2", StageKind::lp2},
    {"hp2", StageKind::hp2},          {"bp2", StageKind::bp2},
    {"gain", StageKind::gain},        {"sos", StageKind::sos},
    {"spin", StageKind::spin},        {"sleep", StageKind::sleep},
    {"so", StageKind::so},            {"lv2", StageKind::lv2},
    {"ladspa", StageKind::ladspa},    {"faust", StageKind::faust},
};

// The stage name `name` was most likely meant to be: the same name in another case, a
// common long or "-f" form (lowpass, lpf, hpf, bandpass, ...), or a known name one edit away.
std::string closest_name(std::string_view name) {
  std::string low;
  for (char c : name) low += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  static const std::pair<const char*, const char*> kAliases[] = {
      {"lowpass", "lp"}, {"highpass", "hp"}, {"bandpass", "bp"}, {"bandstop", "bs"}, {"lpf", "lp"}, {"hpf", "hp"},
      {"bpf", "bp"},     {"bsf", "bs"},      {"eq", "peak"},     {"peq", "peak"},   {"shelf", "lowshelf"}};
  for (const auto& [alias, to] : kAliases)
    if (low == alias) return to;
  auto one_edit = [](std::string_view a, std::string_view b) {
    if (a.size() > b.size()) std::swap(a, b);
    if (b.size() - a.size() > 1) return false;
    std::size_t i = 0;
    while (i < a.size() && a[i] == b[i]) ++i;
    if (a.size() == b.size()) return a.substr(i + 1) == b.substr(i + 1);  // one substitution
    return a.substr(i) == b.substr(i + 1);                                  // one insertion
  };
  for (const auto& k : kKinds)
    if (low == k.name || (low.size() > 1 && one_edit(low, k.name))) return k.name;
  return "";
}

std::string known_names() {
  std::string s;
  for (const auto& k : kKinds) {
    if (!s.empty()) s += ", ";
    s += k.name;
  }
  return s;
}

}  // namespace

std::string stage_kind_names() { return known_names(); }

std::string chain_spec_help() {
  return "stages joined by '|', each KIND:ARGS[:key=value...], e.g. 'hp:80:4 | lp:12k:8'; kinds: " + known_names() +
         " (so: your library, lv2: and ladspa: installed plugins; `chunkscope plugins` lists those; " +
         (faust_available() ? "faust: a Faust program, compiled by libfaust)"
                            : "faust: not in this build, built without the Faust headers; install faust-common)");
}

const char* stage_kind_label(StageKind k) {
  switch (k) {
    case StageKind::lowpass: return "Butterworth lowpass";
    case StageKind::highpass: return "Butterworth highpass";
    case StageKind::bandpass: return "Butterworth bandpass";
    case StageKind::bandstop: return "Butterworth bandstop";
    case StageKind::peak: return "cookbook peaking EQ";
    case StageKind::lowshelf: return "cookbook low shelf";
    case StageKind::highshelf: return "cookbook high shelf";
    case StageKind::notch: return "cookbook notch";
    case StageKind::allpass: return "cookbook allpass";
    case StageKind::lp2: return "cookbook 2nd-order lowpass";
    case StageKind::hp2: return "cookbook 2nd-order highpass";
    case StageKind::bp2: return "cookbook 2nd-order bandpass (0 dB peak)";
    case StageKind::gain: return "gain";
    case StageKind::sos: return "SOS file";
    case StageKind::spin: return "calibration busy-wait";
    case StageKind::sleep: return "calibration sleep";
    case StageKind::so: return "hosted code (so:)";
    case StageKind::lv2: return "LV2 plugin, hosted";
    case StageKind::ladspa: return "LADSPA plugin, hosted";
    case StageKind::faust: return "Faust program, compiled and hosted";
  }
  return "?";
}

const char* stage_name(StageKind k) {
  for (const auto& e : kKinds)
    if (e.kind == k) return e.name;
  return "?";
}

bool is_iir(StageKind k) { return k != StageKind::spin && k != StageKind::sleep && !is_hosted(k); }

bool is_hosted(StageKind k) {
  return k == StageKind::so || k == StageKind::lv2 || k == StageKind::ladspa || k == StageKind::faust;
}

double parse_number(std::string_view s, std::string_view what) {
  s = trim(s);
  if (s.empty()) throw InputError(fmt::format("{}: missing value", what));
  std::string_view body = s;
  if (!body.empty() && body.front() == '+') body.remove_prefix(1);
  double v = 0;
  const auto* first = body.data();
  const auto* last = body.data() + body.size();
  auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec == std::errc::result_out_of_range)
    throw InputError(fmt::format("{}: '{}' is out of range", what, s));
  if (ec != std::errc() || ptr != last)
    throw InputError(fmt::format("{}: '{}' is not a number", what, s));
  if (!std::isfinite(v)) throw InputError(fmt::format("{}: '{}' is not a finite number", what, s));
  return v;
}

double parse_frequency(std::string_view s, std::string_view what) {
  s = trim(s);
  double scale = 1.0;
  std::string_view num = s;
  if (ends_with_ci(num, "khz")) {
    scale = 1000.0;
    num.remove_suffix(3);
  } else if (ends_with_ci(num, "hz")) {
    num.remove_suffix(2);
  } else if (ends_with_ci(num, "k")) {
    scale = 1000.0;
    num.remove_suffix(1);
  }
  const double f = parse_number(num, what) * scale;
  if (!std::isfinite(f)) throw InputError(fmt::format("{}: '{}' is out of range", what, s));  // e.g. 1e306k
  return f;
}

std::int64_t parse_duration_ns(std::string_view s, std::string_view what) {
  s = trim(s);
  struct Unit {
    const char* suffix;
    double ns;
  };
  // Longest suffixes first so "ms" is not read as "s".
  constexpr Unit units[] = {{"ns", 1.0}, {"us", 1e3}, {"\xC2\xB5s", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  for (const auto& u : units) {
    if (ends_with_ci(s, u.suffix)) {
      std::string_view num = s.substr(0, s.size() - std::char_traits<char>::length(u.suffix));
      const double v = parse_number(num, what);
      if (v < 0) throw InputError(fmt::format("{}: '{}' is negative", what, s));
      const double ns = v * u.ns;
      if (ns > 3600e9) throw InputError(fmt::format("{}: '{}' is longer than an hour", what, s));
      return static_cast<std::int64_t>(std::llround(ns));
    }
  }
  if (s.empty()) throw InputError(fmt::format("{}: missing duration", what));
  throw InputError(fmt::format("{}: '{}' needs a unit (ns, us or µs, ms, s), e.g. 250us or 1.5ms", what, s));
}

namespace {

struct Tokens {
  std::vector<std::string_view> positional;
  std::map<std::string, std::string_view, std::less<>> keys;
};

Tokens tokenize(std::string_view stage, const std::string& where) {
  Tokens t;
  auto parts = split(stage, ':');
  for (std::size_t i = 1; i < parts.size(); ++i) {
    auto p = trim(parts[i]);
    if (p.empty()) throw InputError(fmt::format("{}: empty argument {}", where, i));
    const auto eq = p.find('=');
    if (eq == std::string_view::npos) {
      if (!t.keys.empty())
        throw InputError(fmt::format("{}: positional argument '{}' after key=value arguments", where, p));
      t.positional.push_back(p);
    } else {
      std::string key(trim(p.substr(0, eq)));
      auto val = trim(p.substr(eq + 1));
      if (key.empty()) throw InputError(fmt::format("{}: '{}' has no key before '='", where, p));
      if (val.empty()) throw InputError(fmt::format("{}: key '{}' has no value", where, key));
      if (!t.keys.emplace(key, val).second)
        throw InputError(fmt::format("{}: key '{}' given twice", where, key));
    }
  }
  return t;
}

void expect_positional(const Tokens& t, std::size_t min, std::size_t max, const std::string& where,
                       const char* usage) {
  if (t.positional.size() < min)
    throw InputError(fmt::format("{}: missing argument (usage: {})", where, usage));
  if (t.positional.size() > max)
    throw InputError(fmt::format("{}: too many arguments (usage: {})", where, usage));
}

void expect_keys(const Tokens& t, std::initializer_list<const char*> allowed, const std::string& where,
                 const char* usage) {
  for (const auto& [k, v] : t.keys) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) throw InputError(fmt::format("{}: unknown key '{}' (usage: {})", where, k, usage));
  }
}

int parse_order(std::string_view s, const std::string& where) {
  const double v = parse_number(s, where + ": order");
  if (v != std::floor(v)) throw InputError(fmt::format("{}: order '{}' is not an integer", where, s));
  if (v < 1 || v > 16) throw InputError(fmt::format("{}: order {} is out of range 1..16", where, s));
  return static_cast<int>(v);
}

double parse_positive_freq(std::string_view s, const std::string& where, const char* name) {
  const double f = parse_frequency(s, fmt::format("{}: {}", where, name));
  if (f <= 0) throw InputError(fmt::format("{}: {} {} Hz must be above 0", where, name, f));
  return f;
}

double parse_q(const Tokens& t, const std::string& where) {
  auto it = t.keys.find("q");
  if (it == t.keys.end()) return 0;
  const double q = parse_number(it->second, where + ": q");
  if (q <= 0) throw InputError(fmt::format("{}: q={} must be above 0", where, it->second));
  return q;
}

// How a hosted stage's keys are written: identifiers; identifiers or a LADSPA port's index;
// or a Faust control's label or path.
enum class Keys { ident, index, faust };

// A parameter field of a hosted stage: a key of letters, digits, '_', '-' and '.' (not
// starting with a digit, unless Keys::index: a LADSPA port's index), '=', a value without '/'.
// Keys::faust also takes '/' in the key (a control's path, "/comp/ratio") and a key starting
// with a digit, and any value for `opts` (compiler options may name folders).
bool is_param_field(std::string_view f, Keys keys = Keys::ident) {
  const auto eq = f.find('=');
  if (eq == 0 || eq == std::string_view::npos) return false;
  const auto key = trim(f.substr(0, eq));
  if (key.empty()) return false;
  const bool faust = keys == Keys::faust;
  const bool ident = std::all_of(key.begin(), key.end(), [faust](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.' || (faust && c == '/');
  });
  if (faust && key == "opts") return true;
  const bool digit_first = key[0] >= '0' && key[0] <= '9';
  return ident && (keys != Keys::ident || !digit_first) && f.substr(eq + 1).find('/') == std::string_view::npos;
}

// A hosted stage's text after "name:": the leading fields (joined by ':' again, so a path or
// a URI keeps its colons) and the trailing `key=value` fields, which go into st.params.
std::string split_hosted(StageSpec& st, std::string_view text, const std::string& where, Keys keys) {
  const auto body = text.substr(text.find(':') == std::string_view::npos ? text.size() : text.find(':') + 1);
  auto fields = split(body, ':');
  std::size_t first_param = fields.size();
  while (first_param > 1 && is_param_field(trim(fields[first_param - 1]), keys)) --first_param;
  std::string head;
  for (std::size_t i = 0; i < first_param; ++i) head += (i ? ":" : "") + std::string(fields[i]);
  for (std::size_t i = first_param; i < fields.size(); ++i) {
    const auto f = trim(fields[i]);
    const auto eq = f.find('=');
    std::string key(trim(f.substr(0, eq))), value(trim(f.substr(eq + 1)));
    for (const auto& kv : st.params)
      if (kv.first == key) throw InputError(fmt::format("{}: parameter '{}' given twice", where, key));
    st.params.emplace_back(std::move(key), std::move(value));
  }
  return std::string(trim(head));
}

// lv2:URI[:symbol=value...]: the URI (or a unique suffix of a URI or a name) keeps its ':'.
// ladspa:[LIBRARY:]LABEL[:port=value...]: the last leading field is the label.
void parse_plugin_stage(StageSpec& st, std::string_view text, const std::string& where) {
  const bool ladspa = st.kind == StageKind::ladspa;
  const std::string head = split_hosted(st, text, where, ladspa ? Keys::index : Keys::ident);
  const char* usage = ladspa ? "ladspa:[<library.so>:]<label>[:<port>=<value>...]"
                             : "lv2:<plugin URI or the end of one>[:<symbol>=<value>...]";
  if (head.empty()) throw InputError(fmt::format("{}: missing plugin (usage: {})", where, usage));
  if (!ladspa) {
    st.path = head;
    return;
  }
  // each side trimmed, as every field is: "ladspa:: lpf" is "ladspa::lpf"
  const auto colon = head.rfind(':');
  const std::string_view h(head);
  st.label = std::string(colon == std::string::npos ? h : trim(h.substr(colon + 1)));
  st.path = colon == std::string::npos ? std::string() : std::string(trim(h.substr(0, colon)));
  if (st.label.empty()) throw InputError(fmt::format("{}: missing plugin label (usage: {})", where, usage));
}

// so:PATH[:key=value...]: the fields after the path are the trailing ':'-separated fields
// that read `identifier=value` (no '/' in the value); everything before them is the path,
// ':' included.
void parse_so_stage(StageSpec& st, std::string_view text, const std::string& where) {
  const std::string path = split_hosted(st, text, where, Keys::ident);
  if (path.empty())
    throw InputError(fmt::format("{}: missing library (usage: so:<library.so>[:key=value...])", where));
  st.path = path;
}

// faust:PROGRAM.dsp[:control=value...][:opts=...]: as so:, the keys being the program's
// control labels or paths (with '/'), and `opts`/`backend` (hosted_faust.hpp).
void parse_faust_stage(StageSpec& st, std::string_view text, const std::string& where) {
  const std::string path = split_hosted(st, text, where, Keys::faust);
  if (path.empty())
    throw InputError(fmt::format(
        "{}: missing program (usage: faust:<program.dsp>[:<control>=<value>...][:opts=<compiler options>])", where));
  st.path = path;
}

StageSpec parse_stage(std::string_view raw, std::size_t index) {
  StageSpec st;
  const auto text = trim(raw);
  st.text = std::string(text);
  const std::string where = fmt::format("chain stage {} '{}'", index + 1, text);
  if (text.empty()) throw InputError(fmt::format("chain stage {} is empty", index + 1));
  const auto name = trim(text.substr(0, text.find(':')));
  bool found = false;
  for (const auto& k : kKinds) {
    if (name == k.name) {
      st.kind = k.kind;
      found = true;
    }
  }
  if (!found) {
    const std::string guess = closest_name(name);
    throw InputError(fmt::format("{}: unknown stage '{}'{} (known: {})", where, name,
                                 guess.empty() ? "" : fmt::format("; did you mean '{}'?", guess), known_names()));
  }

  if (st.kind == StageKind::sos) {
    // The path is everything after "sos:" so that it may contain ':'.
    const auto path = trim(text.substr(text.find(':') == std::string_view::npos ? text.size() : text.find(':') + 1));
    if (path.empty()) throw InputError(fmt::format("{}: missing file (usage: sos:<file>)", where));
    st.path = std::string(path);
    return st;
  }

  if (st.kind == StageKind::so) {
    parse_so_stage(st, text, where);
    return st;
  }
  if (st.kind == StageKind::faust) {
    parse_faust_stage(st, text, where);
    return st;
  }
  if (st.kind == StageKind::lv2 || st.kind == StageKind::ladspa) {
    parse_plugin_stage(st, text, where);
    return st;
  }

  const Tokens t = tokenize(text, where);
  switch (st.kind) {
    case StageKind::lowpass:
    case StageKind::highpass: {
      const char* usage = st.kind == StageKind::lowpass ? "lp:<cutoff>[:<order>]" : "hp:<cutoff>[:<order>]";
      expect_positional(t, 1, 2, where, usage);
      expect_keys(t, {"order"}, where, usage);
      st.freqs = {parse_positive_freq(t.positional[0], where, "cutoff")};
      st.order = 2;
      if (t.positional.size() == 2) st.order = parse_order(t.positional[1], where);
      if (auto it = t.keys.find("order"); it != t.keys.end()) {
        if (t.positional.size() == 2) throw InputError(fmt::format("{}: order given twice", where));
        st.order = parse_order(it->second, where);
      }
      break;
    }
    case StageKind::bandpass:
    case StageKind::bandstop: {
      const char* usage = st.kind == StageKind::bandpass ? "bp:<low>:<high>[:<order>]" : "bs:<low>:<high>[:<order>]";
      expect_positional(t, 2, 3, where, usage);
      expect_keys(t, {"order"}, where, usage);
      const double lo = parse_positive_freq(t.positional[0], where, "low edge");
      const double hi = parse_positive_freq(t.positional[1], where, "high edge");
      if (!(lo < hi))
        throw InputError(fmt::format("{}: band edges out of order ({} Hz is not below {} Hz)", where, lo, hi));
      st.freqs = {lo, hi};
      st.order = 2;
      if (t.positional.size() == 3) st.order = parse_order(t.positional[2], where);
      if (auto it = t.keys.find("order"); it != t.keys.end()) {
        if (t.positional.size() == 3) throw InputError(fmt::format("{}: order given twice", where));
        st.order = parse_order(it->second, where);
      }
      break;
    }
    case StageKind::peak:
    case StageKind::lowshelf:
    case StageKind::highshelf: {
      const char* usage = st.kind == StageKind::peak ? "peak:<f0>:gain=<dB>[:q=<Q>]"
                                                     : "lowshelf|highshelf:<f0>:gain=<dB>[:q=<Q>|:s=<S>]";
      expect_positional(t, 1, 1, where, usage);
      if (st.kind == StageKind::peak)
        expect_keys(t, {"q", "gain"}, where, usage);
      else
        expect_keys(t, {"q", "gain", "s"}, where, usage);
      st.freqs = {parse_positive_freq(t.positional[0], where, "f0")};
      st.q = parse_q(t, where);
      auto g = t.keys.find("gain");
      if (g == t.keys.end()) throw InputError(fmt::format("{}: missing gain=<dB> (usage: {})", where, usage));
      std::string_view gv = g->second;  // "6", "6dB" or "-3 db", as gain:<dB> takes it
      if (ends_with_ci(gv, "db")) gv.remove_suffix(2);
      st.gain_db = parse_number(gv, where + ": gain");
      st.has_gain = true;
      if (auto s = t.keys.find("s"); s != t.keys.end()) {
        if (st.q != 0) throw InputError(fmt::format("{}: give q= or s=, not both", where));
        st.slope = parse_number(s->second, where + ": s");
        if (st.slope <= 0) throw InputError(fmt::format("{}: s={} must be above 0", where, s->second));
      }
      break;
    }
    case StageKind::notch:
    case StageKind::allpass:
    case StageKind::lp2:
    case StageKind::hp2:
    case StageKind::bp2: {
      const auto usage = fmt::format("{}:<f0>[:q=<Q>]", stage_name(st.kind));
      expect_positional(t, 1, 1, where, usage.c_str());
      expect_keys(t, {"q"}, where, usage.c_str());
      st.freqs = {parse_positive_freq(t.positional[0], where, "f0")};
      st.q = parse_q(t, where);
      break;
    }
    case StageKind::gain: {
      expect_positional(t, 1, 1, where, "gain:<dB>");
      expect_keys(t, {}, where, "gain:<dB>");
      std::string_view v = t.positional[0];
      if (ends_with_ci(v, "db")) v.remove_suffix(2);
      st.gain_db = parse_number(v, where + ": gain");
      st.has_gain = true;
      if (std::fabs(st.gain_db) > 200)
        throw InputError(fmt::format("{}: gain {} dB is outside -200..200 dB", where, st.gain_db));
      break;
    }
    case StageKind::spin:
    case StageKind::sleep: {
      const auto usage = fmt::format("{}:<time>[:every=<N>]", stage_name(st.kind));
      expect_positional(t, 1, 1, where, usage.c_str());
      expect_keys(t, {"every"}, where, usage.c_str());
      st.time_ns = parse_duration_ns(t.positional[0], where + ": time");
      if (auto e = t.keys.find("every"); e != t.keys.end()) {
        const double n = parse_number(e->second, where + ": every");
        if (n < 1 || n != std::floor(n) || n > 1e9)
          throw InputError(fmt::format("{}: every={} must be a whole number of chunks, 1 or more", where, e->second));
        st.every = static_cast<std::uint32_t>(n);
      }
      break;
    }
    case StageKind::sos:
    case StageKind::so:
    case StageKind::lv2:
    case StageKind::ladspa:
    case StageKind::faust: break;
  }
  return st;
}

}  // namespace

ChainSpec parse_chain(std::string_view text) {
  ChainSpec c;
  c.text = std::string(trim(text));
  if (c.text.empty()) throw InputError("chain: the spec is empty (example: 'hp:80:4 | lp:12000:8')");
  auto parts = split(c.text, '|');
  for (std::size_t i = 0; i < parts.size(); ++i) c.stages.push_back(parse_stage(parts[i], i));
  return c;
}

std::vector<std::string> chain_files(std::string_view text) {
  std::vector<std::string> files;
  if (trim(text).empty()) return files;
  for (const auto& st : parse_chain(text).stages)
    if (st.kind == StageKind::sos) files.push_back(st.path);
  return files;
}

}  // namespace chunkscope
