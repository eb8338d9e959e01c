// BRAID_P2P_CHECK_COUNTS: before a group's sends and receives launch, each send tells its peer its
// count and datatype over the bootstrap, and each receive compares what its sender announced with
// its own, in the order both sides issued them (NCCL's matching rule). A mismatch refuses the
// receiving group with a WARN that names both ranks and both counts, where the kernels would
// otherwise desynchronise their FIFOs (a receive never writes past its own buffer, but the steps of
// the two sides no longer line up, which hangs or corrupts the next operations).
//
// Every send is announced before any receive waits, so ranks that post matching operations in any
// grouping cannot wait on each other; a sender that never comes ends in the bootstrap timeout.
#include <cstdint>

#include "bootstrap/tags.h"
#include "launch/coll_task.h"
#include "launch/comm_data_path.h"
#include "util/check.h"
#include "util/dtype.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

struct CountMessage {
  uint64_t count;
  int32_t dtype;
  int32_t pad;
};

}  // namespace

bool CommDataPath::needsP2pCountCheck() const {
  if (paramInt(ParamId::kP2pCheckCounts) == 0) return false;
  for (const P2pTask& t : p2pQueue_) {
    if (t.peer != comm_->rank_) return true;
  }
  return false;
}

ncclResult_t CommDataPath::checkP2pCounts() {
  const std::vector<P2pTask>& tasks = p2pQueue_;
  const int rank = comm_->rank_;
  if (p2pRecvCount_.empty()) p2pRecvCount_.assign(comm_->nranks_, 0);
  for (const P2pTask& t : tasks) {
    if (!t.send || t.peer == rank) continue;
    CountMessage message{t.count, static_cast<int32_t>(t.dtype), 0};
    NCCLCHECK(comm_->bootstrap_->send(t.peer, tags::kP2pCount, &message, sizeof(message)));
  }
  ncclResult_t result = ncclSuccess;
  for (const P2pTask& t : tasks) {
    if (t.send || t.peer == rank) continue;
    CountMessage sent{};
    NCCLCHECK(comm_->bootstrap_->recv(t.peer, tags::kP2pCount, &sent, sizeof(sent)));
    size_t sentBytes = sent.count * dtypeSize(static_cast<ncclDataType_t>(sent.dtype));
    uint64_t index = p2pRecvCount_[t.peer]++;
    if (sentBytes != t.bytes && result == ncclSuccess) {
      WARN(
          "rank %d: ncclRecv #%llu from rank %d expects count %zu of datatype %d (%zu bytes) but rank %d sends count "
          "%llu of datatype %d (%zu bytes); the group is refused",
          rank, static_cast<unsigned long long>(index), t.peer, t.count, static_cast<int>(t.dtype), t.bytes, t.peer,
          static_cast<unsigned long long>(sent.count), sent.dtype, sentBytes);
      result = ncclInvalidUsage;
    }
  }
  return result;
}

}  // namespace braid
