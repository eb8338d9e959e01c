#include "util/thread_guard.h"

#include <exception>
#include <new>

#include "util/log.h"

namespace braid {

ncclResult_t threadExceptionResult(const char* thread) noexcept {
  // Logging itself may throw (out of memory): nothing may leave this function.
  try {
    try {
      throw;
    } catch (const std::bad_alloc& e) {
      WARN("The %s thread ran out of memory (%s); its work failed", thread, e.what());
      return ncclSystemError;
    } catch (const std::exception& e) {
      WARN("The %s thread failed with an unexpected exception: %s; its work failed", thread, e.what());
      return ncclInternalError;
    } catch (...) {
      WARN("The %s thread failed with an unexpected exception of unknown type; its work failed", thread);
      return ncclInternalError;
    }
  } catch (...) {
    return ncclInternalError;
  }
}

}  // namespace braid
