#include "launch/watch_link.h"

namespace braid {
namespace {

watch::OpRecord opRecordFor(const CollTask& task, int nChannels) {
  watch::OpRecord op{};
  op.count = task.count;
  op.launchNs = watch::monotonicNs();
  op.nChannels = nChannels;
  op.root = task.root;
  op.coll = static_cast<uint8_t>(task.coll);
  op.dtype = static_cast<uint8_t>(task.dtype);
  op.userOp = hasUserOp(task) ? 1 : 0;
  op.op = static_cast<int8_t>(hasUserOp(task) ? 0 : task.op);
  return op;
}

}  // namespace

WatchLink::~WatchLink() {
  if (watch_ == nullptr) return;
  if (lentAbortWord_) watch_->abortFlag().lendKernelWord(nullptr);
  watch_->detachDataPath();
}

void WatchLink::attach(watch::CommWatch* watch, cudaEvent_t latestLaunch, bool board) {
  watch_ = watch;
  watch_->attachDataPath(latestLaunch, board);
}

void WatchLink::lendAbortWord(int* hostMapped) {
  if (watch_ == nullptr || lentAbortWord_) return;
  watch_->abortFlag().lendKernelWord(hostMapped);
  lentAbortWord_ = true;
}

watch::ProgressRecorder* WatchLink::recorder() const {
  return watch_ != nullptr && watch_->recorder().board() != nullptr ? &watch_->recorder() : nullptr;
}

void WatchLink::noteLaunch(const CollTask& task, int nChannels, DevWork* work) {
  if (watch::ProgressRecorder* r = recorder()) r->noteLaunch(opRecordFor(task, nChannels), work);
}

void WatchLink::noteCapture(const CollTask& task, int nChannels, DevWork* work) {
  if (watch::ProgressRecorder* r = recorder()) r->noteCapture(opRecordFor(task, nChannels), work);
}

const std::vector<watch::P2pOpPosted>& WatchLink::postedOps(const std::vector<P2pTask>& tasks) {
  p2pOps_.clear();  // kept between launches: no allocation on the launch path once it has grown
  for (const P2pTask& t : tasks) p2pOps_.push_back(watch::P2pOpPosted{t.peer, t.send, t.bytes});
  return p2pOps_;
}

void WatchLink::noteP2pLaunch(const std::vector<P2pTask>& tasks, int nCtas, uint64_t* seq, DevWaitNotes** waitNotes) {
  *seq = 0;
  *waitNotes = nullptr;
  if (watch::ProgressRecorder* r = recorder()) r->noteP2pLaunch(postedOps(tasks), nCtas, seq, waitNotes);
}

void WatchLink::noteP2pCapture(const std::vector<P2pTask>& tasks, int nCtas, uint64_t* capture,
                               DevWaitNotes** waitNotes) {
  *capture = 0;
  *waitNotes = nullptr;
  if (watch::ProgressRecorder* r = recorder()) r->noteP2pCapture(postedOps(tasks), nCtas, capture, waitNotes);
}

void WatchLink::noteRecorded() {
  if (watch::ProgressRecorder* r = recorder()) r->noteRecorded();
}

}  // namespace braid
