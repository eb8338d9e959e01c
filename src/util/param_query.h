// Read-only queries of the parameter registry (params.h) by name, behind NCCL's parameter API
// (ncclParamBind, ncclParamGet*, ncclParamGetParameter, ncclParamGetAllParameterKeys,
// ncclParamDumpAll; the entry points are src/api/param_api.cc).
//
// Contract, as NCCL's parameter API has it:
//   - A key is a parameter's full variable name, exactly as in the environment ("NCCL_BUFFSIZE",
//     "BRAID_PEER_WATCH_MS"): case-sensitive, with its prefix. Every parameter of params.def is
//     known, and nothing else.
//   - A value is the one Braid uses: the registry's (environment, then config files, then the
//     default), read on first use and cached. A malformed setting reads as its default.
//   - A handle names one parameter for the life of the library (it points into the registry's
//     static table); it never needs to be freed, and it stays valid across ncclResetDebugInit.
//   - Strings and tables handed out stay valid until the same thread makes the same kind of call
//     again; each thread has its own copies, so calls from other threads never disturb them.
//
// Where Braid is more lenient than NCCL (whose getters demand the parameter's exact C type): an
// integer getter reads any parameter whose value is an integer that fits its type (a String
// parameter too, when its text is a decimal or 0x hexadecimal integer); ncclParamGetStr reads any
// parameter, integers as decimal text. A value the type cannot hold is ncclInvalidArgument with a
// WARN naming the parameter, the value and the type.
//
// ncclParamGet copies the value's native bytes: an integer parameter as an int64_t (8 bytes, host
// byte order), a String parameter as its text and the terminating NUL. *len gets the bytes
// written; when maxLen is too small the call fails and *len gets the size needed.
//
// Every failure is ncclInvalidArgument with one WARN that names the function and the argument.
// Thread safe.
#pragma once

#include <nccl.h>

#include <string>

#include "util/params.h"

namespace braid {

// The integer types of the typed getters.
enum class ParamIntType { kI8, kI16, kI32, kI64, kU8, kU16, kU32, kU64 };

// `caller` is the entry point's name, for the WARN lines.
[[nodiscard]] ncclResult_t paramQueryBind(const char* caller, const char* key, ncclParamHandle_t* out);

// Writes the value, converted to `type`, to `out` (which points to an object of that type).
[[nodiscard]] ncclResult_t paramQueryInteger(const char* caller, ncclParamHandle_t handle, ParamIntType type,
                                             void* out);

[[nodiscard]] ncclResult_t paramQueryString(const char* caller, ncclParamHandle_t handle, const char** out);

[[nodiscard]] ncclResult_t paramQueryRaw(const char* caller, ncclParamHandle_t handle, void* out, int maxLen, int* len);

[[nodiscard]] ncclResult_t paramQueryByKey(const char* caller, const char* key, const char** value, int* valueLen);

[[nodiscard]] ncclResult_t paramQueryAllKeys(const char* caller, const char*** table, int* tableLen);

// One line per parameter: name, type, value, where it came from, default and description. Through
// the logger at VERSION level (bare lines, like NCCL's dump) when NCCL_DEBUG is set; otherwise
// straight to stdout, because the caller asked for the dump explicitly and NCCL prints it whatever
// NCCL_DEBUG says.
void paramQueryDumpAll();

// The value as the API shows it: an integer parameter in decimal, a String parameter as given.
std::string paramValueText(ParamId id);

}  // namespace braid
