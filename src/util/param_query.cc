// Queries of the parameter registry by name and by handle (see param_query.h for the contract).
//
// A handle is the address of the parameter's entry in the registry's static table of ParamInfo
// (paramInfo returns elements of one array that lives as long as the library), so binding
// allocates nothing and a handle can be checked: it must point exactly at an element.
#include "util/param_query.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "util/check.h"
#include "util/log.h"
#include "util/text.h"

namespace braid {

namespace {

constexpr int kParamCount = static_cast<int>(ParamId::kCount);

// The strings and tables a thread was handed, each valid until the thread makes the same kind of
// call again (the lifetime NCCL's API documents). One object per thread, so that concurrent
// callers never overwrite each other's results.
struct ThreadResults {
  std::string str;                // ncclParamGetStr
  std::string parameter;          // ncclParamGetParameter
  std::vector<const char*> keys;  // ncclParamGetAllParameterKeys (names point into the static table)
};

ThreadResults& threadResults() {
  thread_local ThreadResults results;
  return results;
}

struct IntTypeInfo {
  const char* name;
  int64_t min;
  uint64_t max;
};

// Indexed by ParamIntType.
constexpr IntTypeInfo kIntTypes[] = {
    {"int8_t", INT8_MIN, INT8_MAX},    {"int16_t", INT16_MIN, INT16_MAX}, {"int32_t", INT32_MIN, INT32_MAX},
    {"int64_t", INT64_MIN, INT64_MAX}, {"uint8_t", 0, UINT8_MAX},         {"uint16_t", 0, UINT16_MAX},
    {"uint32_t", 0, UINT32_MAX},       {"uint64_t", 0, UINT64_MAX},
};
static_assert(sizeof(kIntTypes) / sizeof(kIntTypes[0]) == static_cast<size_t>(ParamIntType::kU64) + 1,
              "one entry per ParamIntType");

bool fits(int64_t value, const IntTypeInfo& type) {
  if (value < type.min) return false;
  return value < 0 || static_cast<uint64_t>(value) <= type.max;
}

template <typename T>
void storeAs(int64_t value, void* out) {
  const T typed = static_cast<T>(value);
  std::memcpy(out, &typed, sizeof(typed));
}

void storeInteger(int64_t value, ParamIntType type, void* out) {
  switch (type) {
    case ParamIntType::kI8:
      return storeAs<int8_t>(value, out);
    case ParamIntType::kI16:
      return storeAs<int16_t>(value, out);
    case ParamIntType::kI32:
      return storeAs<int32_t>(value, out);
    case ParamIntType::kI64:
      return storeAs<int64_t>(value, out);
    case ParamIntType::kU8:
      return storeAs<uint8_t>(value, out);
    case ParamIntType::kU16:
      return storeAs<uint16_t>(value, out);
    case ParamIntType::kU32:
      return storeAs<uint32_t>(value, out);
    case ParamIntType::kU64:
      return storeAs<uint64_t>(value, out);
  }
}

ncclParamHandle_t handleOf(ParamId id) {
  // The handle type is opaque to callers; they only hand it back.
  return reinterpret_cast<ncclParamHandle_t>(const_cast<ParamInfo*>(&paramInfo(id)));
}

// The parameter a handle names, or false for anything ncclParamBind did not return.
bool idOfHandle(ncclParamHandle_t handle, ParamId* id) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(handle);
  const uintptr_t base = reinterpret_cast<uintptr_t>(&paramInfo(static_cast<ParamId>(0)));
  if (address < base) return false;
  const uintptr_t offset = address - base;
  if (offset % sizeof(ParamInfo) != 0 || offset / sizeof(ParamInfo) >= static_cast<uintptr_t>(kParamCount)) {
    return false;
  }
  *id = static_cast<ParamId>(offset / sizeof(ParamInfo));
  return handleOf(*id) == handle;
}

bool findParam(const char* key, ParamId* id) {
  for (int i = 0; i < kParamCount; ++i) {
    if (std::strcmp(paramInfo(static_cast<ParamId>(i)).name, key) == 0) {
      *id = static_cast<ParamId>(i);
      return true;
    }
  }
  return false;
}

ncclResult_t nullArgument(const char* caller, const char* argument) {
  WARN("%s: %s is NULL", caller, argument);
  return ncclInvalidArgument;
}

ncclResult_t checkHandle(const char* caller, ncclParamHandle_t handle, ParamId* id) {
  if (handle == nullptr) return nullArgument(caller, "handle");
  if (!idOfHandle(handle, id)) {
    WARN("%s: handle %p is not a parameter handle from ncclParamBind", caller, static_cast<void*>(handle));
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t unknownKey(const char* caller, const char* key) {
  WARN(
      "%s: no parameter is named '%s' (a key is the full variable name, such as NCCL_BUFFSIZE; "
      "ncclParamGetAllParameterKeys lists them)",
      caller, key);
  return ncclInvalidArgument;
}

// The value as an integer: an integer parameter's number, or a String parameter's text parsed.
ncclResult_t integerValue(const char* caller, ParamId id, const IntTypeInfo& type, int64_t* value) {
  const ParamInfo& info = paramInfo(id);
  if (info.type == ParamType::kInt) {
    *value = paramInt(id);
    return ncclSuccess;
  }
  const std::string& text = paramString(id);
  if (parseInt64(text, value) != ncclSuccess) {
    WARN("%s: %s has the value '%s' (from %s), which is not an integer, so %s cannot hold it", caller, info.name,
         text.c_str(), paramSource(id).c_str(), type.name);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

const char* typeName(ParamType type) { return type == ParamType::kInt ? "integer" : "string"; }

std::string orUnset(const std::string& text) { return text.empty() ? "<unset>" : text; }

std::string dumpLine(ParamId id) {
  const ParamInfo& info = paramInfo(id);
  // A secret's text is never printed, only whether it is set.
  const std::string value = id == ParamId::kCommSecret && paramIsSet(id) ? "<hidden>" : paramValueText(id);
  return std::string(info.name) + " (" + typeName(info.type) + ") value=" + orUnset(value) +
         " set_by=" + paramSource(id) + " default=" + orUnset(info.defaultText) + ": " + info.description;
}

}  // namespace

std::string paramValueText(ParamId id) {
  if (paramInfo(id).type == ParamType::kInt) return std::to_string(paramInt(id));
  return paramString(id);
}

ncclResult_t paramQueryBind(const char* caller, const char* key, ncclParamHandle_t* out) {
  if (out == nullptr) return nullArgument(caller, "out");
  if (key == nullptr) return nullArgument(caller, "key");
  ParamId id{};
  if (!findParam(key, &id)) return unknownKey(caller, key);
  *out = handleOf(id);
  return ncclSuccess;
}

ncclResult_t paramQueryInteger(const char* caller, ncclParamHandle_t handle, ParamIntType type, void* out) {
  ParamId id{};
  NCCLCHECK(checkHandle(caller, handle, &id));
  if (out == nullptr) return nullArgument(caller, "out");
  const IntTypeInfo& typeInfo = kIntTypes[static_cast<int>(type)];
  int64_t value = 0;
  NCCLCHECK(integerValue(caller, id, typeInfo, &value));
  if (!fits(value, typeInfo)) {
    WARN("%s: %s has the value %lld (from %s), which %s cannot hold", caller, paramInfo(id).name,
         static_cast<long long>(value), paramSource(id).c_str(), typeInfo.name);
    return ncclInvalidArgument;
  }
  storeInteger(value, type, out);
  return ncclSuccess;
}

ncclResult_t paramQueryString(const char* caller, ncclParamHandle_t handle, const char** out) {
  ParamId id{};
  NCCLCHECK(checkHandle(caller, handle, &id));
  if (out == nullptr) return nullArgument(caller, "out");
  std::string& buffer = threadResults().str;
  buffer = paramValueText(id);
  *out = buffer.c_str();
  return ncclSuccess;
}

ncclResult_t paramQueryRaw(const char* caller, ncclParamHandle_t handle, void* out, int maxLen, int* len) {
  ParamId id{};
  NCCLCHECK(checkHandle(caller, handle, &id));
  if (out == nullptr) return nullArgument(caller, "out");
  if (len == nullptr) return nullArgument(caller, "len");
  const ParamInfo& info = paramInfo(id);
  int64_t number = 0;
  std::string text;
  const void* bytes = nullptr;
  size_t size = 0;
  if (info.type == ParamType::kInt) {
    number = paramInt(id);
    bytes = &number;
    size = sizeof(number);
  } else {
    text = paramString(id);
    bytes = text.c_str();
    size = text.size() + 1;  // with its NUL, so that the copy is a C string
  }
  if (maxLen < 0 || static_cast<size_t>(maxLen) < size) {
    WARN("%s: %s needs %zu bytes, maxLen is %d", caller, info.name, size, maxLen);
    *len = static_cast<int>(size);
    return ncclInvalidArgument;
  }
  std::memcpy(out, bytes, size);
  *len = static_cast<int>(size);
  return ncclSuccess;
}

ncclResult_t paramQueryByKey(const char* caller, const char* key, const char** value, int* valueLen) {
  if (key == nullptr) return nullArgument(caller, "key");
  if (value == nullptr) return nullArgument(caller, "value");
  if (valueLen == nullptr) return nullArgument(caller, "valueLen");
  ParamId id{};
  if (!findParam(key, &id)) {
    *value = nullptr;
    *valueLen = 0;
    return unknownKey(caller, key);
  }
  std::string& buffer = threadResults().parameter;
  buffer = paramValueText(id);
  *value = buffer.c_str();
  *valueLen = static_cast<int>(buffer.size());
  return ncclSuccess;
}

ncclResult_t paramQueryAllKeys(const char* caller, const char*** table, int* tableLen) {
  if (table == nullptr) return nullArgument(caller, "table");
  if (tableLen == nullptr) return nullArgument(caller, "tableLen");
  // Rebuilt on every call: the caller may have written into the previous table.
  std::vector<const char*>& keys = threadResults().keys;
  keys.clear();
  for (int i = 0; i < kParamCount; ++i) keys.push_back(paramInfo(static_cast<ParamId>(i)).name);
  *table = keys.data();
  *tableLen = static_cast<int>(keys.size());
  return ncclSuccess;
}

void paramQueryDumpAll() {
  std::vector<std::string> lines;
  lines.push_back("Braid parameters (" + std::to_string(kParamCount) + "): name (type) value set_by default");
  for (int i = 0; i < kParamCount; ++i) lines.push_back(dumpLine(static_cast<ParamId>(i)));
  if (logEnabled(LogLevel::kVersion, kLogEnv)) {
    for (const std::string& line : lines)
      logMessage(LogLevel::kVersion, kLogEnv, __FILE__, __LINE__, "%s", line.c_str());
    return;
  }
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace braid
