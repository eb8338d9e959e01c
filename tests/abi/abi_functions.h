/*
 * abi_functions.h -- the hand-written list of every function that nccl.h (NCCL 2.32.3) declares.
 *
 * Each name X stands for the pair ncclX (weak) and pncclX (global). The list is an X-macro so that
 * abi_dump (signatures) and abi_link (addresses) share it; abi_compare.sh and check-exports.sh
 * check its length against the functions they find in the headers, so a function added to nccl.h
 * but not here fails a test instead of going unchecked.
 *
 * The host side of NCCL's device API is declared by nccl_device/host.h, not nccl.h: its functions
 * are listed separately below.
 */
#ifndef BRAID_TESTS_ABI_FUNCTIONS_H_
#define BRAID_TESTS_ABI_FUNCTIONS_H_

/* 73 functions, in the order of nccl.h. */
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
  X(CommGetUniqueId)                 \
  X(CommGrow)                        \
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
  X(CommSuspend)                     \
  X(CommResume)                      \
  X(CommMemStats)                    \
  X(CommWindowRegister)              \
  X(CommWindowDeregister)            \
  X(WinGetUserPtr)                   \
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
  X(AllReduceConfig)                 \
  X(BroadcastConfig)                 \
  X(ReduceConfig)                    \
  X(AllGatherConfig)                 \
  X(ReduceScatterConfig)             \
  X(AlltoAllConfig)                  \
  X(GatherConfig)                    \
  X(ScatterConfig)                   \
  X(Send)                            \
  X(Recv)                            \
  X(PutSignal)                       \
  X(Signal)                          \
  X(WaitSignal)                      \
  X(GroupStart)                      \
  X(GroupEnd)                        \
  X(GroupSimulateEnd)                \
  X(SetEncryption)                   \
  X(ParamBind)                       \
  X(ParamGetI8)                      \
  X(ParamGetI16)                     \
  X(ParamGetI32)                     \
  X(ParamGetI64)                     \
  X(ParamGetU8)                      \
  X(ParamGetU16)                     \
  X(ParamGetU32)                     \
  X(ParamGetU64)                     \
  X(ParamGetStr)                     \
  X(ParamGet)                        \
  X(ParamGetParameter)               \
  X(ParamGetAllParameterKeys)        \
  X(ParamDumpAll)

/* The host side of the device API (22 functions of nccl_device/host.h), and two that NVIDIA's library
 * exports without declaring them in its Linux headers (Braid exports them too). */
#define NCCL_ABI_DEVICE_FUNCTIONS(X) \
  X(CommQueryProperties)             \
  X(DevCommCreate)                   \
  X(DevCommDestroy)                  \
  X(GetLsaMultimemDevicePointer)     \
  X(GetMultimemDevicePointer)        \
  X(GetLsaDevicePointer)             \
  X(GetPeerDevicePointer)            \
  X(GetMultimemDeviceLeInfo)         \
  X(GetCftDeviceLeInfo)              \
  X(GetPeerDeviceLeInfo)             \
  X(TeamWorld)                       \
  X(TeamLsa)                         \
  X(TeamCft)                         \
  X(TeamCftMultimem)                 \
  X(TeamRankToWorld)                 \
  X(TeamRankToLsa)                   \
  X(TeamRail)                        \
  X(LsaBarrierCreateRequirement)     \
  X(GinBarrierCreateRequirement)     \
  X(CftBarrierCreateRequirement)     \
  X(LLA2ACalcSlots)                  \
  X(LLA2ACreateRequirement)          \
  X(GinOutboxCreateRequirement)      \
  X(GinInboxA2ACreateRequirement)

#endif /* BRAID_TESTS_ABI_FUNCTIONS_H_ */
