#pragma once
// PortAudio devices: listing, selection, and a stream whose callback is the engine's
// source (and, full duplex, its sink).
//
// Design: the callback stamps the chunk with the monotonic clock on entry, counts
// PortAudio's status flags as xruns into a preallocated list, pushes the input into the
// engine and, full duplex, pulls the output that is due. It never blocks, allocates,
// locks or logs; everything it touches is sized in open().
//
// Giving up on a stream. When the audio server stalls or dies, the stream cannot be
// stopped or closed safely (PortAudio's JACK host aborts the process inside
// CleanUpStream when the server is gone), so abandon() leaves it running, and its
// callback thread may call again at any time, e.g. when a stopped server is continued.
// PortAudio therefore does not hand the callback this object but a small CallbackGate: an
// atomic `detached` flag and a count of callbacks in flight. The callback counts itself
// in, then reads the flag; abandon() raises the flag, then waits until the count is 0
// (both sides sequentially consistent, so either the callback sees the flag or abandon()
// sees the callback). From then on a callback touches nothing but the gate (it plays
// silence), so this object, the engine and the statistics may be read and freed. The gate
// itself is never freed once abandoned: it is kept on a process-wide list (reachable, so
// leak checkers do not report it), a few bytes per abandoned stream.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rt/engine.hpp"
#include "rt/stats/histogram.hpp"
#include "rt/status.hpp"

namespace chunkscope {

/// Points stderr at /dev/null until restore() or destruction: PortAudio's host APIs print
/// their internal diagnostics there (ALSA probing, JACK server loss), which would bury
/// chunkscope's own one-line error. [no-alloc, blocks] (dup2 and file opens)
class StderrSilencer {
 public:
  /// [no-alloc, blocks]
  StderrSilencer();
  /// [no-alloc, blocks]
  ~StderrSilencer() { restore(); }
  /// [no-alloc, blocks] Flushes stderr and points it back.
  void restore() noexcept;
  StderrSilencer(const StderrSilencer&) = delete;
  StderrSilencer& operator=(const StderrSilencer&) = delete;

 private:
  int saved_ = -1;
};

struct DeviceInfo {
  int index = -1;
  std::string name, host_api;
  int max_input = 0, max_output = 0;
  double default_rate = 0;
  double low_input_latency = 0, high_input_latency = 0, low_output_latency = 0, high_output_latency = 0;
  bool default_input = false, default_output = false;
};

/// Initialises PortAudio for the object's lifetime (ALSA's start-up chatter on stderr is
/// silenced). [allocates, blocks] Never throws: ok() and error() say whether PortAudio
/// started.
class PortAudioSession {
 public:
  /// [allocates, blocks]
  PortAudioSession();
  /// True when Pa_Initialize succeeded. [no-alloc, no-block]
  bool ok() const noexcept { return initialised_; }
  /// Why PortAudio did not start ("" when it did). [no-alloc, no-block]
  const std::string& error() const noexcept { return error_; }
  /// [no-alloc, blocks]
  ~PortAudioSession();
  PortAudioSession(const PortAudioSession&) = delete;
  PortAudioSession& operator=(const PortAudioSession&) = delete;
  /// Every device PortAudio knows. [allocates, blocks]
  std::vector<DeviceInfo> devices() const;
  /// Skip Pa_Terminate at destruction: after a JACK server died under an open stream,
  /// PortAudio's JACK host API aborts the process while cleaning up. [no-alloc, no-block]
  void abandon() noexcept { abandoned_ = true; }
  /// [allocates, no-block]
  std::vector<std::string> host_apis() const;
  /// [allocates, no-block]
  std::string version() const;

 private:
  bool abandoned_ = false;
  bool initialised_ = false;
  std::string error_;
};

struct XrunEntry {
  std::uint64_t callback;  // callback index
  std::int64_t at_ns;
  unsigned long flags;     // PortAudio status flags
};

class DeviceStream {
 public:
  DeviceStream() = default;
  /// [no-alloc, blocks] Stops the stream first.
  ~DeviceStream();
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;

