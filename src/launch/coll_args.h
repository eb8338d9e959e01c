// Argument checks of the collective and point-to-point entry points. A refused call returns
// ncclInvalidArgument with one WARN that names the argument, and nothing is queued or launched.
#pragma once

#include <nccl.h>

#include <cstddef>

#include "launch/coll_task.h"

struct ncclComm;

namespace braid {

// The single-argument checks the entry points share. Each WARNs naming caller and argument.
// checkDatatype sets *elemSize; checkRank names the rank argument (`name`: "root", "peer");
// checkCount refuses a count whose bytes, times `blocks` per-rank blocks, overflow size_t;
// checkBuffer refuses NULL with a nonzero count and, under NCCL_CHECK_POINTERS=1, memory that is
// not the communicator's GPU's.
[[nodiscard]] ncclResult_t checkDatatype(const ncclComm* comm, ncclDataType_t dtype, const char* caller,
                                         size_t* elemSize);
[[nodiscard]] ncclResult_t checkRank(const ncclComm* comm, int rank, const char* name, const char* caller);
[[nodiscard]] ncclResult_t checkCount(const ncclComm* comm, size_t count, size_t elemSize, size_t blocks,
                                      const char* caller);
[[nodiscard]] ncclResult_t checkBuffer(const ncclComm* comm, const void* buff, const char* name, size_t count,
                                       const char* caller);

[[nodiscard]] ncclResult_t checkCollArgs(const ncclComm* comm, const CollTask& task, const char* caller);

// ncclSend / ncclRecv (bufName "sendbuff" or "recvbuff"): the datatype, the peer, the byte size and,
// for a nonzero count, the buffer. *bytes gets count * element size.
[[nodiscard]] ncclResult_t checkP2pArgs(const ncclComm* comm, const void* buff, const char* bufName, size_t count,
                                        ncclDataType_t dtype, int peer, const char* caller, size_t* bytes);

}  // namespace braid
