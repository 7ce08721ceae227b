#include "src/options.hpp"

#include <cctype>
#include <cmath>
#include <fmt/format.h>
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

const char* short_chunk_name(bool recapture) { return recapture ? "recapture" : "eager"; }

bool parse_short_chunk(const std::string& s, const char* what) {
  if (s == "eager") return false;
  if (s == "recapture") return true;
  throw InputError(fmt::format("{}: '{}' is not eager or recapture", what, s));
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
// the default's.
class CommandLine {
 public:
  explicit CommandLine(std::string head) : text_(std::move(head)) {}
  void word(const std::string& w) { text_ += " " + shell_quote(w); }
  void flag(const char* name, bool given) {
    if (given) text_ += fmt::format(" {}", name);
  }
  void text(const char* name, const std::string& v, const std::string& def) {
    if (v != def) text_ += fmt::format(" {} {}", name, shell_quote(v));
  }
  void number(const char* name, double v, double def) {
    if (v != def) text_ += fmt::format(" {} {}", name, number_text(v));
  }
  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

// The flags every stream command shares, in the order the rerun hints have always used.
void stream_flags(CommandLine& c, const StreamOptions& o, bool device) {
  const StreamOptions d;
  c.text("--chain", o.chain, d.chain);
  c.number("--chunk", o.chunk, d.chunk);
  if (!device) c.text("--dtype", dtype_name(o.dtype), dtype_name(d.dtype));
  c.flag("--no-fuse", !o.fuse);
  c.text("--backend", backend_name(o.backend.backend), backend_name(d.backend.backend));
  c.text("--mode", cuda_mode_name(o.backend.cuda.mode), cuda_mode_name(d.backend.cuda.mode));
  c.text("--gpu-timing", on_off(o.backend.cuda.gpu_timing), on_off(d.backend.cuda.gpu_timing));
  c.text("--short-chunk", short_chunk_name(o.backend.cuda.recapture_on_shape_change),
         short_chunk_name(d.backend.cuda.recapture_on_shape_change));
  if (!device && !same_number(o.speed, d.speed)) c.text("--speed", o.speed, d.speed);
  c.text("--margin", o.margin, d.margin);
  c.number("--queue-depth", o.queue_depth, d.queue_depth);
  c.number("--warmup", static_cast<double>(o.warmup), static_cast<double>(d.warmup));
  c.number("--series-limit", static_cast<double>(o.series_limit), static_cast<double>(d.series_limit));
  if (!device) c.text("--output", o.output, d.output);
  c.text("--json", o.json_path, d.json_path);
  c.text("--hgrm", o.hgrm_dir, d.hgrm_dir);
  c.text("--trace", o.trace_path, d.trace_path);
  c.text("--report-dir", o.report_dir, d.report_dir);
  c.number("--trace-limit", static_cast<double>(o.trace_capacity), static_cast<double>(d.trace_capacity));
  c.flag("--fail-on-miss", o.fail_on_miss);
  c.flag("--quiet", o.quiet);
}

}  // namespace

std::string stream_command_line(const std::string& command, const StreamOptions& o) {
  const StreamOptions d;
  CommandLine c("chunkscope " + command);
  if (command == "replay") {
    c.word(o.input.empty() ? std::string("FILE") : o.input);
    c.number("--rate", o.expect_rate, d.expect_rate);
    c.number("--channels", o.expect_channels, d.expect_channels);
  } else {
    c.text("--signal", o.signal, d.signal);
    if (!same_duration(o.duration, d.duration)) c.text("--duration", o.duration, d.duration);
    c.number("--channels", o.channels, d.channels);
    c.number("--rate", o.rate, d.rate);
  }
  stream_flags(c, o, false);
  return c.str();
}

std::string monitor_command_line(const MonitorOptions& o) {
  const MonitorOptions d;
  CommandLine c("chunkscope monitor");
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
