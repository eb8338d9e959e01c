// NVIDIA's side of device_api_layout_test: built once for each NCCL release whose headers CMake
// found (tests/unit/CMakeLists.txt), with only that release's include folder and CUDA's on the
// include path and -DDEVAPI_NVIDIA_CODE=<its NCCL_VERSION_CODE>. It measures the release's
// structures through the field lists of device_api_layout.h.
#include <stddef.h>
// NVIDIA's nccl_device.h before 2.32 uses size_t without including a header that defines it.
#include <nccl.h>
#include <nccl_device.h>

#include "device_api_layout.h"

#ifndef DEVAPI_NVIDIA_CODE
#error "build with -DDEVAPI_NVIDIA_CODE=<NCCL_VERSION_CODE of the headers on the include path>"
#endif
static_assert(NCCL_VERSION_CODE == DEVAPI_NVIDIA_CODE, "the nccl.h on the include path is not the release named");

#define DEVAPI_CAT2(a, b) a##b
#define DEVAPI_CAT(a, b) DEVAPI_CAT2(a, b)

#define NV_FIELD(field) facts.push_back(DEVAPI_FACT_FIELD(T, label, field));
#define NV_STRUCT(type, FIELDS)                                       \
  {                                                                   \
    using T = type;                                                   \
    static constexpr const char* label = #type;                       \
    facts.push_back(DevApiLayoutFact{label, "sizeof", 0, sizeof(T)}); \
    FIELDS(NV_FIELD)                                                  \
  }

std::vector<DevApiLayoutFact> DEVAPI_CAT(devApiNvidiaFacts, DEVAPI_NVIDIA_CODE)() {
  std::vector<DevApiLayoutFact> facts;
  DEVAPI_CAT(DEVAPI_STRUCTS_V, DEVAPI_NVIDIA_CODE)(NV_STRUCT) return facts;
}
