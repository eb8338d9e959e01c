// ncclSetEncryption: TLS 1.3 with a pre-shared key on the library's TCP connections between ranks
// (bootstrap, board servers, the socket network; util/tls.h).
//
// As NCCL: a NULL config means the default one (plain text); a config whose size is smaller than
// this library's structure supplies the fields it covers and the rest keep their defaults; the
// setting is process-wide and applies to what is created after the call.
#include <algorithm>
#include <cstring>

#include "api/api_guard.h"
#include "api/export.h"
#include "util/check.h"
#include "util/tls.h"

BRAID_API(ncclResult_t, ncclSetEncryption, const ncclEncryptionConfig_t* config);
ncclResult_t ncclSetEncryption(const ncclEncryptionConfig_t* config) {
  const char* caller = "ncclSetEncryption";
  return braid::apiGuard(caller, [&] {
    ncclEncryptionConfig_t c = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
    if (config != nullptr) {
      if (config->magic != NCCL_API_MAGIC) {
        WARN("%s: config->magic is 0x%x; initialize the config with NCCL_ENCRYPTION_CONFIG_INITIALIZER", caller,
             config->magic);
        return ncclInvalidArgument;
      }
      std::memcpy(&c, config, std::min(config->size, sizeof(c)));
    }
    switch (c.mode) {
      case NCCL_ENCRYPTION_MODE_NONE:
        braid::tlsDisable();
        return ncclSuccess;
      case NCCL_ENCRYPTION_MODE_PSK:
        if (c.psk == nullptr) {
          WARN("%s: config->psk is NULL; NCCL_ENCRYPTION_MODE_PSK needs a key of at least %zu bytes", caller,
               braid::kTlsMinPskBytes);
          return ncclInvalidArgument;
        }
        if (std::strlen(c.psk) < braid::kTlsMinPskBytes) {
          WARN("%s: config->psk has %zu bytes; a pre-shared key needs at least %zu", caller, std::strlen(c.psk),
               braid::kTlsMinPskBytes);
          return ncclInvalidArgument;
        }
        return braid::tlsSetPsk(c.psk, std::strlen(c.psk), caller);
      default:
        WARN("%s: config->mode %d is not an ncclEncryptionMode_t (NONE %d or PSK %d)", caller, c.mode,
             NCCL_ENCRYPTION_MODE_NONE, NCCL_ENCRYPTION_MODE_PSK);
        return ncclInvalidArgument;
    }
  });
}
