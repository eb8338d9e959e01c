#include "coll.h"

#include <cstring>

#include "util/dtype.h"

namespace braidperf {
namespace {

// Indexed by Coll.
const CollTraits kColls[] = {
    {Coll::kAllReduce, "all_reduce", true, false, 1, 1, false},
    {Coll::kBroadcast, "broadcast", false, true, 1, 1, false},
    {Coll::kReduce, "reduce", true, true, 1, 1, false},
    {Coll::kAllGather, "all_gather", false, false, 1, 0, true},
    {Coll::kReduceScatter, "reduce_scatter", true, false, 0, 1, true},
    // Point-to-point based operations. Shapes as nccl-tests defines them.
    {Coll::kSendRecv, "sendrecv", false, false, 1, 1, false},
    {Coll::kAllToAll, "alltoall", false, false, 0, 0, true},
    {Coll::kGather, "gather", false, true, 1, 0, true},
    {Coll::kScatter, "scatter", false, true, 0, 1, true},
    // One-sided: sendrecv's shape, rank + 1's window receiving this rank's buffer.
    {Coll::kPutSignal, "putsignal", false, false, 1, 1, false},
};

// A row of kTypes: the element size is the library's.
constexpr TypeInfo typeRow(ncclDataType_t type, const char* name, bool isFloat, bool isSigned, int mantissaBits,
                           double exactMax) {
  return {type, name, braid::dtypeSize(type), isFloat, isSigned, mantissaBits, exactMax};
}

// Indexed by ncclDataType_t. exactMax of the wide types is a cap, not their limit.
const TypeInfo kTypes[] = {
    typeRow(ncclInt8, "int8", false, true, 0, 127),          typeRow(ncclUint8, "uint8", false, false, 0, 255),
    typeRow(ncclInt32, "int32", false, true, 0, 1 << 20),    typeRow(ncclUint32, "uint32", false, false, 0, 1 << 20),
    typeRow(ncclInt64, "int64", false, true, 0, 1 << 20),    typeRow(ncclUint64, "uint64", false, false, 0, 1 << 20),
    typeRow(ncclFloat16, "half", true, true, 10, 2048),      typeRow(ncclFloat32, "float", true, true, 23, 1 << 20),
    typeRow(ncclFloat64, "double", true, true, 52, 1 << 20), typeRow(ncclBfloat16, "bfloat16", true, true, 7, 256),
    typeRow(ncclFloat8e4m3, "f8e4m3", true, true, 3, 16),    typeRow(ncclFloat8e5m2, "f8e5m2", true, true, 2, 8),
};

struct Alias {
  const char* name;
  int value;
};

const Alias kTypeAliases[] = {
    {"int8", ncclInt8},         {"char", ncclInt8},           {"uint8", ncclUint8},         {"int32", ncclInt32},
    {"int", ncclInt32},         {"uint32", ncclUint32},       {"uint", ncclUint32},         {"int64", ncclInt64},
    {"long", ncclInt64},        {"uint64", ncclUint64},       {"ulong", ncclUint64},        {"half", ncclFloat16},
    {"float16", ncclFloat16},   {"fp16", ncclFloat16},        {"float", ncclFloat32},       {"float32", ncclFloat32},
    {"fp32", ncclFloat32},      {"double", ncclFloat64},      {"float64", ncclFloat64},     {"fp64", ncclFloat64},
    {"bfloat16", ncclBfloat16}, {"bf16", ncclBfloat16},       {"fp8_e4m3", ncclFloat8e4m3}, {"f8e4m3", ncclFloat8e4m3},
    {"e4m3", ncclFloat8e4m3},   {"fp8_e5m2", ncclFloat8e5m2}, {"f8e5m2", ncclFloat8e5m2},   {"e5m2", ncclFloat8e5m2},
};

const char* const kOpNames[] = {"sum", "prod", "max", "min", "avg", "mulsum"};  // index kMulSum last
constexpr int kNumOpNames = 6;

size_t perRank(int factor, int nranks) { return factor == 0 ? static_cast<size_t>(nranks) : factor; }

}  // namespace

const CollTraits& collTraits(Coll coll) { return kColls[static_cast<int>(coll)]; }

bool parseColl(const std::string& name, Coll* out) {
  std::string squeezed;
  for (char c : name) {
    if (c != '_') squeezed += c;
  }
  for (const CollTraits& t : kColls) {
    std::string tn;
    for (const char* p = t.name; *p; p++) {
      if (*p != '_') tn += *p;
    }
    if (name == t.name || squeezed == tn) {
      *out = t.coll;
      return true;
    }
  }
  return false;
}

bool hasInPlace(Coll coll) { return coll <= Coll::kReduceScatter; }

bool isOneSided(Coll coll) { return coll == Coll::kPutSignal; }

double busBwFactor(Coll coll, int nranks) {
  double n = nranks;
  switch (coll) {
    case Coll::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Coll::kAllGather:
    case Coll::kReduceScatter:
    case Coll::kAllToAll:
    case Coll::kGather:
    case Coll::kScatter:
      return (n - 1) / n;
    case Coll::kBroadcast:
    case Coll::kReduce:
    case Coll::kSendRecv:
    case Coll::kPutSignal:
      return 1.0;
  }
  return 1.0;
}

size_t countForBytes(Coll coll, size_t bytes, size_t elemSize, int nranks) {
  size_t elems = bytes / elemSize;
  return collTraits(coll).sizeIsTotal ? elems / static_cast<size_t>(nranks) : elems;
}

size_t bytesForCount(Coll coll, size_t count, size_t elemSize, int nranks) {
  size_t bytes = count * elemSize;
  return collTraits(coll).sizeIsTotal ? bytes * static_cast<size_t>(nranks) : bytes;
}

size_t sendElems(Coll coll, size_t count, int nranks) { return count * perRank(collTraits(coll).sendPerRank, nranks); }

size_t recvElems(Coll coll, size_t count, int nranks) { return count * perRank(collTraits(coll).recvPerRank, nranks); }

const TypeInfo& typeInfo(ncclDataType_t type) { return kTypes[static_cast<int>(type)]; }

bool parseType(const std::string& name, ncclDataType_t* out) {
  for (const Alias& a : kTypeAliases) {
    if (name == a.name) {
      *out = static_cast<ncclDataType_t>(a.value);
      return true;
    }
  }
  return false;
}

const char* opName(ncclRedOp_t op) {
  int i = static_cast<int>(op);
  return i >= 0 && i < kNumOpNames ? kOpNames[i] : "?";
}

bool parseOp(const std::string& name, ncclRedOp_t* out) {
  for (int i = 0; i < kNumOpNames; i++) {
    if (name == kOpNames[i]) {
      *out = static_cast<ncclRedOp_t>(i);
      return true;
    }
  }
  return false;
}

}  // namespace braidperf
