#include "src/options.hpp"

#include <cctype>
#include <cmath>
#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <unistd.h>
#include <utility>

#include "src/chain_spec.hpp"
#include "src/errors.hpp"

namespace chunkscope {

const char* on_off(bool on) { return on ? "on" : "off"; }

bool parse_on_off(const std::string& s, const char* what) {
  if (s == "on") return true;
  if (s == "off") return false;
  throw InputError(fmt::format("{}: '{}' is not on or off", what, s));
}

std::int64_t step_timeout_ns(const std::string& text, int chunk_frames, double rate) {
  if (text == "off") return 0;
  if (text == "auto") {
    const double hundred_chunks = rate > 0 ? 100.0 * chunk_frames / rate * 1e9 : 0;
    return std::max<std::int64_t>(2'000'000'000, std::llround(hundred_chunks));
  }
  const std::int64_t ns = parse_duration_ns(text, "--step-timeout");
  if (ns <= 0) throw InputError(fmt::format("--step-timeout: '{}' is not a positive duration (or auto, off)", text));
  return ns;
}

const char* short_chunk_name(bool recapture) { return recapture ? "recapture" : "eager"; }

bool parse_short_chunk(const std::string& s, const char* what) {
  if (s == "eager") return false;
  if (s == "recapture") return true;
  throw InputError(fmt::format("{}: '{}' is not eager or recapture", what, s));
}

WaitMode parse_wait_mode(const std::string& s, const char* what) {
  for (WaitMode m : {WaitMode::block, WaitMode::spin, WaitMode::hybrid})
    if (s == wait_mode_name(m)) return m;
  throw InputError(fmt::format("{}: '{}' is not block, spin or hybrid", what, s));
}

std::int64_t metrics_hold_ns(const StreamOptions& o) {
  if (o.metrics_hold == "0") return 0;
  const std::int64_t ns = parse_duration_ns(o.metrics_hold, "--metrics-hold");
  if (ns < 0 || ns > kMaxMetricsHoldNs)
    throw InputError(fmt::format("--metrics-hold: {} is out of range 0..24h", o.metrics_hold));
  if (ns > 0 && o.metrics_listen.empty())
    throw InputError("--metrics-hold: needs --metrics-listen (there is nothing to keep serving)");
  return ns;
}

std::int64_t baseline_ns(const StreamOptions& o) {
  if (o.baseline == "0") return 0;
  const std::int64_t ns = parse_duration_ns(o.baseline, "--baseline");
  if (ns < 0 || ns > kMaxBaselineNs)
    throw InputError(fmt::format("--baseline: {} is out of range 0..60s", o.baseline));
  return ns;
}

std::vector<int> parse_cpu_list(const std::string& text, int cpus_on_machine, const char* what) {
  auto bad = [&]() {
    return InputError(fmt::format("{}: '{}' is not a CPU list (numbers and ranges: 0,1 or 0-3)", what, text));
  };
  auto number = [&](const std::string& w) {
    int v = 0;
    const auto [ptr, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
    if (w.empty() || ec != std::errc() || ptr != w.data() + w.size() || v < 0) throw bad();
    return v;
  };
  auto exists = [&](int cpu) {
    if (cpu >= cpus_on_machine)
      throw InputError(fmt::format("{}: CPU {} does not exist (this machine has {})", what, cpu, cpus_on_machine));
  };
  std::vector<int> out;
  if (text.empty()) throw bad();
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    const std::size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string::npos) {
      lo = hi = number(item);
    } else {
      lo = number(item.substr(0, dash));
      hi = number(item.substr(dash + 1));
      if (hi < lo) throw bad();
    }
    exists(lo);
    exists(hi);
    for (int c = lo; c <= hi; ++c) {
      if (std::find(out.begin(), out.end(), c) != out.end())
        throw InputError(fmt::format("{}: CPU {} is listed twice in '{}'", what, c, text));
      out.push_back(c);
    }
    pos = end + 1;
  }
  return out;
}

ThreadPolicy thread_policy(const StreamOptions& o) {
  ThreadPolicy p;
  if (o.rt) {
    if (o.rt_priority < 1 || o.rt_priority > 99)
      throw InputError(fmt::format("--rt-priority: {} is out of range 1..99", o.rt_priority));
    p.rt_priority = o.rt_priority;
  }
  if (!o.cpus.empty()) {
    const long n = sysconf(_SC_NPROCESSORS_CONF);
    const auto list = parse_cpu_list(o.cpus, n > 0 ? static_cast<int>(n) : 1);
    if (o.inline_process) {
      // no processor thread: the source takes the first CPU, the sink the next; the
      // processor's slot (which the baseline's hand-off thread takes) is the sink's
      p.cpus[0] = list[0];
      p.cpus[1] = p.cpus[2] = list[1 % list.size()];
    } else {
      for (std::size_t i = 0; i < p.cpus.size(); ++i) p.cpus[i] = list[i % list.size()];
    }
  }
  return p;
}

std::string shell_quote(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '/' || c == '_' || c == '-' || c == ':' ||
          c == '=' || c == '%' || c == ','))
      plain = false;
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

