#pragma once
// Errors as values for the real-time path (rt/ and kernels/): a small enum and a
// describe function. Exceptions belong to the CLI and configuration layer only.
#include <cstdint>

namespace chunkscope {

enum class Status : std::uint8_t {
  ok = 0,
  invalid_argument,   // a prepare() argument is out of range
  not_prepared,       // process() before prepare()
  shape_mismatch,     // a chunk does not fit the prepared shape
  unsupported,        // feature not available in this build or on this device
  no_device,          // no usable device (GPU or audio)
  device_error,       // the device or driver reported a failure
  queue_full,         // a fixed-capacity queue had no room
  pool_empty,         // the chunk pool had no free chunk
  end_of_stream,      // the source has no more data
  io_error,           // a read or write failed
  interrupted,        // stopped by a signal or a request
  stage_failed,       // a hosted step's process() reported a failure
  stage_stuck,        // a hosted call had not returned after the step timeout
};

/// Short English description of a status. [no-alloc, no-block] Returns a literal.
const char* describe(Status s) noexcept;

/// True when s is Status::ok. [no-alloc, no-block]
constexpr bool ok(Status s) noexcept { return s == Status::ok; }

}  // namespace chunkscope
