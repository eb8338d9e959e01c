// Version, error strings, last error, debug re-initialization.
//
// nccl.h declares ncclResetDebugInit only where NCCL_OS_LINUX is defined (as NCCL's header does);
// elsewhere the name is a macro, which would swallow the definition below.
#define NCCL_OS_LINUX 1
#include "api/export.h"
#include "util/log.h"
#include "util/text.h"

BRAID_API(ncclResult_t, ncclGetVersion, int* version);
ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) {
    WARN("ncclGetVersion: version is NULL");
    return ncclInvalidArgument;
  }
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

BRAID_API(const char*, ncclGetErrorString, ncclResult_t result);
const char* ncclGetErrorString(ncclResult_t result) { return braid::resultText(result); }

BRAID_API(const char*, ncclGetLastError, ncclComm_t comm);
const char* ncclGetLastError(ncclComm_t) {
  // Process wide, as in NCCL: the comm argument is ignored.
  return braid::logLastError();
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
BRAID_API(void, ncclResetDebugInit);
void ncclResetDebugInit() { braid::logReset(); }
#pragma GCC diagnostic pop

// NCCL's library exports this one global symbol without a pncclX twin or a declaration in nccl.h;
// programs built against it find it here too.
extern "C" __attribute__((visibility("default"))) void ncclResetDebugInitInternal();
void ncclResetDebugInitInternal() { braid::logReset(); }
