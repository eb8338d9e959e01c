// Declares an exported entry point the way NCCL's library has it: `ncclX` is a WEAK symbol (a
// profiler or shim may interpose it) and `pncclX` is a GLOBAL alias at the same address (so the
// interposer can still reach the library's own implementation). Use it once per function, before
// defining `ncclX` in the same file:
//
//   BRAID_API(ncclResult_t, ncclGetVersion, int* version);
//   ncclResult_t ncclGetVersion(int* version) { ... }
//
// No C++ exception may escape an entry point: bodies go through apiGuard (api_guard.h).
#pragma once

#include <nccl.h>

#define BRAID_API(ret, func, ...)                                                \
  extern "C" __attribute__((visibility("default"), weak)) ret func(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"), alias(#func))) ret p##func(__VA_ARGS__)
