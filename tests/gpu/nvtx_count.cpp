// A tiny NVTX injection library for tests/gpu/check.sh: it counts the NVTX ranges a process
// pushes and prints the counts when the process exits, proving that the NVTX ranges are
// compiled in and reach a tool. Load it the way Nsight Systems loads its own:
//
//   NVTX_INJECTION64_PATH=/path/libnvtx_count.so chunkscope ...
//
// On the first NVTX call, the NVTX3 headers compiled into the program dlopen the library
// named by NVTX_INJECTION64_PATH and call its InitializeInjectionNvtx2 with the export-table
// getter; the library asks for the callbacks table (NVTX_ETID_CALLBACKS), fetches the CORE
// module's function table and stores its own functions in the push and pop slots. Every
// slot it leaves alone stays a no-op.
//
// At exit it writes one line to stderr, or to the file named by NVTX_COUNT_OUT when set:
//   nvtx_count: pushes=N pops=N max_depth=D names=chunk:100,h2d:100,...
// (names of nvtxRangePushA ranges in order of first appearance, at most 32 distinct).
//
// Built with -DNVTX_COUNT_SELFTEST this file is instead a small program that pushes and pops
// a known number of ranges, to check the library on a machine without a GPU (pack.sh).
// Not part of chunkscope: test tooling, never on a real-time path of the product.
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if !defined(NVTX_COUNT_SELFTEST)

namespace {

constexpr int kMaxNames = 32;

std::atomic<long> g_pushes{0}, g_pops{0};
std::atomic<int> g_depth{0}, g_max_depth{0};
std::atomic<const char*> g_names[kMaxNames];
std::atomic<long> g_name_counts[kMaxNames];
std::atomic<long> g_other_names{0};
std::atomic<bool> g_attached{false};

// Counts one push of `name` (nullptr for an unnamed push). No allocation, lock-free.
void count_name(const char* name) {
  if (!name) return;
  for (int i = 0; i < kMaxNames; ++i) {
    const char* cur = g_names[i].load(std::memory_order_acquire);
    if (cur == nullptr) {
      const char* expected = nullptr;
      if (g_names[i].compare_exchange_strong(expected, name, std::memory_order_acq_rel)) {
        g_name_counts[i].fetch_add(1, std::memory_order_relaxed);
        return;
      }
      cur = expected;  // another thread took the slot: compare with its name
    }
    if (cur == name || std::strcmp(cur, name) == 0) {
      g_name_counts[i].fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  g_other_names.fetch_add(1, std::memory_order_relaxed);
}

void pushed() {
  g_pushes.fetch_add(1, std::memory_order_relaxed);
  const int d = g_depth.fetch_add(1, std::memory_order_relaxed) + 1;
  int m = g_max_depth.load(std::memory_order_relaxed);
  while (d > m && !g_max_depth.compare_exchange_weak(m, d, std::memory_order_relaxed)) {
  }
}

int NVTX_API push_a(const char* message) {
  count_name(message);
  pushed();
  return g_depth.load(std::memory_order_relaxed) - 1;
}

int NVTX_API push_ex(const nvtxEventAttributes_t* attr) {
  const bool ascii = attr && attr->messageType == NVTX_MESSAGE_TYPE_ASCII;
  count_name(ascii ? attr->message.ascii : nullptr);
  pushed();
  return g_depth.load(std::memory_order_relaxed) - 1;
}

int NVTX_API pop() {
  g_pops.fetch_add(1, std::memory_order_relaxed);
  return g_depth.fetch_sub(1, std::memory_order_relaxed) - 1;
}

void report() {
  if (!g_attached.load()) return;
  FILE* out = stderr;
  const char* path = std::getenv("NVTX_COUNT_OUT");
  FILE* file = path && *path ? std::fopen(path, "w") : nullptr;
  if (file) out = file;
  std::fprintf(out, "nvtx_count: pushes=%ld pops=%ld max_depth=%d names=", g_pushes.load(), g_pops.load(),
               g_max_depth.load());
  for (int i = 0; i < kMaxNames; ++i) {
    const char* n = g_names[i].load();
    if (!n) break;
    std::fprintf(out, "%s%s:%ld", i ? "," : "", n, g_name_counts[i].load());
  }
  if (g_other_names.load()) std::fprintf(out, ",(more names):%ld", g_other_names.load());
  std::fprintf(out, "\n");
  if (file) std::fclose(file);
}

}  // namespace

// The entry point the NVTX3 loader looks up in the library named by NVTX_INJECTION64_PATH.
// Returns 1 when the hooks are in place, 0 (the loader then unloads the library) otherwise.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  if (!get_table) return 0;
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (!cb || cb->struct_size < sizeof(NvtxExportTableCallbacks) || !cb->GetModuleFunctionTable) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || !table) return 0;
  if (size <= NVTX_CBID_CORE_RangePop) return 0;
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&push_a);
  *table[NVTX_CBID_CORE_RangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&push_ex);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  g_attached.store(true);
  std::atexit(report);
  return 1;
}

#else  // NVTX_COUNT_SELFTEST: pushes 3 + 2 named ranges (nested two deep), pops them all

int main() {
  for (int i = 0; i < 3; ++i) {
    nvtxRangePushA("outer");
    if (i < 2) {
      nvtxRangePushA("inner");
      nvtxRangePop();
    }
    nvtxRangePop();
  }
  std::printf("selftest: pushed 5 ranges (outer:3, inner:2), max depth 2\n");
  return 0;
}

#endif
