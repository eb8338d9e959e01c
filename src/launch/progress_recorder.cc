#include "launch/progress_recorder.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <cstddef>

#include "core/graph_progress.h"
#include "core/p2p_progress.h"
#include "util/log.h"

namespace braid {

ProgressRecorder::~ProgressRecorder() {
  if (registered_) (void)cudaHostUnregister(segment_.ptr());
}

void ProgressRecorder::init(uint64_t commHash, int rank, int nRanks) {
  const int pid = static_cast<int>(::getpid());
  const std::string name = progressBoardName(commHash, rank, pid);
  ShmSegment segment;
  if (ShmSegment::create(name, progressBoardBytes(nRanks), "progress board of rank " + std::to_string(rank),
                         &segment) != ncclSuccess) {
    INFO(kLogInit, "rank %d: no progress board (%s), so no hang reports for this communicator", rank, name.c_str());
    return;
  }
  segment_ = std::move(segment);
  void* devPtr = nullptr;
  cudaError_t e = cudaHostRegister(segment_.ptr(), segment_.bytes(), cudaHostRegisterPortable | cudaHostRegisterMapped);
  if (e == cudaSuccess) {
    registered_ = true;
    e = cudaHostGetDevicePointer(&devPtr, segment_.ptr(), 0);
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    INFO(kLogInit, "rank %d: progress board %s not mapped for the GPU (%s), so no hang reports", rank, name.c_str(),
         cudaGetErrorString(e));
    return;
  }
  auto* board = static_cast<ProgressBoard*>(segment_.ptr());  // zero-filled
  board->rank = rank;
  board->pid = pid;
  board->nRanks = nRanks;
  __atomic_store_n(&board->magic, kProgressBoardMagic, __ATOMIC_RELEASE);
  board_ = board;
  devEagerWaits_ = reinterpret_cast<DevWaitNotes*>(static_cast<char*>(devPtr) + offsetof(ProgressBoard, eagerWaits));
  devP2pWaits_ = reinterpret_cast<DevWaitNotes*>(static_cast<char*>(devPtr) + offsetof(ProgressBoard, p2pWaits));
  devGraphWaits_ = reinterpret_cast<DevWaitNotes*>(static_cast<char*>(devPtr) + offsetof(ProgressBoard, graphWaits));
  devP2pGraphWaits_ =
      reinterpret_cast<DevWaitNotes*>(static_cast<char*>(devPtr) + offsetof(ProgressBoard, p2pGraphWaits));
}

namespace {

OpRecord opRecordFor(const CollTask& task, int nChannels) {
  OpRecord op{};
  op.count = task.count;
  op.launchNs = monotonicNs();
  op.nChannels = nChannels;
  op.root = task.root;
  op.coll = static_cast<uint8_t>(task.coll);
  op.dtype = static_cast<uint8_t>(task.dtype);
  op.userOp = hasUserOp(task) ? 1 : 0;
  op.op = static_cast<int8_t>(hasUserOp(task) ? 0 : task.op);
  return op;
}

}  // namespace

void ProgressRecorder::noteLaunch(const CollTask& task, int nChannels, DevWork* work) {
  if (board_ == nullptr) return;
  OpRecord op = opRecordFor(task, nChannels);
  op.seq = ++seq_;
  braid::noteLaunch(board_, op);
  work->seq = op.seq;
  work->waitNotes = devEagerWaits_;
  work->captured = 0;
}

void ProgressRecorder::noteCapture(const CollTask& task, int nChannels, DevWork* work) {
  if (board_ == nullptr) return;
  work->seq = braid::noteCapture(board_, opRecordFor(task, nChannels));
  work->waitNotes = devGraphWaits_;
  work->captured = 1;
}

const std::vector<P2pOpPosted>& ProgressRecorder::postedOps(const std::vector<P2pTask>& tasks) {
  p2pOps_.clear();  // kept between launches: no allocation on the launch path once it has grown
  for (const P2pTask& t : tasks) p2pOps_.push_back(P2pOpPosted{t.peer, t.send, t.bytes});
  return p2pOps_;
}

void ProgressRecorder::noteP2pLaunch(const std::vector<P2pTask>& tasks, int nCtas, uint64_t* seq,
                                     DevWaitNotes** waitNotes) {
  *seq = 0;
  *waitNotes = nullptr;
  if (board_ == nullptr) return;
  *seq = braid::noteP2pLaunch(board_, nCtas, monotonicNs(), postedOps(tasks));
  *waitNotes = devP2pWaits_;
}

void ProgressRecorder::noteP2pCapture(const std::vector<P2pTask>& tasks, int nCtas, uint64_t* capture,
                                      DevWaitNotes** waitNotes) {
  *capture = 0;
  *waitNotes = nullptr;
  if (board_ == nullptr) return;
  *capture = braid::noteP2pCapture(board_, nCtas, postedOps(tasks));
  *waitNotes = devP2pGraphWaits_;
}

}  // namespace braid
