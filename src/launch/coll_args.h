// Argument checks of the collective and point-to-point entry points. A refused call returns ncclInvalidArgument with
// one WARN that names the argument, and nothing is queued or launched.
#pragma once

#include <nccl.h>

#include "launch/coll_task.h"

struct ncclComm;

namespace braid {

[[nodiscard]] ncclResult_t checkCollArgs(const ncclComm* comm, const CollTask& task, const char* caller);

// ncclSend / ncclRecv (bufName "sendbuff" or "recvbuff"): the datatype, the peer, the byte size and,
// for a nonzero count, the buffer. *bytes gets count * element size.
[[nodiscard]] ncclResult_t checkP2pArgs(const ncclComm* comm, const void* buff, const char* bufName, size_t count,
                                        ncclDataType_t dtype, int peer, const char* caller, size_t* bytes);

}  // namespace braid
