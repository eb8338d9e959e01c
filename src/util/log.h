// Logging with NCCL's contract, because people's tooling parses it:
//   NCCL_DEBUG        VERSION | WARN | INFO | ABORT | TRACE   (unset: nothing is printed)
//   NCCL_DEBUG_SUBSYS comma list of subsystems, a leading '^' inverts it, ALL selects all
//                     (default INIT,BOOTSTRAP,ENV)
//   NCCL_DEBUG_FILE   file name; %h expands to the host name and %p to the pid (default stdout)
// Lines look like `host:pid:tid [dev] NCCL INFO message`. Every WARN also becomes the text that
// ncclGetLastError returns, whatever NCCL_DEBUG says.
//
// util depends on nothing else of Braid's and on no CUDA; the [dev] field comes from a hook the
// core layer installs (logSetDeviceQuery).
#pragma once

#include <cstdint>

namespace braid {

enum class LogLevel : int { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kAbort = 4, kTrace = 5 };

// Subsystem bits, the same set of names as NCCL_DEBUG_SUBSYS accepts.
enum LogSubsys : uint64_t {
  kLogInit = 1ull << 0,
  kLogColl = 1ull << 1,
  kLogP2p = 1ull << 2,
  kLogShm = 1ull << 3,
  kLogNet = 1ull << 4,
  kLogGraph = 1ull << 5,
  kLogTuning = 1ull << 6,
  kLogEnv = 1ull << 7,
  kLogAlloc = 1ull << 8,
  kLogCall = 1ull << 9,
  kLogProxy = 1ull << 10,
  kLogNvls = 1ull << 11,
  kLogBootstrap = 1ull << 12,
  kLogReg = 1ull << 13,
  kLogProfile = 1ull << 14,
  kLogRas = 1ull << 15,
  kLogAll = ~0ull,
};

// Formats and emits one line if `level`/`subsys` pass the filters. WARN lines are always recorded
// as the last error. Thread safe. Never calls into CUDA.
void logMessage(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// True when a message of this level and subsystem would be printed (cheap; use it to skip
// building expensive messages).
bool logEnabled(LogLevel level, uint64_t subsys);

// Text of the last WARN in this process ("" if none), at most 1023 characters. The pointer is to a
// per-thread copy taken under a lock, so it stays valid and unchanged (even while other threads
// WARN) until the same thread calls logLastError again or exits.
const char* logLastError();

// Installs the function that gives the current CUDA device for the [dev] field (-1 when unknown).
void logSetDeviceQuery(int (*query)());

// Forgets the parsed NCCL_DEBUG* settings so that the next message reads them again
// (ncclResetDebugInit, and tests).
void logReset();

// Prints the VERSION banner once per process if NCCL_DEBUG >= VERSION: Braid's version, the NCCL
// API version it implements, and the path of the loaded library.
void logVersionBannerOnce();

}  // namespace braid

#define WARN(...) ::braid::logMessage(::braid::LogLevel::kWarn, ::braid::kLogAll, __FILE__, __LINE__, __VA_ARGS__)
#define INFO(subsys, ...) ::braid::logMessage(::braid::LogLevel::kInfo, (subsys), __FILE__, __LINE__, __VA_ARGS__)
#define TRACE(subsys, ...) ::braid::logMessage(::braid::LogLevel::kTrace, (subsys), __FILE__, __LINE__, __VA_ARGS__)