namespace {

std::string number_text(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15)
    return fmt::format("{}", static_cast<long long>(std::llround(v)));
  return fmt::format("{:g}", v);
}

// Two texts of one option that mean the same value ("1" and "1.0", "5s" and "5000ms").
bool same_number(const std::string& a, const std::string& b) {
  if (a == b) return true;
  try {
    return parse_number(a, "") == parse_number(b, "");
  } catch (const InputError&) {
    return false;
  }
}
bool same_duration(const std::string& a, const std::string& b) {
  if (a == b) return true;
  try {
    return parse_duration_ns(a, "") == parse_duration_ns(b, "");
  } catch (const InputError&) {
    return false;
  }
}

// A command line built word by word; a flag is written only when its value differs from
// the default's. Besides the text, each flag is kept as one word, "--flag" or "--flag=value".
class CommandLine {
 public:
  explicit CommandLine(std::string head) : text_(std::move(head)) {}
  void word(const std::string& w) { text_ += " " + shell_quote(w); }
  void flag(const char* name, bool given) {
    if (!given) return;
    text_ += fmt::format(" {}", name);
    args_.emplace_back(name);
  }
  void text(const char* name, const std::string& v, const std::string& def) {
    if (v == def) return;
    text_ += fmt::format(" {} {}", name, shell_quote(v));
    args_.push_back(fmt::format("{}={}", name, v));
  }
  void number(const char* name, double v, double def) {
    if (v == def) return;
    text_ += fmt::format(" {} {}", name, number_text(v));
    args_.push_back(fmt::format("{}={}", name, number_text(v)));
  }
  const std::string& str() const { return text_; }
  const std::vector<std::string>& args() const { return args_; }

 private:
  std::string text_;
  std::vector<std::string> args_;
};

// The flags of a stream command that shape the experiment, in the order the rerun hints
// have always used.
void experiment_flags(CommandLine& c, const StreamOptions& o, bool device) {
  const StreamOptions d;
  c.text("--chain", o.chain, d.chain);
  c.number("--chunk", o.chunk, d.chunk);
  if (!device) c.text("--dtype", dtype_name(o.dtype), dtype_name(d.dtype));
  c.flag("--no-fuse", !o.fuse);
  c.text("--backend", backend_name(o.backend.backend), backend_name(d.backend.backend));
  c.text("--mode", cuda_mode_name(o.backend.cuda.mode), cuda_mode_name(d.backend.cuda.mode));
  c.text("--isa", isa_choice_name(o.backend.cpu_isa), isa_choice_name(d.backend.cpu_isa));
  c.text("--gpu-timing", on_off(o.backend.cuda.gpu_timing), on_off(d.backend.cuda.gpu_timing));
  c.text("--short-chunk", short_chunk_name(o.backend.cuda.recapture_on_shape_change),
         short_chunk_name(d.backend.cuda.recapture_on_shape_change));
  if (!device && !same_number(o.speed, d.speed)) c.text("--speed", o.speed, d.speed);
  c.text("--margin", o.margin, d.margin);
  c.number("--queue-depth", o.queue_depth, d.queue_depth);
  c.number("--warmup", static_cast<double>(o.warmup), static_cast<double>(d.warmup));
  if (!same_duration(o.baseline, d.baseline)) c.text("--baseline", o.baseline, d.baseline);
  c.flag("--rt", o.rt);
  if (o.rt) c.number("--rt-priority", o.rt_priority, d.rt_priority);
  c.text("--cpus", o.cpus, d.cpus);
  c.text("--wait", wait_mode_name(o.wait), wait_mode_name(d.wait));
  c.flag("--inline", o.inline_process);
  if (!o.ftz) c.text("--ftz", "off", "on");
  if (!o.switch_record) c.text("--switch-record", "off", "on");
  if (device) return;
  c.number("--streams", o.streams, d.streams);
  c.flag("--batch", o.batch);
  if (!o.batch && o.streams > 1 && !o.stagger) c.text("--stagger", "off", "on");
}

