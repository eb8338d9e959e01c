// The logger: settings read lazily from NCCL_DEBUG*, one formatted line per message, the
// process-wide last WARN.
//
// Locks, always taken in this order and never while calling out to code that logs:
//   initMutex      serializes (re)initialization of the settings and logReset
//   registry lock  inside params.cc, taken by paramStringQuiet / paramsReset
//   outputMutex    one line at a time on the output, and swaps of the output FILE*
// lastErrorMutex is independent of the others.
//
// Initialization reads its three variables with paramStringQuiet (no logging) and only after the
// settings are published does it flush the registry's queued reports through logMessage; that is
// what keeps "the registry warns through the logger, the logger reads the registry" from
// recursing (params_internal.h has the full story).
#include "util/log.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "util/log_internal.h"
#include "util/params.h"
#include "util/params_internal.h"

namespace braid {

namespace {

// Longest message text kept (NUL included); longer messages end in "...". A stack buffer of this
// size per call is the only memory a message costs.
constexpr size_t kMessageMax = 2048;
// Room for "host:pid:tid [dev] file:line NCCL LEVEL " in front of the message.
constexpr size_t kPrefixMax = 512;
constexpr size_t kLastErrorMax = 1024;
constexpr char kTruncationMark[] = "...";

struct LogState {
  std::mutex initMutex;
  std::atomic<bool> ready{false};
  std::atomic<int> level{static_cast<int>(LogLevel::kNone)};
  std::atomic<uint64_t> mask{0};
  std::atomic<int (*)()> deviceQuery{nullptr};
  std::string host = "unknown";  // written under initMutex before `ready` is released

  std::mutex outputMutex;
  FILE* out = stdout;  // guarded by outputMutex
  bool ownsOut = false;

