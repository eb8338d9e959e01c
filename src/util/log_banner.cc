// The "NCCL version ..." banner. It starts with "NCCL version" like NCCL's, because scripts and
// bug templates grep for that line, and it says that this is Braid and which file was loaded,
// which is the first thing to know when a job mixes libraries.
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "util/log.h"
#include "util/log_internal.h"

#ifndef BRAID_VERSION
#error "BRAID_VERSION must be defined by the build (src/util/CMakeLists.txt)"
#endif
#ifndef BRAID_NCCL_API_VERSION
#error "BRAID_NCCL_API_VERSION must be defined by the build (src/util/CMakeLists.txt)"
#endif

namespace braid {

namespace {

std::atomic<bool> gBannerShown{false};

// Absolute path of the object (libnccl.so.2, or an executable that links util statically) that
// contains this code.
std::string loadedObjectPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&logVersionBannerOnce), &info) == 0 || info.dli_fname == nullptr) {
    return "(unknown path)";
  }
  char* resolved = realpath(info.dli_fname, nullptr);
  if (resolved == nullptr) return info.dli_fname;
  std::string path(resolved);
  std::free(resolved);
  return path;
}

}  // namespace

void logBannerRearm() { gBannerShown.store(false, std::memory_order_relaxed); }

void logVersionBannerOnce() {
  if (!logEnabled(LogLevel::kVersion, kLogAll)) return;
  if (gBannerShown.exchange(true, std::memory_order_relaxed)) return;
  std::string path = loadedObjectPath();
  // At INFO and above it is an ordinary INFO line (with the host:pid:tid prefix), as in NCCL; at
  // VERSION and WARN it is printed bare.
  LogLevel level = logEnabled(LogLevel::kInfo, kLogAll) ? LogLevel::kInfo : LogLevel::kVersion;
  logMessage(level, kLogAll, __FILE__, __LINE__,
             "NCCL version %s+braid%s (Braid %s, implementing the NCCL %s API) from %s", BRAID_NCCL_API_VERSION,
             BRAID_VERSION, BRAID_VERSION, BRAID_NCCL_API_VERSION, path.c_str());
}

}  // namespace braid
