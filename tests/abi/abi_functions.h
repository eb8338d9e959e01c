/*
 * abi_functions.h -- the hand-written list of every function of NCCL 2.32.3's host API.
 *
 * Each name X stands for the pair ncclX (weak) and pncclX (global) that the library exports. The
 * lists are X-macros so that abi_dump (signatures), abi_dump_host, abi_link (addresses) and
 * check-exports.sh (the export table) share them; abi_compare.sh and check-exports.sh check them
 * against the functions the headers declare, so a function added to a header but not here fails a
 * test instead of going unchecked.
 */
#ifndef BRAID_TESTS_ABI_FUNCTIONS_H_
#define BRAID_TESTS_ABI_FUNCTIONS_H_

/* nccl.h: 73 functions, in the order of NCCL 2.32.3's nccl.h. */
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

/*
 * The host side of the device API. X: the 22 functions nccl_device/host.h declares (ncclX only;
 * the library exports pncclX too), in its order. U: two functions NVIDIA's library exports although
 * its headers declare them only for Windows; whoever needs U's addresses declares them itself.
 * NVIDIA's 2.32.3 library does not export ncclCftBarrierCreateRequirement, which its header declares;
 * Braid does (check-exports.sh allows exactly that difference).
 */
#define NCCL_ABI_DEVICE_FUNCTIONS(X, U) \
  X(CommQueryProperties)                \
  X(DevCommCreate)                      \
  X(DevCommDestroy)                     \
  X(GetLsaMultimemDevicePointer)        \
  X(GetMultimemDevicePointer)           \
  X(GetLsaDevicePointer)                \
  X(GetPeerDevicePointer)               \
  X(GetMultimemDeviceLeInfo)            \
  X(GetCftDeviceLeInfo)                 \
  X(GetPeerDeviceLeInfo)                \
  X(TeamWorld)                          \
  X(TeamLsa)                            \
  X(TeamCft)                            \
  X(TeamCftMultimem)                    \
  X(TeamRankToWorld)                    \
  X(TeamRankToLsa)                      \
  X(TeamRail)                           \
  X(LsaBarrierCreateRequirement)        \
  X(GinBarrierCreateRequirement)        \
  X(CftBarrierCreateRequirement)        \
  X(LLA2ACalcSlots)                     \
  X(LLA2ACreateRequirement)             \
  U(GinOutboxCreateRequirement)         \
  U(GinInboxA2ACreateRequirement)

/* The one exported function that no header declares and that has no pncclX twin; NVIDIA's library
 * exports it too. check-exports.sh reads this line. */
#define NCCL_ABI_SPECIAL_EXPORT "ncclResetDebugInitInternal"

#endif /* BRAID_TESTS_ABI_FUNCTIONS_H_ */
