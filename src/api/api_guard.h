// Every entry point runs its body through apiGuard, so that no C++ exception (std::bad_alloc,
// std::system_error from a thread) ever crosses into C callers: it becomes an error code and a WARN.
#pragma once

#include <nccl.h>

#include <exception>
#include <new>
#include <utility>

#include "core/group.h"
#include "util/log.h"

namespace braid {

template <typename Body>
ncclResult_t apiGuard(const char* caller, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    WARN("%s: out of host memory", caller);
    return ncclSystemError;
  } catch (const std::exception& e) {
    WARN("%s: internal error: %s", caller, e.what());
    return ncclInternalError;
  } catch (...) {
    WARN("%s: internal error: unknown exception", caller);
    return ncclInternalError;
  }
}

// apiGuard for the calls that queue operations (collectives, sends, receives and their AlltoAll,
// Gather, Scatter groups): one refused inside a group makes the whole group fail at its outermost
// ncclGroupEnd, nothing launched (GroupContext::noteRefusedCall).
template <typename Body>
ncclResult_t queueingApiGuard(const char* caller, Body&& body) noexcept {
  const ncclResult_t result = apiGuard(caller, std::forward<Body>(body));
  if (result != ncclSuccess && result != ncclInProgress) GroupContext::current().noteRefusedCall(result);
  return result;
}

// For API functions that exist but whose feature has not landed yet: one WARN that names the
// feature, and an error. Never a silent success.
inline ncclResult_t notImplemented(const char* caller, const char* feature) {
  WARN("%s: %s is not implemented in this version of Braid", caller, feature);
  return ncclInvalidUsage;
}

}  // namespace braid
