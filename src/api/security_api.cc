// ncclSetEncryption: TLS on the library's own TCP sockets (bootstrap and socket network).
#include "api/api_guard.h"
#include "api/export.h"
#include "util/check.h"

BRAID_API(ncclResult_t, ncclSetEncryption, const ncclEncryptionConfig_t* config);
ncclResult_t ncclSetEncryption(const ncclEncryptionConfig_t* config) {
  const char* caller = "ncclSetEncryption";
  return braid::apiGuard(caller, [&] {
    if (config == nullptr) {
      WARN("%s: config is NULL", caller);
      return ncclInvalidArgument;
    }
    if (config->magic != NCCL_API_MAGIC ||
        config->size < offsetof(ncclEncryptionConfig_t, mode) + sizeof(config->mode)) {
      WARN("%s: config->magic is 0x%x and config->size %zu; initialize it with NCCL_ENCRYPTION_CONFIG_INITIALIZER",
           caller, config->magic, config->size);
      return ncclInvalidArgument;
    }
    switch (config->mode) {
      case NCCL_ENCRYPTION_MODE_NONE:
        // Plain text is what Braid's sockets speak: asking for it changes nothing and is true.
        return ncclSuccess;
      case NCCL_ENCRYPTION_MODE_PSK:
        return braid::notImplemented(caller, "TLS with a pre-shared key on Braid's sockets");
      default:
        WARN("%s: config->mode %d is not an ncclEncryptionMode_t", caller, config->mode);
        return ncclInvalidArgument;
    }
  });
}
