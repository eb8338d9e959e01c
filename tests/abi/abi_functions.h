/*
 * abi_functions.h -- the hand-written list of every function that nccl.h (NCCL 2.28.9) declares.
 *
 * Each name X stands for the pair ncclX (weak) and pncclX (global). The list is an X-macro so that
 * abi_dump (signatures) and abi_link (addresses) share it; abi_compare.sh and check-exports.sh
 * check its length against the functions they find in the headers, so a function added to nccl.h
 * but not here fails a test instead of going unchecked.
 *
 * The device-side API of NCCL 2.28 (nccl_device.h) is not in nccl.h; Braid exports only its two
 * host entry points, ncclDevCommCreate/ncclDevCommDestroy, listed separately below.
 */
#ifndef BRAID_TESTS_ABI_FUNCTIONS_H_
#define BRAID_TESTS_ABI_FUNCTIONS_H_

/* 41 functions, in the order of nccl.h. */
#define NCCL_ABI_HEADER_FUNCTIONS(X) \
  X(MemAlloc)                        \
  X(MemFree)                         \
  X(GetVersion)                      \
  X(GetUniqueId)                     \
  X(CommInitRankConfig)              \
  X(CommInitRank)                    \
  X(CommInitAll)                     \
  X(CommFinalize)                    \
  X(CommDestroy)                     \
  X(CommAbort)                       \
  X(CommRevoke)                      \
  X(CommSplit)                       \
  X(CommShrink)                      \
  X(CommInitRankScalable)            \
  X(GetErrorString)                  \
  X(GetLastError)                    \
  X(ResetDebugInit)                  \
  X(CommGetAsyncError)               \
  X(CommCount)                       \
  X(CommCuDevice)                    \
  X(CommUserRank)                    \
  X(CommRegister)                    \
  X(CommDeregister)                  \
  X(CommWindowRegister)              \
  X(CommWindowDeregister)            \
  X(RedOpCreatePreMulSum)            \
  X(RedOpDestroy)                    \
  X(Reduce)                          \
  X(Bcast)                           \
  X(Broadcast)                       \
  X(AllReduce)                       \
  X(ReduceScatter)                   \
  X(AllGather)                       \
  X(AlltoAll)                        \
  X(Gather)                          \
  X(Scatter)                         \
  X(Send)                            \
  X(Recv)                            \
  X(GroupStart)                      \
  X(GroupEnd)                        \
  X(GroupSimulateEnd)

/* Host entry points of the device API (NCCL declares them in nccl_device/core.h). */
#define NCCL_ABI_DEVICE_FUNCTIONS(X) \
  X(DevCommCreate)                   \
  X(DevCommDestroy)

#endif /* BRAID_TESTS_ABI_FUNCTIONS_H_ */
