// What braid-perf knows about the operations it measures, the NCCL datatypes and reduction ops:
// names (nccl-tests spellings and aliases), element sizes, buffer shapes and bus-bandwidth factors.
// Host-only and CUDA-free, so the unit tests check it on any machine.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <string>

namespace braidperf {

// The measured operations. kSendRecv is nccl-tests' ring shift (send to rank + 1, receive from
// rank - 1, one group). kPutSignal is the same ring shift done one-sided (NCCL 2.29+): ncclPutSignal
// into rank + 1's window, then ncclWaitSignal for rank - 1's signal.
enum class Coll {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kSendRecv,
  kAllToAll,
  kGather,
  kScatter,
  kPutSignal
};

struct CollTraits {
  Coll coll;
  const char* name;  // "all_reduce"
  bool hasOp;        // reduces (prints its redop; else "none")
  bool hasRoot;      // rooted (prints its root; else -1)
  int sendPerRank;   // send buffer = count * sendPerRank elements, with sendPerRank 0 meaning nranks
  int recvPerRank;   // receive buffer = count * recvPerRank elements, 0 meaning nranks
  bool sizeIsTotal;  // nccl-tests "size" is count * nranks * elemSize (AllGather output, ReduceScatter input)
};

const CollTraits& collTraits(Coll coll);
// Parses an operation name (nccl-tests style, e.g. "all_reduce"; also "allreduce"). False if unknown.
bool parseColl(const std::string& name, Coll* out);

// False for the point-to-point operations: their "in-place" columns repeat the out-of-place run (an
// in-place ring shift overwrites data not yet sent; NVIDIA's NCCL leaves in-place AlltoAll's result
// undefined, so --compare would count its elements wrong; in-place Gather and Scatter are in place on
// the root only).
bool hasInPlace(Coll coll);
// True for the one-sided operations: their buffers are ncclMemAlloc memory registered as symmetric
// windows, and the library may lack them (NCCL < 2.29).
bool isOneSided(Coll coll);

// busbw = algbw * factor: AllReduce 2(n-1)/n, AllGather/ReduceScatter/AlltoAll/Gather/Scatter (n-1)/n,
// others (Broadcast, Reduce, sendrecv, putsignal) 1.
double busBwFactor(Coll coll, int nranks);

// The NCCL `count` argument for an nccl-tests size in bytes (rounded down to whole elements, and
// for AllGather/ReduceScatter to whole elements per rank).
size_t countForBytes(Coll coll, size_t bytes, size_t elemSize, int nranks);
// The nccl-tests size of a call with that count: count * elemSize, times nranks where sizeIsTotal.
size_t bytesForCount(Coll coll, size_t count, size_t elemSize, int nranks);
// Elements in the send / receive buffer of one rank for a call with that count.
size_t sendElems(Coll coll, size_t count, int nranks);
size_t recvElems(Coll coll, size_t count, int nranks);

struct TypeInfo {
  ncclDataType_t type;
  const char* name;  // as nccl-tests prints it
  size_t size;
  bool isFloat;
  bool isSigned;
  int mantissaBits;  // explicit mantissa bits of a float type (0 for integers)
  double exactMax;   // every integer in [-exactMax, exactMax] is exact in the type (capped for wide types)
};

const TypeInfo& typeInfo(ncclDataType_t type);
// Parses a type name: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 fp8_e4m3 fp8_e5m2
// and the aliases char, int, uint, long, ulong, float16, fp16, float32, fp32, float64, fp64, bf16,
// f8e4m3, e4m3, f8e5m2, e5m2. False if unknown.
bool parseType(const std::string& name, ncclDataType_t* out);

// One measured call of a sweep: its nccl-tests size and the NCCL count argument derived from it.
struct RowSpec {
  Coll coll = Coll::kAllReduce;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int root = -1;     // -1 where the operation has none
  size_t bytes = 0;  // nccl-tests "size"
  size_t count = 0;  // NCCL count argument
};

// nccl-tests' "mulsum": a ncclRedOpCreatePreMulSum op that each rank creates for every call, with
// its scalar mulSumScalar(rank) (host-immediate), and destroys after it. Stands for it in options.
constexpr ncclRedOp_t kMulSum = ncclNumOps;
// 2 on even ranks, 0 on odd ones: the products are exact in every type, and the weights add up to
// at most n (+1), so the sum pattern's range still fits fp8 e5m2's exact integers.
inline double mulSumScalar(int rank) { return rank % 2 == 0 ? 2 : 0; }
const char* opName(ncclRedOp_t op);  // "sum", "prod", "max", "min", "avg", "mulsum"
bool parseOp(const std::string& name, ncclRedOp_t* out);

}  // namespace braidperf
