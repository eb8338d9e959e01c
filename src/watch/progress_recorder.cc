#include "watch/progress_recorder.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <cstddef>

#include "util/log.h"
#include "watch/graph_progress.h"
#include "watch/p2p_progress.h"

namespace braid::watch {

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

void ProgressRecorder::noteLaunch(OpRecord op, DevWork* work) {
  if (board_ == nullptr) return;
  op.seq = ++seq_;
  watch::noteLaunch(board_, op);
  work->seq = op.seq;
  work->waitNotes = devEagerWaits_;
  work->captured = 0;
}

void ProgressRecorder::noteCapture(const OpRecord& op, DevWork* work) {
  if (board_ == nullptr) return;
  work->seq = watch::noteCapture(board_, op);
  work->waitNotes = devGraphWaits_;
  work->captured = 1;
}

void ProgressRecorder::noteP2pLaunch(const std::vector<P2pOpPosted>& ops, int nCtas, uint64_t* seq,
                                     DevWaitNotes** waitNotes) {
  *seq = 0;
  *waitNotes = nullptr;
  if (board_ == nullptr) return;
  *seq = watch::noteP2pLaunch(board_, nCtas, monotonicNs(), ops);
  *waitNotes = devP2pWaits_;
}

void ProgressRecorder::noteP2pCapture(const std::vector<P2pOpPosted>& ops, int nCtas, uint64_t* capture,
                                      DevWaitNotes** waitNotes) {
  *capture = 0;
  *waitNotes = nullptr;
  if (board_ == nullptr) return;
  *capture = watch::noteP2pCapture(board_, nCtas, ops);
  *waitNotes = devP2pGraphWaits_;
}

}  // namespace braid::watch