// The flags that say where the results go and how the command ends, not what it measures.
void output_flags(CommandLine& c, const StreamOptions& o, bool device) {
  const StreamOptions d;
  c.number("--series-limit", static_cast<double>(o.series_limit), static_cast<double>(d.series_limit));
  if (!device) c.text("--output", o.output, d.output);
  if (!device) c.text("--output-format", o.output_format, d.output_format);
  c.text("--json", o.json_path, d.json_path);
  c.text("--hgrm", o.hgrm_dir, d.hgrm_dir);
  c.text("--trace", o.trace_path, d.trace_path);
  c.text("--report-dir", o.report_dir, d.report_dir);
  if (!o.report_html) c.flag("--no-html", true);
  c.number("--trace-limit", static_cast<double>(o.trace_capacity), static_cast<double>(d.trace_capacity));
  c.flag("--fail-on-miss", o.fail_on_miss);
  c.flag("--fail-on-unsafe", o.fail_on_unsafe);
  c.flag("--quiet", o.quiet);
  c.text("--metrics-listen", o.metrics_listen, d.metrics_listen);
  if (!same_duration(o.metrics_hold, d.metrics_hold)) c.text("--metrics-hold", o.metrics_hold, d.metrics_hold);
}

void stream_flags(CommandLine& c, const StreamOptions& o, bool device) {
  experiment_flags(c, o, device);
  output_flags(c, o, device);
}

// The synthetic input's flags.
void synth_flags(CommandLine& c, const StreamOptions& o) {
  const StreamOptions d;
  c.text("--signal", o.signal, d.signal);
  if (!same_duration(o.duration, d.duration)) c.text("--duration", o.duration, d.duration);
  c.number("--channels", o.channels, d.channels);
  c.number("--rate", o.rate, d.rate);
}

std::string& program_name_storage() {
  static std::string name = "chunkscope";
  return name;
}

}  // namespace

std::string stream_command_line(const std::string& command, const StreamOptions& o) {
  const StreamOptions d;
  CommandLine c(program_name() + " " + command);
  if (command == "replay") {
    c.word(o.input.empty() ? std::string("FILE") : o.input);
    c.number("--rate", o.expect_rate, d.expect_rate);
    c.number("--channels", o.expect_channels, d.expect_channels);
  } else {
    synth_flags(c, o);
  }
  stream_flags(c, o, false);
  return c.str();
}

std::vector<std::string> experiment_args(const std::string& command, const StreamOptions& o) {
  CommandLine c(command);
  if (command == "synth") synth_flags(c, o);
  experiment_flags(c, o, command == "monitor");
  return c.args();
}

void set_program_name(const std::string& argv0) {
  program_name_storage() = argv0.find('/') == std::string::npos ? std::string("chunkscope") : shell_quote(argv0);
}

const std::string& program_name() { return program_name_storage(); }

std::string monitor_command_line(const MonitorOptions& o) {
  const MonitorOptions d;
  CommandLine c(program_name() + " monitor");
  c.text("--input", o.input, d.input);
  c.text("--output", o.output, d.output);
  c.number("--rate", o.rate, d.rate);
  c.number("--channels", o.channels, d.channels);
  c.text("--duration", o.duration, d.duration);
  c.number("--latency-chunks", o.latency_chunks, d.latency_chunks);
  c.flag("--live", o.live);
  stream_flags(c, o.stream, true);
  return c.str();
}

}  // namespace chunkscope
