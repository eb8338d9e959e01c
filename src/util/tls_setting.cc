// The process-wide encryption setting: ncclSetEncryption's, else BRAID_ENCRYPTION_PSK_FILE's
// (see tls.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "util/tls.h"
#include "util/unique_fd.h"

namespace braid {
namespace {

constexpr char kFileParam[] = "BRAID_ENCRYPTION_PSK_FILE";
// A key file larger than this is not a key file.
constexpr size_t kMaxKeyFileBytes = 4096;

struct Setting {
  bool decided = false;                       // set by a call, or BRAID_ENCRYPTION_PSK_FILE was read
  bool requested = false;                     // encryption was asked for
  std::shared_ptr<const TlsContext> context;  // null while requested: unavailable
  ncclResult_t failure = ncclSuccess;         // why it is unavailable
  std::string reason;                         // ... in the words of its WARN
  std::string source;
};

std::mutex& settingMutex() {
  static std::mutex m;
  return m;
}
Setting& setting() {
  static Setting s;
  return s;
}

void wipe(std::string* s) {
  volatile char* p = s->empty() ? nullptr : &(*s)[0];
  for (size_t i = 0; i < s->size(); ++i) p[i] = 0;
  s->clear();
}

// The key in `path`, less one trailing newline. The file must be its owner's alone: a key others
// can read is no secret.
ncclResult_t readKeyFile(const std::string& path, std::string* key) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) {
    const int err = errno;
    WARN("%s %s cannot be read: %s (errno %d)", kFileParam, path.c_str(), strerror(err), err);
    return ncclInvalidUsage;
  }
  if ((st.st_mode & (S_IRGRP | S_IROTH)) != 0) {
    WARN("%s %s can be read by others than its owner (mode 0%o): make it private (chmod 600)", kFileParam, path.c_str(),
         static_cast<unsigned>(st.st_mode & 07777));
    return ncclInvalidUsage;
  }
  char buffer[kMaxKeyFileBytes + 1];
  size_t got = 0;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer + got, sizeof(buffer) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
    if (got == sizeof(buffer)) break;
  }
  key->assign(buffer, got);
  std::memset(buffer, 0, sizeof(buffer));
  if (got > kMaxKeyFileBytes) {
    wipe(key);
    WARN("%s %s is larger than %zu bytes: it must hold only the pre-shared key", kFileParam, path.c_str(),
         kMaxKeyFileBytes);
    return ncclInvalidUsage;
  }
  if (!key->empty() && key->back() == '\n') key->pop_back();
  if (!key->empty() && key->back() == '\r') key->pop_back();
  if (key->size() < kTlsMinPskBytes || key->find('\0') != std::string::npos) {
    const size_t bytes = key->size();
    wipe(key);
    WARN("%s %s: the key must be at least %zu bytes (it has %zu) with no NUL byte", kFileParam, path.c_str(),
         kTlsMinPskBytes, bytes);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

// Called with the mutex held, the first time tlsCurrent runs without a call having decided.
void applyKeyFile(Setting* s) {
  s->decided = true;
  if (!paramIsSet(ParamId::kEncryptionPskFile)) return;
  s->requested = true;
  s->source = kFileParam;
  std::string key;
  s->failure = readKeyFile(paramString(ParamId::kEncryptionPskFile), &key);
  if (s->failure == ncclSuccess)
    s->failure = tlsCreateContext(key.data(), key.size(), kFileParam, kFileParam, &s->context);
  wipe(&key);
  if (s->failure != ncclSuccess) {
    s->reason = logLastError();
  } else {
    INFO(kLogInit | kLogNet, "TLS 1.3 with the pre-shared key of %s on every TCP connection between ranks", kFileParam);
  }
}

}  // namespace

ncclResult_t tlsSetPsk(const char* psk, size_t bytes, const char* caller) {
  if (bytes < kTlsMinPskBytes) {
    WARN("%s: the pre-shared key has %zu bytes; it must have at least %zu", caller, bytes, kTlsMinPskBytes);
    return ncclInvalidArgument;
  }
  std::lock_guard<std::mutex> lock(settingMutex());
  Setting& s = setting();
  s = Setting{};
  s.decided = true;
  s.requested = true;
  s.source = caller;
  s.failure = tlsCreateContext(psk, bytes, "ncclSetEncryption", caller, &s.context);
  if (s.failure != ncclSuccess) s.reason = logLastError();
  if (s.failure == ncclSuccess) {
    INFO(kLogInit | kLogNet, "%s: TLS 1.3 with a pre-shared key on every TCP connection between ranks from now on",
         caller);
  }
  return s.failure;
}

void tlsDisable() {
  std::lock_guard<std::mutex> lock(settingMutex());
  setting() = Setting{};
  setting().decided = true;
}

bool tlsRequested() {
  std::lock_guard<std::mutex> lock(settingMutex());
  Setting& s = setting();
  if (!s.decided) applyKeyFile(&s);
  return s.requested;
}

void tlsReset() {
  std::lock_guard<std::mutex> lock(settingMutex());
  setting() = Setting{};
}

ncclResult_t tlsCurrent(std::shared_ptr<const TlsContext>* out) {
  std::lock_guard<std::mutex> lock(settingMutex());
  Setting& s = setting();
  const bool justDecided = !s.decided;
  if (justDecided) applyKeyFile(&s);
  if (s.requested && s.context == nullptr) {
    // The first failure WARNed already; later refusals repeat why.
    if (!justDecided) {
      WARN(
          "TLS encryption was requested (%s) but is not available, so no connection is made without it (%s); "
          "fix the cause, or turn encryption off with ncclSetEncryption",
          s.source.c_str(), s.reason.c_str());
    }
    return s.failure != ncclSuccess ? s.failure : ncclSystemError;
  }
  *out = s.context;
  return ncclSuccess;
}

}  // namespace braid
