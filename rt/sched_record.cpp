#include "rt/sched_record.hpp"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace chunkscope {

namespace {

constexpr std::size_t kRingPages = 16;  // 64 KiB: about 2,700 switches between two reads
thread_local SchedRecord* t_current = nullptr;

// A PERF_RECORD_SWITCH with sample_id_all and TID | TIME: the header, then pid, tid, time.
struct SwitchRecord {
  perf_event_header header;
  std::uint32_t pid, tid;
  std::uint64_t time;
};

}  // namespace

SchedRecord* SchedRecord::current() noexcept { return t_current; }
void SchedRecord::set_current(SchedRecord* r) noexcept { t_current = r; }

SchedRecord::~SchedRecord() { close(); }

bool SchedRecord::open(bool refuse, int tid) {
  close();
  error_ = 0;
  if (refuse) {
    error_ = EACCES;
    return false;
  }
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;  // counts nothing: the records are what is wanted
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  attr.sample_id_all = 1;  // the time on every record, switches included
  attr.context_switch = 1;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;  // the clock of every host stamp
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.watermark = 1;
  attr.wakeup_watermark = static_cast<std::uint32_t>(kRingPages * 4096);  // nobody polls: no wake-ups
  const long fd = syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    error_ = errno;
    return false;
  }
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  map_bytes_ = page * (1 + kRingPages);
  void* m = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, static_cast<int>(fd), 0);
  if (m == MAP_FAILED) {
    error_ = errno;
    ::close(static_cast<int>(fd));
    return false;
  }
  fd_ = static_cast<int>(fd);
  base_ = m;
  ring_ = static_cast<unsigned char*>(m) + page;
  ring_bytes_ = page * kRingPages;
  count_ = 0;
  pending_out_ = -1;
  totals_ = {};
  return true;
}

void SchedRecord::close() noexcept {
  if (base_) munmap(base_, map_bytes_);
  if (fd_ >= 0) ::close(fd_);
  base_ = nullptr;
  ring_ = nullptr;
  fd_ = -1;
}

void SchedRecord::poll() noexcept {
  if (!base_) return;
  auto* meta = static_cast<perf_event_mmap_page*>(base_);
  const std::uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  std::uint64_t tail = meta->data_tail;
  if (tail == head) return;  // never switched out since the last read: the common case
  unsigned char copy[256];
  while (tail < head) {
    perf_event_header h;
    for (std::size_t i = 0; i < sizeof h; ++i) reinterpret_cast<unsigned char*>(&h)[i] = ring_[(tail + i) % ring_bytes_];
    if (h.size < sizeof h) break;  // not a record: stop rather than spin
    if (h.size <= sizeof copy) {
      for (std::size_t i = 0; i < h.size; ++i) copy[i] = ring_[(tail + i) % ring_bytes_];
      take(copy, static_cast<std::uint16_t>(h.type), h.misc, h.size);
    }
    tail += h.size;
  }
  __atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
}

void SchedRecord::take(const unsigned char* rec, std::uint16_t type, std::uint16_t misc, std::uint16_t size) noexcept {
  if (type == PERF_RECORD_LOST && size >= sizeof(perf_event_header) + 16) {
    std::uint64_t lost = 0;
    std::memcpy(&lost, rec + sizeof(perf_event_header) + 8, sizeof lost);
    totals_.lost += lost;
    pending_out_ = -1;  // a switch-in or -out may be among them
    return;
  }
  if (type != PERF_RECORD_SWITCH || size < sizeof(SwitchRecord)) return;
  SwitchRecord s;
  std::memcpy(&s, rec, sizeof s);
  const auto t = static_cast<std::int64_t>(s.time);
  if (misc & PERF_RECORD_MISC_SWITCH_OUT) {
    pending_out_ = t;
    pending_preempt_ = (misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
  } else if (pending_out_ >= 0) {
    add_interval(pending_out_, t, pending_preempt_);
    pending_out_ = -1;
  }
}

void SchedRecord::add_interval(std::int64_t out, std::int64_t in, bool preempted) noexcept {
  kept_[count_ % kKept] = {out, std::max(out, in), preempted};
  ++count_;
  const std::int64_t d = std::max<std::int64_t>(0, in - out);
  if (preempted) {
    ++totals_.preemptions;
    totals_.preempted_ns += d;
  } else {
    ++totals_.blocks;
    totals_.blocked_ns += d;
  }
}

OffCpu SchedRecord::off_between(std::int64_t a, std::int64_t b) noexcept {
  OffCpu off;
  poll();
  const std::uint64_t oldest = count_ > kKept ? count_ - kKept : 0;
  for (std::uint64_t i = count_; i > oldest; --i) {
    const Interval& iv = kept_[(i - 1) % kKept];
    if (iv.in <= a) break;  // every older one ended earlier still
    const std::int64_t d = std::min(iv.in, b) - std::max(iv.out, a);
    if (d <= 0) continue;
    (iv.preempted ? off.preempted_ns : off.blocked_ns) += d;
    ++(iv.preempted ? off.preemptions : off.blocks);
  }
  return off;
}

SwitchTotals SchedRecord::totals() noexcept {
  poll();
  return totals_;
}

}  // namespace chunkscope
