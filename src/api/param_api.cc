// NCCL's parameter API: read-only queries of the NCCL_* (and BRAID_*) variables Braid honours,
// with the values Braid uses. The logic and its contract are in util/param_query.h.
#include <cstdint>

#include "api/api_guard.h"
#include "api/export.h"
#include "util/param_query.h"

using braid::apiGuard;
using braid::ParamIntType;

BRAID_API(ncclResult_t, ncclParamBind, ncclParamHandle_t* out, const char* key);
ncclResult_t ncclParamBind(ncclParamHandle_t* out, const char* key) {
  return apiGuard("ncclParamBind", [&] { return braid::paramQueryBind("ncclParamBind", key, out); });
}

// One typed getter per integer type, all the same but for the type.
#define BRAID_PARAM_TYPED_GETTER(suffix, ctype)                                                 \
  BRAID_API(ncclResult_t, ncclParamGet##suffix, ncclParamHandle_t h, ctype* out);               \
  ncclResult_t ncclParamGet##suffix(ncclParamHandle_t h, ctype* out) {                          \
    return apiGuard("ncclParamGet" #suffix, [&] {                                               \
      return braid::paramQueryInteger("ncclParamGet" #suffix, h, ParamIntType::k##suffix, out); \
    });                                                                                         \
  }

BRAID_PARAM_TYPED_GETTER(I8, int8_t)
BRAID_PARAM_TYPED_GETTER(I16, int16_t)
BRAID_PARAM_TYPED_GETTER(I32, int32_t)
BRAID_PARAM_TYPED_GETTER(I64, int64_t)
BRAID_PARAM_TYPED_GETTER(U8, uint8_t)
BRAID_PARAM_TYPED_GETTER(U16, uint16_t)
BRAID_PARAM_TYPED_GETTER(U32, uint32_t)
BRAID_PARAM_TYPED_GETTER(U64, uint64_t)

#undef BRAID_PARAM_TYPED_GETTER

BRAID_API(ncclResult_t, ncclParamGetStr, ncclParamHandle_t h, const char** out);
ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char** out) {
  return apiGuard("ncclParamGetStr", [&] { return braid::paramQueryString("ncclParamGetStr", h, out); });
}

BRAID_API(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void* out, int maxLen, int* len);
ncclResult_t ncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len) {
  return apiGuard("ncclParamGet", [&] { return braid::paramQueryRaw("ncclParamGet", h, out, maxLen, len); });
}

BRAID_API(ncclResult_t, ncclParamGetParameter, const char* key, const char** value, int* valueLen);
ncclResult_t ncclParamGetParameter(const char* key, const char** value, int* valueLen) {
  return apiGuard("ncclParamGetParameter",
                  [&] { return braid::paramQueryByKey("ncclParamGetParameter", key, value, valueLen); });
}

BRAID_API(ncclResult_t, ncclParamGetAllParameterKeys, const char*** table, int* tableLen);
ncclResult_t ncclParamGetAllParameterKeys(const char*** table, int* tableLen) {
  return apiGuard("ncclParamGetAllParameterKeys",
                  [&] { return braid::paramQueryAllKeys("ncclParamGetAllParameterKeys", table, tableLen); });
}

BRAID_API(void, ncclParamDumpAll);
void ncclParamDumpAll() {
  // No result to return: a failure (out of memory) has already logged its WARN in apiGuard.
  (void)apiGuard("ncclParamDumpAll", [] {
    braid::paramQueryDumpAll();
    return ncclSuccess;
  });
}