  std::mutex lastErrorMutex;
  char lastError[kLastErrorMax] = {};
};

// Never destroyed: threads may log while static destructors run at exit.
// A fork while another thread logs (a root or server thread WARNing about a peer) would copy a
// held mutex into the child, whose first log line would then wait forever: the logger's mutexes
// are taken around fork() (in the order logReset and ensureInit nest them) and released on both
// sides.
void forkPrepare();
void forkParent();

LogState& state() {
  static LogState* instance = [] {
    auto* s = new LogState();
    pthread_atfork(&forkPrepare, &forkParent, &forkParent);
    return s;
  }();
  return *instance;
}

void forkPrepare() {
  LogState& s = state();
  s.initMutex.lock();
  s.outputMutex.lock();
  s.lastErrorMutex.lock();
}

void forkParent() {
  LogState& s = state();
  s.lastErrorMutex.unlock();
  s.outputMutex.unlock();
  s.initMutex.unlock();
}

const char* baseName(const char* path) {
  if (path == nullptr) return "?";
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

int currentDevice(const LogState& s) {
  int (*query)() = s.deviceQuery.load(std::memory_order_acquire);
  return query != nullptr ? query() : -1;
}

// Replaces the output, closing the previous one if we opened it. Caller holds initMutex.
void setOutput(LogState& s, FILE* out, bool owns) {
  std::lock_guard<std::mutex> lock(s.outputMutex);
  if (s.ownsOut && s.out != nullptr) std::fclose(s.out);
  s.out = out;
  s.ownsOut = owns;
}

// Opens NCCL_DEBUG_FILE (expanded) for appending, line-buffered and close-on-exec. On failure
// logging goes to stdout and *problem says why. Caller holds initMutex.
void openOutput(LogState& s, const std::string& pattern, std::vector<std::string>* problems) {
  if (pattern.empty()) {
    setOutput(s, stdout, false);
    return;
  }
  std::string path = expandLogFilePath(pattern, s.host, static_cast<long>(getpid()));
  FILE* file = std::fopen(path.c_str(), "ae");
  if (file == nullptr) {
    int err = errno;
    problems->push_back("Cannot open NCCL_DEBUG_FILE " + path + ": " + std::strerror(err) + " (errno " +
                        std::to_string(err) + "); logging to stdout instead");
    setOutput(s, stdout, false);
    return;
  }
  std::setvbuf(file, nullptr, _IOLBF, 0);
  setOutput(s, file, true);
}

// Reads and applies the settings. Caller holds initMutex. Must not log: problems are returned.
void initLocked(LogState& s, std::vector<std::string>* problems) {
  s.host = shortHostName();

  const std::string& debug = paramStringQuiet(ParamId::kDebug);
  LogLevel level = LogLevel::kNone;
  if (parseLogLevel(debug, &level) != ncclSuccess) {
    problems->push_back("NCCL_DEBUG has unknown value '" + debug +
                        "'; expected VERSION, WARN, INFO, ABORT or TRACE. Using WARN.");
    level = LogLevel::kWarn;
  }

  uint64_t mask = 0;
  std::string unknown;
  if (parseLogSubsys(paramStringQuiet(ParamId::kDebugSubsys), &mask, &unknown) != ncclSuccess &&
      level >= LogLevel::kWarn) {
    problems->push_back("NCCL_DEBUG_SUBSYS names unknown subsystem(s) " + unknown +
                        ", ignored; known: " + logSubsysNames());
  }

  // With nothing to print, a file named by NCCL_DEBUG_FILE is not even created.
  if (level == LogLevel::kNone) {
    setOutput(s, stdout, false);
  } else {
    openOutput(s, paramStringQuiet(ParamId::kDebugFile), problems);
  }
  s.mask.store(mask, std::memory_order_relaxed);
  s.level.store(static_cast<int>(level), std::memory_order_relaxed);
}

// Problems with the logger's own configuration go to stderr: the configured output may be the
// thing that is broken, and stderr is where someone will look.
void warnOnStderr(const LogState& s, const std::string& text) {
  std::fprintf(stderr, "%s:%d:%ld [%d] NCCL WARN %s\n", s.host.c_str(), static_cast<int>(getpid()), currentThreadId(),
               currentDevice(s), text.c_str());
}

void ensureInit() {
  LogState& s = state();
  if (s.ready.load(std::memory_order_acquire)) return;
  std::vector<std::string> problems;
  {
    std::lock_guard<std::mutex> lock(s.initMutex);
    if (s.ready.load(std::memory_order_relaxed)) return;
    initLocked(s, &problems);
    s.ready.store(true, std::memory_order_release);
  }
  for (const std::string& p : problems) warnOnStderr(s, p);
  // Settings are published: reports queued while we read them can now be logged safely.
  paramsFlushReports();
}

void recordLastError(LogState& s, const char* msg) {
  size_t n = strnlen(msg, kLastErrorMax);
  std::lock_guard<std::mutex> lock(s.lastErrorMutex);
  if (n < kLastErrorMax) {
    std::memcpy(s.lastError, msg, n + 1);
  } else {  // too long: keep the start, mark the cut
    std::memcpy(s.lastError, msg, kLastErrorMax);
    std::memcpy(s.lastError + kLastErrorMax - sizeof(kTruncationMark), kTruncationMark, sizeof(kTruncationMark));
  }
}

// Formats the line into a stack buffer and writes it with one fwrite, so that concurrent lines
// never interleave.
void emitLine(LogState& s, LogLevel level, const char* file, int line, const char* msg) {
  char buf[kPrefixMax + kMessageMax];
  const char* host = s.host.c_str();
  int pid = static_cast<int>(getpid());
  long tid = currentThreadId();
  int dev = currentDevice(s);
  int n = 0;
  switch (level) {
    case LogLevel::kVersion:
      n = std::snprintf(buf, sizeof(buf), "%s\n", msg);
      break;
    case LogLevel::kWarn:
      n = std::snprintf(buf, sizeof(buf), "%s:%d:%ld [%d] %s:%d NCCL WARN %s\n", host, pid, tid, dev, baseName(file),
                        line, msg);
      break;
    case LogLevel::kTrace:
      n = std::snprintf(buf, sizeof(buf), "%s:%d:%ld [%d] NCCL TRACE %s:%d %s\n", host, pid, tid, dev, baseName(file),
                        line, msg);
      break;
    default:
      n = std::snprintf(buf, sizeof(buf), "%s:%d:%ld [%d] NCCL %s %s\n", host, pid, tid, dev,
                        level == LogLevel::kAbort ? "ABORT" : "INFO", msg);
      break;
  }
  if (n <= 0) return;
  size_t len = static_cast<size_t>(n);
  if (len >= sizeof(buf)) {  // cut, but keep the line a line
    len = sizeof(buf) - 1;
    buf[len - 1] = '\n';
  }
  std::lock_guard<std::mutex> lock(s.outputMutex);
  std::fwrite(buf, 1, len, s.out);
  std::fflush(s.out);
}

// NCCL_DEBUG=ABORT: every WARN is fatal, to stop a job at the first problem with a core dump.
[[noreturn]] void abortAfterWarn(const LogState& s, const char* file, int line) {
  std::fprintf(stderr, "%s:%d:%ld [%d] %s:%d NCCL ABORT\n", s.host.c_str(), static_cast<int>(getpid()),
               currentThreadId(), currentDevice(s), baseName(file), line);
  std::abort();
}

}  // namespace

bool logEnabled(LogLevel level, uint64_t subsys) {
  ensureInit();
  const LogState& s = state();
  int wanted = static_cast<int>(level);
  if (wanted <= static_cast<int>(LogLevel::kNone) || wanted > s.level.load(std::memory_order_relaxed)) return false;
  // WARN and the version banner ignore the subsystem filter, as in NCCL.
  if (level == LogLevel::kWarn || level == LogLevel::kVersion) return true;
  return (subsys & s.mask.load(std::memory_order_relaxed)) != 0;
}

void logMessage(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...) {
  const bool isWarn = level == LogLevel::kWarn;
  const bool print = logEnabled(level, subsys);
  // A WARN is formatted even when nothing is printed: it becomes ncclGetLastError's text.
  if (!print && !isWarn) return;

  char msg[kMessageMax];
  va_list args;
  va_start(args, fmt);
  int n = std::vsnprintf(msg, sizeof(msg), fmt, args);
  va_end(args);
  if (n < 0) {
    std::snprintf(msg, sizeof(msg), "(unformattable log message: %s)", fmt);
  } else if (static_cast<size_t>(n) >= sizeof(msg)) {
    std::memcpy(msg + sizeof(msg) - sizeof(kTruncationMark), kTruncationMark, sizeof(kTruncationMark));
  }

  LogState& s = state();
  if (isWarn) recordLastError(s, msg);
  if (print) emitLine(s, level, file, line, msg);
  if (isWarn && s.level.load(std::memory_order_relaxed) == static_cast<int>(LogLevel::kAbort)) {
    abortAfterWarn(s, file, line);
  }
}

const char* logLastError() {
  // A per-thread snapshot taken under the lock: the caller gets a stable string even while other
  // threads WARN, and the pointer stays valid until this thread asks again.
  thread_local char snapshot[kLastErrorMax];
  LogState& s = state();
  std::lock_guard<std::mutex> lock(s.lastErrorMutex);
  std::memcpy(snapshot, s.lastError, sizeof(snapshot));
  return snapshot;
}

void logSetDeviceQuery(int (*query)()) { state().deviceQuery.store(query, std::memory_order_release); }

void logReset() {
  LogState& s = state();
  std::lock_guard<std::mutex> lock(s.initMutex);
  paramsReset();
  setOutput(s, stdout, false);
  s.level.store(static_cast<int>(LogLevel::kNone), std::memory_order_relaxed);
  s.mask.store(0, std::memory_order_relaxed);
  s.ready.store(false, std::memory_order_release);
  logBannerRearm();
}

}  // namespace braid
