#include "rt/status.hpp"

namespace chunkscope {

const char* describe(Status s) noexcept {
  switch (s) {
    case Status::ok: return "ok";
    case Status::invalid_argument: return "invalid argument";
    case Status::not_prepared: return "not prepared";
    case Status::shape_mismatch: return "chunk shape does not match the prepared shape";
    case Status::unsupported: return "not supported";
    case Status::no_device: return "no usable device";
    case Status::device_error: return "device error";
    case Status::queue_full: return "queue full";
    case Status::pool_empty: return "chunk pool exhausted";
    case Status::end_of_stream: return "end of stream";
    case Status::io_error: return "I/O error";
    case Status::interrupted: return "interrupted";
    case Status::stage_failed: return "a hosted stage failed";
    case Status::stage_stuck: return "a hosted call did not return";
  }
  return "unknown status";
}

}  // namespace chunkscope