  /// Opens input (and output when `output` is given) at `rate`, `channels`, `frames` per
  /// callback, float32. [allocates, blocks] On failure returns Status::device_error and
  /// error() holds one line with PortAudio's error text.
  Status open(const DeviceInfo& input, const DeviceInfo* output, double rate, int channels, int frames, Engine& engine);
  /// Sizes what the callback touches (xrun list, period histogram) and binds the engine;
  /// open() calls it. [allocates, no-block]
  void prepare_callback(Engine& engine, bool duplex);
  /// Starts the stream. [allocates, blocks] Status::device_error with error() on failure.
  Status start();
  /// The last open()/start() failure in one line ("" when none). [no-alloc, no-block]
  const std::string& error() const noexcept { return error_; }
  /// Stops the stream (waits for the last callback). [no-alloc, blocks]
  void stop() noexcept;
  /// Gives up on a stream whose server stalled or died, leaving it unclosed (see
  /// PortAudioSession::abandon): disarms the callback, waits until no callback is in flight,
  /// and keeps the callback's gate alive for the rest of the process. Afterwards no
  /// callback touches this object or the engine, so both may be read and destroyed.
  /// [no-alloc, blocks] (waits for the callback in flight, which never blocks)
  void abandon() noexcept;
  /// True while PortAudio reports the stream active.
  /// [no-alloc, no-block]
  bool active() const noexcept;

  /// [no-alloc, no-block]
  std::uint64_t callbacks() const noexcept { return callbacks_.load(std::memory_order_relaxed); }
  /// [no-alloc, no-block]
  std::int64_t last_callback_ns() const noexcept { return last_cb_ns_.load(std::memory_order_relaxed); }
  /// [no-alloc, no-block]
  std::uint64_t xruns() const noexcept { return xrun_count_.load(std::memory_order_relaxed); }
  // after stop()
  /// [no-alloc, no-block]
  const std::vector<XrunEntry>& xrun_list() const { return xruns_; }
  /// [no-alloc, no-block]
  std::uint64_t input_overflows() const { return in_over_; }
  /// [no-alloc, no-block]
  std::uint64_t output_underflows() const { return out_under_; }
  /// [no-alloc, no-block]
  std::uint64_t priming() const { return priming_; }
  /// [no-alloc, no-block]
  const stats::LogHistogram& callback_period() const { return period_; }
  /// [no-alloc, no-block]
  double reported_input_latency() const { return in_lat_; }
  /// [no-alloc, no-block]
  double reported_output_latency() const { return out_lat_; }
  /// [no-alloc, no-block]
  double actual_rate() const { return rate_; }

  /// The PortAudio callback body. [no-alloc, no-block] No lock, I/O or logging.
  int on_callback(const void* in, void* out, unsigned long frames, unsigned long status) noexcept;

  /// What PortAudio's callback is handed instead of the stream (see Design).
  struct CallbackGate {
    std::atomic<int> in_flight{0};
    std::atomic<bool> detached{false};
    DeviceStream* stream = nullptr;
    std::size_t out_frame_bytes = 0;  // silence to play once detached (0: input only)
    CallbackGate* next_abandoned = nullptr;
  };
  /// The callback PortAudio calls, given the gate. [no-alloc, no-block]
  static int gated_callback(CallbackGate& gate, const void* in, void* out, unsigned long frames,
                            unsigned long status) noexcept;

 private:
  void* stream_ = nullptr;
  std::unique_ptr<CallbackGate> gate_;
  bool abandoned_ = false;
  Engine* engine_ = nullptr;
  bool duplex_ = false;
  std::atomic<std::uint64_t> callbacks_{0}, xrun_count_{0};
  std::atomic<std::int64_t> last_cb_ns_{0};
  std::int64_t prev_cb_ns_ = 0;
  std::vector<XrunEntry> xruns_;
  std::uint64_t in_over_ = 0, out_under_ = 0, priming_ = 0;
  stats::LogHistogram period_;
  double in_lat_ = 0, out_lat_ = 0, rate_ = 0;
  bool started_ = false;
  std::string error_;
};

}  // namespace chunkscope
