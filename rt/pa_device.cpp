#include "rt/pa_device.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fmt/format.h>
#include <portaudio.h>
#include <unistd.h>

#include "rt/clock.hpp"

namespace chunkscope {

namespace {

// Runs f with stderr pointed at /dev/null: ALSA prints its configuration problems there
// when PortAudio probes it, which says nothing about the devices the user asked for.
template <class F>
auto quiet_stderr(F&& f) {
  fflush(stderr);
  const int saved = dup(2);
  const int devnull = ::open("/dev/null", O_WRONLY);
  if (devnull >= 0) dup2(devnull, 2);
  auto r = f();
  fflush(stderr);
  if (saved >= 0) {
    dup2(saved, 2);
    close(saved);
  }
  if (devnull >= 0) close(devnull);
  return r;
}

int pa_callback(const void* in, void* out, unsigned long frames, const PaStreamCallbackTimeInfo*,
                PaStreamCallbackFlags status, void* user) {
  return DeviceStream::gated_callback(*static_cast<DeviceStream::CallbackGate*>(user), in, out, frames, status);
}

// The gates of abandoned streams: a callback may still read them until the process ends.
std::atomic<DeviceStream::CallbackGate*> g_abandoned_gates{nullptr};

}  // namespace

PortAudioSession::PortAudioSession() {
  const PaError e = quiet_stderr([] { return Pa_Initialize(); });
  if (e != paNoError) {
    error_ = fmt::format("PortAudio: cannot initialise: {}", Pa_GetErrorText(e));
    return;
  }
  initialised_ = true;
}

PortAudioSession::~PortAudioSession() {
  if (initialised_ && !abandoned_) Pa_Terminate();
}

StderrSilencer::StderrSilencer() {
  fflush(stderr);
  saved_ = dup(2);
  const int devnull = ::open("/dev/null", O_WRONLY);
  if (devnull >= 0) {
    dup2(devnull, 2);
    close(devnull);
  }
}

void StderrSilencer::restore() noexcept {
  if (saved_ < 0) return;
  fflush(stderr);
  dup2(saved_, 2);
  close(saved_);
  saved_ = -1;
}

std::string PortAudioSession::version() const { return Pa_GetVersionText(); }

std::vector<std::string> PortAudioSession::host_apis() const {
  std::vector<std::string> v;
  for (int i = 0; i < Pa_GetHostApiCount(); ++i) v.emplace_back(Pa_GetHostApiInfo(i)->name);
  return v;
}

std::vector<DeviceInfo> PortAudioSession::devices() const {
  std::vector<DeviceInfo> v;
  const int n = Pa_GetDeviceCount();
  const int din = Pa_GetDefaultInputDevice(), dout = Pa_GetDefaultOutputDevice();
  for (int i = 0; i < n; ++i) {
    const PaDeviceInfo* d = Pa_GetDeviceInfo(i);
    if (!d) continue;
    DeviceInfo x;
    x.index = i;
    x.name = d->name;
    x.host_api = Pa_GetHostApiInfo(d->hostApi)->name;
    x.max_input = d->maxInputChannels;
    x.max_output = d->maxOutputChannels;
    x.default_rate = d->defaultSampleRate;
    x.low_input_latency = d->defaultLowInputLatency;
    x.high_input_latency = d->defaultHighInputLatency;
    x.low_output_latency = d->defaultLowOutputLatency;
    x.high_output_latency = d->defaultHighOutputLatency;
    x.default_input = i == din;
    x.default_output = i == dout;
    v.push_back(x);
  }
  return v;
}

DeviceStream::~DeviceStream() {
  stop();
  if (stream_) Pa_CloseStream(static_cast<PaStream*>(stream_));
  // gate_ goes with this object: a stream that was closed calls back no more, and an
  // abandoned one handed its gate to g_abandoned_gates
}

Status DeviceStream::open(const DeviceInfo& input, const DeviceInfo* output, double rate, int channels, int frames,
                          Engine& engine) {
  error_.clear();
  prepare_callback(engine, output != nullptr);
  PaStreamParameters ip{};
  ip.device = input.index;
  ip.channelCount = channels;
  ip.sampleFormat = paFloat32;
  ip.suggestedLatency = input.low_input_latency;
  PaStreamParameters op{};
  if (duplex_) {
    op.device = output->index;
    op.channelCount = channels;
    op.sampleFormat = paFloat32;
    op.suggestedLatency = output->low_output_latency;
  }
  PaStream* s = nullptr;
  gate_->out_frame_bytes = duplex_ ? static_cast<std::size_t>(channels) * sizeof(float) : 0;
  const PaError e = Pa_OpenStream(&s, &ip, duplex_ ? &op : nullptr, rate, static_cast<unsigned long>(frames),
                                  paClipOff | paDitherOff, pa_callback, gate_.get());
  if (e != paNoError) {
    error_ = fmt::format("audio device '{}' ({}): cannot open a {} ch stream at {} Hz with {} frames: {}", input.name,
                         input.host_api, channels, rate, frames, Pa_GetErrorText(e));
    return Status::device_error;
  }
  stream_ = s;
  if (const PaStreamInfo* si = Pa_GetStreamInfo(s)) {
    in_lat_ = si->inputLatency;
    out_lat_ = si->outputLatency;
    rate_ = si->sampleRate;
  }
  return Status::ok;
}

void DeviceStream::prepare_callback(Engine& engine, bool duplex) {
  engine_ = &engine;
  duplex_ = duplex;
  xruns_.clear();
  xruns_.reserve(4096);
  period_ = stats::LogHistogram();
  prev_cb_ns_ = 0;
  callbacks_.store(0);
  if (!gate_) gate_ = std::make_unique<CallbackGate>();
  gate_->stream = this;
}

Status DeviceStream::start() {
  const PaError e = Pa_StartStream(static_cast<PaStream*>(stream_));
  if (e != paNoError) {
    error_ = fmt::format("audio stream: cannot start: {}", Pa_GetErrorText(e));
    return Status::device_error;
  }
  started_ = true;
  return Status::ok;
}

void DeviceStream::stop() noexcept {
  if (stream_ && started_) {
    if (Pa_IsStreamActive(static_cast<PaStream*>(stream_)) == 1)
      Pa_StopStream(static_cast<PaStream*>(stream_));
    else
      Pa_AbortStream(static_cast<PaStream*>(stream_));
    started_ = false;
  }
}

void DeviceStream::abandon() noexcept {
  stream_ = nullptr;
  started_ = false;
  if (abandoned_ || !gate_) return;
  abandoned_ = true;
  CallbackGate* g = gate_.release();
  g->detached.store(true, std::memory_order_seq_cst);
  // a callback that counted itself in before the flag was raised finishes its work; one
  // that comes later sees the flag and touches nothing but the gate
  while (g->in_flight.load(std::memory_order_seq_cst) != 0) {
    const timespec pause{0, 100'000};
    nanosleep(&pause, nullptr);
  }
  CallbackGate* head = g_abandoned_gates.load(std::memory_order_relaxed);
  do {
    g->next_abandoned = head;
  } while (!g_abandoned_gates.compare_exchange_weak(head, g, std::memory_order_release, std::memory_order_relaxed));
}

int DeviceStream::gated_callback(CallbackGate& gate, const void* in, void* out, unsigned long frames,
                                 unsigned long status) noexcept {
  gate.in_flight.fetch_add(1, std::memory_order_seq_cst);
  int r = paContinue;
  if (!gate.detached.load(std::memory_order_seq_cst))
    r = gate.stream->on_callback(in, out, frames, status);
  else if (out && gate.out_frame_bytes > 0)
    std::memset(out, 0, static_cast<std::size_t>(frames) * gate.out_frame_bytes);
  gate.in_flight.fetch_sub(1, std::memory_order_release);
  return r;
}

bool DeviceStream::active() const noexcept { return stream_ && Pa_IsStreamActive(static_cast<PaStream*>(stream_)) == 1; }

int DeviceStream::on_callback(const void* in, void* out, unsigned long frames, unsigned long status) noexcept {
  const std::int64_t t = now_ns();
  const std::uint64_t k = callbacks_.load(std::memory_order_relaxed);
  if (prev_cb_ns_ != 0) period_.record(static_cast<std::uint64_t>(std::max<std::int64_t>(0, t - prev_cb_ns_)));
  prev_cb_ns_ = t;
  if (status) {
    if (status & paInputOverflow) ++in_over_;
    if (status & paOutputUnderflow) ++out_under_;
    if (status & paPrimingOutput) ++priming_;
    if (status & (paInputOverflow | paInputUnderflow | paOutputUnderflow | paOutputOverflow)) {
      if (xruns_.size() < xruns_.capacity()) xruns_.push_back({k, t, status});  // within reserved capacity
      xrun_count_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (in) engine_->push(in, static_cast<int>(frames), t);
  if (duplex_ && out) engine_->pull(out, static_cast<int>(frames), k);
  callbacks_.store(k + 1, std::memory_order_relaxed);
  last_cb_ns_.store(t, std::memory_order_relaxed);
  return paContinue;
}

}  // namespace chunkscope
