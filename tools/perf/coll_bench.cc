#include "coll_bench.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "coll_check.h"
#include "compare.h"
#include "launcher.h"
#include "one_sided.h"
#include "report.h"

namespace braidperf {
namespace {

// Receive buffers have this many poisoned bytes before and after the region an operation may
// write, so that writes just outside it are caught. A multiple of 256 keeps the region aligned.
constexpr size_t kGuardBytes = 4096;

#define PERF_NCCL(rank, call)                                                                                    \
  do {                                                                                                           \
    ncclResult_t r_ = (call);                                                                                    \
    if (r_ != ncclSuccess) {                                                                                     \
      printError("rank %d: %s failed: %s (%s)", rank, #call, ncclGetErrorString(r_), ncclGetLastError(nullptr)); \
      return false;                                                                                              \
    }                                                                                                            \
  } while (0)
#define PERF_CUDA(rank, call)                                                    \
  do {                                                                           \
    cudaError_t e_ = (call);                                                     \
    if (e_ != cudaSuccess) {                                                     \
      printError("rank %d: %s failed: %s", rank, #call, cudaGetErrorString(e_)); \
      return false;                                                              \
    }                                                                            \
  } while (0)

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Largest send and receive (in place: shared) buffer any row needs.
void bufferBytes(const std::vector<RowSpec>& rows, int nranks, size_t* send, size_t* recv) {
  *send = 1;
  *recv = 1;
  for (const RowSpec& r : rows) {
    size_t es = typeInfo(r.type).size;
    size_t s = sendElems(r.coll, r.count, nranks) * es, v = recvElems(r.coll, r.count, nranks) * es;
    *send = std::max(*send, s);
    *recv = std::max(*recv, std::max(s, v));
  }
}

size_t roundUp(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

// One rank's device, stream, buffers and communicator; released in reverse order. The one-sided
// operation's windows are deregistered by the worker (all of a thread's ranks in one group) before.
struct Rank {
  int rank = 0;
  int dev = 0;  // its CUDA device (Layout::deviceOf)
  cudaStream_t stream = nullptr;
  char* send = nullptr;
  char* recvAlloc = nullptr;  // kGuardBytes | region | kGuardBytes ...
  size_t recvAllocBytes = 0;
  ncclComm_t comm = nullptr;
  bool memAlloc = false;       // -R: the buffers come from ncclMemAlloc
  void* sendHandle = nullptr;  // -R: their registrations
  void* recvHandle = nullptr;
  ncclWindow_t sendWin = nullptr;  // putsignal: the send buffer and the receive allocation as windows
  ncclWindow_t recvWin = nullptr;
  int* flag = nullptr;  // putsignal: one int for the ranks' agreements (Worker::agree)
  bool failed = false;  // after an error, abort: peers may never match what this rank left undone

  Rank() = default;
  Rank(const Rank&) = delete;
  Rank& operator=(const Rank&) = delete;
  ~Rank() {
    cudaSetDevice(dev);
    if (comm != nullptr) {
      if (sendHandle != nullptr) ncclCommDeregister(comm, sendHandle);
      if (recvHandle != nullptr) ncclCommDeregister(comm, recvHandle);
      if (failed) {
        ncclCommAbort(comm);
      } else {
        ncclCommDestroy(comm);
      }
    }
    auto release = [this](void* p) { return memAlloc ? (void)ncclMemFree(p) : (void)cudaFree(p); };
    if (send != nullptr) release(send);
    if (recvAlloc != nullptr) release(recvAlloc);
    if (flag != nullptr) cudaFree(flag);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
  char* region() const { return recvAlloc + kGuardBytes; }
};

class Worker {
 public:
  Worker(const Options& opt, const std::vector<RowSpec>& rows, const WorkerInfo& info)
      : opt_(opt), rows_(rows), info_(info), ranks_(info.gpus) {}

  bool run(const IdSource& ids, const Emit& emit) {
    bool ok = setup(ids) && runRows(emit) && releaseWindows();
    for (Rank& r : ranks_) r.failed = !ok;
    return ok;
  }

 private:
  bool runRows(const Emit& emit) {
    for (size_t i = 0; i < rows_.size(); i++) {
      const RowSpec& row = rows_[i];
      if ((i == 0 || row.type != rows_[i - 1].type || row.op != rows_[i - 1].op) && !warmGroup(i)) return false;
      std::vector<double> record;
      for (bool inPlaceColumn : {false, true}) {
        // The point-to-point operations run out of place in both columns (see hasInPlace).
        bool inPlace = inPlaceColumn && hasInPlace(row.coll);
        double us = 0, wrong = -1;
        if (!time(row, inPlace, &us)) return false;
        if (opt_.check && !check(row, inPlace, &wrong)) return false;
        record.push_back(us);
        record.push_back(wrong);
      }
      if (!emit(record)) return false;
    }
    return true;
  }
  bool setup(const IdSource& ids);
  bool allocate(Rank& r, size_t sendBytes, size_t recvBytes);
  bool registerWindows(size_t sendBytes);
  bool releaseWindows();
  bool warmGroup(size_t first);
  bool launch(const RowSpec& row, bool inPlace);
  bool call(const RowSpec& row, const Rank& r, bool inPlace);
  bool putSignalRing(const RowSpec& row, const Rank& r);
  bool noteResult(int rank, const char* what, ncclResult_t res);
  bool agree(bool mine, bool* any);
  bool syncAll();
  bool time(const RowSpec& row, bool inPlace, double* us);
  bool timeGraph(const RowSpec& row, bool inPlace, double* us);
  bool endCaptures(std::vector<cudaGraphExec_t>* execs);
  bool prepare(const RowSpec& row, const Checker& checker, Rank& r, bool inPlace);
  bool check(const RowSpec& row, bool inPlace, double* wrong);

  const Options& opt_;
  const std::vector<RowSpec>& rows_;
  WorkerInfo info_;
  std::vector<Rank> ranks_;
  std::vector<uint8_t> hostIn_, hostOut_;
  const bool oneSided_ = isOneSided(opt_.coll);
  const bool windows_ = oneSided_ || opt_.registration == 2;  // both buffers are symmetric windows
  // While a one-sided row is captured: the library's refusal is noted in refusal_ (the row is then
  // reported refused) instead of failing the run.
  bool capturing_ = false;
  std::string refusal_;
  bool refusalPrinted_ = false;
};

// Rank r's stream and buffers. The one-sided operation's buffers come from ncclMemAlloc, whole
// multiples of the window alignment, as windows need.
bool Worker::allocate(Rank& r, size_t sendBytes, size_t recvBytes) {
  r.recvAllocBytes = recvBytes + 2 * kGuardBytes;
  PERF_CUDA(r.rank, cudaSetDevice(r.dev));
  PERF_CUDA(r.rank, cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  if (opt_.registration != 0 || windows_) {
    r.memAlloc = true;
    PERF_NCCL(r.rank, ncclMemAlloc(reinterpret_cast<void**>(&r.send), sendBytes));
    PERF_NCCL(r.rank, ncclMemAlloc(reinterpret_cast<void**>(&r.recvAlloc), r.recvAllocBytes));
  } else {
    PERF_CUDA(r.rank, cudaMalloc(&r.send, sendBytes));
    PERF_CUDA(r.rank, cudaMalloc(&r.recvAlloc, r.recvAllocBytes));
  }
  if (oneSided_) PERF_CUDA(r.rank, cudaMalloc(&r.flag, sizeof(int)));
  // Defined contents for the first timed rows (garbage could hold NaNs or signalling patterns).
  PERF_CUDA(r.rank, cudaMemset(r.send, 0, sendBytes));
  PERF_CUDA(r.rank, cudaMemset(r.recvAlloc, 0, r.recvAllocBytes));
  PERF_CUDA(r.rank, cudaDeviceSynchronize());
  return true;
}

bool Worker::setup(const IdSource& ids) {
  size_t sendBytes = 0, recvBytes = 0;
  bufferBytes(rows_, info_.nranks, &sendBytes, &recvBytes);
  std::vector<std::string> missing;
  loadedOneSided(&missing);
  if (oneSided_ && !missing.empty()) {
    printError("rank %d: %s", info_.firstRank, noOneSidedText(missing).c_str());
    return false;
  }
  if (windows_ && loadedOneSided(nullptr).windowRegister == nullptr) {
    printError("rank %d: -R 2: the library has no windows (NCCL < 2.27: no ncclCommWindowRegister)", info_.firstRank);
    return false;
  }
  if (windows_) {
    sendBytes = roundUp(sendBytes, NCCL_WIN_REQUIRED_ALIGNMENT);
    recvBytes = roundUp(recvBytes, NCCL_WIN_REQUIRED_ALIGNMENT);
  }
  for (int g = 0; g < info_.gpus; g++) {
    Rank& r = ranks_[g];
    r.rank = info_.firstRank + g;
    r.dev = info_.firstDevice + g;
    if (!allocate(r, sendBytes, recvBytes)) return false;
  }
  ncclUniqueId id;
  if (!ids(0, &id)) {
    printError("rank %d: did not get the unique id", info_.firstRank);
    return false;
  }
  // Several GPUs per thread: their ncclCommInitRank calls must be in one group, or the first blocks
  // waiting for the others.
  if (info_.gpus > 1) PERF_NCCL(info_.firstRank, ncclGroupStart());
  for (Rank& r : ranks_) {
    PERF_CUDA(r.rank, cudaSetDevice(r.dev));
    PERF_NCCL(r.rank, ncclCommInitRank(&r.comm, info_.nranks, id, r.rank));
  }
  if (info_.gpus > 1) PERF_NCCL(info_.firstRank, ncclGroupEnd());
  if (windows_) return registerWindows(sendBytes);
  if (opt_.registration != 1) return true;
  for (Rank& r : ranks_) {
    PERF_CUDA(r.rank, cudaSetDevice(r.dev));
    PERF_NCCL(r.rank, ncclCommRegister(r.comm, r.send, sendBytes, &r.sendHandle));
    PERF_NCCL(r.rank, ncclCommRegister(r.comm, r.recvAlloc, r.recvAllocBytes, &r.recvHandle));
  }
  return true;
}

// Both buffers of every rank as windows (collective: one group for a thread's GPUs). The receive
// window is the whole receive allocation, guards included; puts land past the leading guard.
bool Worker::registerWindows(size_t sendBytes) {
  const OneSidedApi& api = loadedOneSided(nullptr);
  if (info_.gpus > 1) PERF_NCCL(info_.firstRank, ncclGroupStart());
  for (Rank& r : ranks_) {
    PERF_CUDA(r.rank, cudaSetDevice(r.dev));
    PERF_NCCL(r.rank, api.windowRegister(r.comm, r.send, sendBytes, &r.sendWin, NCCL_WIN_COLL_SYMMETRIC));
    PERF_NCCL(r.rank, api.windowRegister(r.comm, r.recvAlloc, r.recvAllocBytes, &r.recvWin, NCCL_WIN_COLL_SYMMETRIC));
  }
  if (info_.gpus > 1) PERF_NCCL(info_.firstRank, ncclGroupEnd());
  return true;
}

// After the last row: every put into this rank's window has landed (each was waited for), so the
// windows go before the communicators (in a group, where the library makes deregistration collective).
bool Worker::releaseWindows() {
  if (!windows_) return true;
  if (!syncAll()) return false;
  const OneSidedApi& api = loadedOneSided(nullptr);
  if (info_.gpus > 1) PERF_NCCL(info_.firstRank, ncclGroupStart());
  for (Rank& r : ranks_) {
    PERF_CUDA(r.rank, cudaSetDevice(r.dev));
    for (ncclWindow_t* win : {&r.sendWin, &r.recvWin}) {
      if (*win != nullptr) PERF_NCCL(r.rank, api.windowDeregister(r.comm, *win));
      *win = nullptr;
    }
  }
  if (info_.gpus > 1) PERF_NCCL(info_.firstRank, ncclGroupEnd());
  return true;
}

// As nccl-tests: before the rows of a (type, op), warm up at its largest size, so that one-time
// costs (connections, buffers, kernel loading) do not land in the first timed row.
bool Worker::warmGroup(size_t first) {
  size_t last = first;
  while (last + 1 < rows_.size() && rows_[last + 1].type == rows_[first].type &&
         rows_[last + 1].op == rows_[first].op) {
    last++;
  }
  for (int i = 0; i < opt_.warmup; i++) {
    if (!launch(rows_[last], false)) return false;
  }
  return syncAll();
}

bool Worker::call(const RowSpec& row, const Rank& r, bool inPlace) {
  const size_t c = row.count, offset = static_cast<size_t>(r.rank) * c * typeInfo(row.type).size;
  char* recv = r.region();
  const char* send = inPlace ? recv : r.send;
  if (inPlace && row.coll == Coll::kAllGather) send = recv + offset;
  if (inPlace && row.coll == Coll::kReduceScatter) recv += offset;
  ncclRedOp_t op = row.op;
  const bool mulSum = collTraits(row.coll).hasOp && row.op == kMulSum;
  if (mulSum) {  // as nccl-tests: made for the call, destroyed right after it
    const uint64_t scalar = encodeValue(row.type, mulSumScalar(r.rank));
    PERF_NCCL(r.rank,
              ncclRedOpCreatePreMulSum(&op, const_cast<uint64_t*>(&scalar), row.type, ncclScalarHostImmediate, r.comm));
  }
  switch (row.coll) {
    case Coll::kAllReduce:
      PERF_NCCL(r.rank, ncclAllReduce(send, recv, c, row.type, op, r.comm, r.stream));
      break;
    case Coll::kBroadcast:
      PERF_NCCL(r.rank, ncclBroadcast(send, recv, c, row.type, row.root, r.comm, r.stream));
      return true;
    case Coll::kReduce:
      PERF_NCCL(r.rank, ncclReduce(send, recv, c, row.type, op, row.root, r.comm, r.stream));
      break;
    case Coll::kAllGather:
      PERF_NCCL(r.rank, ncclAllGather(send, recv, c, row.type, r.comm, r.stream));
      return true;
    case Coll::kReduceScatter:
      PERF_NCCL(r.rank, ncclReduceScatter(send, recv, c, row.type, op, r.comm, r.stream));
      break;
    case Coll::kSendRecv: {  // ring shift, as nccl-tests measures it
      int n = info_.nranks, next = (r.rank + 1) % n, prev = (r.rank + n - 1) % n;
      PERF_NCCL(r.rank, ncclGroupStart());
      PERF_NCCL(r.rank, ncclSend(r.send, c, row.type, next, r.comm, r.stream));
      PERF_NCCL(r.rank, ncclRecv(r.region(), c, row.type, prev, r.comm, r.stream));
      PERF_NCCL(r.rank, ncclGroupEnd());
      return true;
    }
    case Coll::kAllToAll:
      PERF_NCCL(r.rank, ncclAlltoAll(r.send, r.region(), c, row.type, r.comm, r.stream));
      return true;
    case Coll::kGather:
      PERF_NCCL(r.rank, ncclGather(r.send, r.region(), c, row.type, row.root, r.comm, r.stream));
      return true;
    case Coll::kScatter:
      PERF_NCCL(r.rank, ncclScatter(r.send, r.region(), c, row.type, row.root, r.comm, r.stream));
      return true;
    case Coll::kPutSignal:
      return putSignalRing(row, r);
  }
  if (mulSum) PERF_NCCL(r.rank, ncclRedOpDestroy(op, r.comm));
  return true;
}

// The one-sided ring shift: this rank's send window into rank + 1's receive window (past its
// guard), signal 0 of context 0, then the wait for rank - 1's one signal, both on the rank's stream.
bool Worker::putSignalRing(const RowSpec& row, const Rank& r) {
  if (capturing_ && !refusal_.empty()) return true;  // the capture is abandoned already
  const OneSidedApi& api = loadedOneSided(nullptr);
  const int n = info_.nranks, next = (r.rank + 1) % n, prev = (r.rank + n - 1) % n;
  ncclResult_t res =
      api.putSignal(r.send, row.count, row.type, next, r.recvWin, kGuardBytes, 0, 0, 0, r.comm, r.stream);
  if (res != ncclSuccess) return noteResult(r.rank, "ncclPutSignal", res);
  ncclWaitSignalDesc_t wait = {1, prev, 0, 0};
  return noteResult(r.rank, "ncclWaitSignal", api.waitSignal(1, &wait, r.comm, r.stream));
}

// A failed call fails the run, except while a one-sided row is captured: then the library refused to
// capture it, which is noted (the row is reported refused once every rank knows, see timeGraph).
bool Worker::noteResult(int rank, const char* what, ncclResult_t res) {
  if (res == ncclSuccess) return true;
  const char* last = ncclGetLastError(nullptr);
  if (!capturing_) {
    printError("rank %d: %s failed: %s (%s)", rank, what, ncclGetErrorString(res), last);
    return false;
  }
  if (refusal_.empty()) {
    refusal_ = "rank " + std::to_string(rank) + ": " + what +
               " inside a CUDA graph capture: " + ncclGetErrorString(res) + " (" + (last != nullptr ? last : "") + ")";
  }
  return true;
}

bool Worker::launch(const RowSpec& row, bool inPlace) {
  if (info_.gpus > 1) PERF_NCCL(info_.firstRank, ncclGroupStart());
  for (const Rank& r : ranks_) {
    if (!call(row, r, inPlace)) return false;
  }
  if (info_.gpus > 1 && !noteResult(info_.firstRank, "ncclGroupEnd", ncclGroupEnd())) return false;
  return true;
}

// Whether any rank says yes (an eager MAX AllReduce of one int per rank, then a synchronization): the
// ranks agree on a refused capture, and it serves as a barrier around the checked one-sided call.
bool Worker::agree(bool mine, bool* any) {
  for (const Rank& r : ranks_) {
    PERF_CUDA(r.rank, cudaSetDevice(r.dev));
    PERF_CUDA(r.rank, cudaMemsetAsync(r.flag, mine ? 1 : 0, sizeof(int), r.stream));
  }
  if (info_.gpus > 1) PERF_NCCL(info_.firstRank, ncclGroupStart());
  for (const Rank& r : ranks_) {
    PERF_CUDA(r.rank, cudaSetDevice(r.dev));
    PERF_NCCL(r.rank, ncclAllReduce(r.flag, r.flag, 1, ncclInt32, ncclMax, r.comm, r.stream));
  }
  if (info_.gpus > 1) PERF_NCCL(info_.firstRank, ncclGroupEnd());
  *any = false;
  for (const Rank& r : ranks_) {
    int value = 0;
    PERF_CUDA(r.rank, cudaSetDevice(r.dev));
    PERF_CUDA(r.rank, cudaMemcpyAsync(&value, r.flag, sizeof(int), cudaMemcpyDeviceToHost, r.stream));
    PERF_CUDA(r.rank, cudaStreamSynchronize(r.stream));
    *any = *any || value != 0;
  }
  return true;
}

bool Worker::syncAll() {
  for (const Rank& r : ranks_) PERF_CUDA(r.rank, cudaStreamSynchronize(r.stream));
  return true;
}

bool Worker::time(const RowSpec& row, bool inPlace, double* us) {
  for (int i = 0; i < opt_.warmup; i++) {
    if (!launch(row, inPlace)) return false;
  }
  if (!syncAll()) return false;
  if (opt_.graphLaunches > 0) return timeGraph(row, inPlace, us);
  double t0 = nowSeconds();
  for (int i = 0; i < opt_.iters; i++) {
    if (!launch(row, inPlace)) return false;
  }
  if (!syncAll()) return false;
  *us = (nowSeconds() - t0) * 1e6 / opt_.iters;
  return true;
}

// Ends every rank's capture. After a refusal, the graphs are dropped (errors of the abandoned capture
// cleared); else each is instantiated into *execs.
bool Worker::endCaptures(std::vector<cudaGraphExec_t>* execs) {
  for (const Rank& r : ranks_) {
    cudaGraph_t graph = nullptr;
    PERF_CUDA(r.rank, cudaSetDevice(r.dev));
    if (!refusal_.empty()) {
      if (cudaStreamEndCapture(r.stream, &graph) == cudaSuccess && graph != nullptr) cudaGraphDestroy(graph);
      (void)cudaGetLastError();
      continue;
    }
    cudaGraphExec_t exec = nullptr;
    PERF_CUDA(r.rank, cudaStreamEndCapture(r.stream, &graph));
    PERF_CUDA(r.rank, cudaGraphInstantiate(&exec, graph, 0));
    PERF_CUDA(r.rank, cudaGraphDestroy(graph));
    execs->push_back(exec);
  }
  return true;
}

// As nccl-tests -G: the iterations captured once per rank's stream, the graph replayed
// graphLaunches times; the time per iteration of the replays. A one-sided row that the library
// refuses to capture on any rank is refused on every rank (they agree before any replay, as a rank
// replaying alone would wait for signals that never come): *us = kRefusedUs.
bool Worker::timeGraph(const RowSpec& row, bool inPlace, double* us) {
  for (const Rank& r : ranks_) {
    PERF_CUDA(r.rank, cudaSetDevice(r.dev));
    PERF_CUDA(r.rank, cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal));
  }
  capturing_ = oneSided_;
  refusal_.clear();
  for (int i = 0; i < opt_.iters && refusal_.empty(); i++) {
    if (!launch(row, inPlace)) return false;
  }
  capturing_ = false;
  std::vector<cudaGraphExec_t> execs;
  if (!endCaptures(&execs)) return false;
  bool refused = false;
  if (oneSided_ && !agree(!refusal_.empty(), &refused)) return false;
  if (refused) {
    if (!refusal_.empty() && !refusalPrinted_) {
      printError("%s; such sizes are reported as refused", refusal_.c_str());
      refusalPrinted_ = true;
    }
    for (size_t g = 0; g < execs.size(); g++) PERF_CUDA(ranks_[g].rank, cudaGraphExecDestroy(execs[g]));
    *us = kRefusedUs;
    return true;
  }
  for (size_t g = 0; g < ranks_.size(); g++) {
    PERF_CUDA(ranks_[g].rank, cudaSetDevice(ranks_[g].dev));
    PERF_CUDA(ranks_[g].rank, cudaGraphLaunch(execs[g], ranks_[g].stream));  // warm-up replay (uploads the graph)
  }
  if (!syncAll()) return false;
  double t0 = nowSeconds();
  for (int l = 0; l < opt_.graphLaunches; l++) {
    for (size_t g = 0; g < ranks_.size(); g++) PERF_CUDA(ranks_[g].rank, cudaGraphLaunch(execs[g], ranks_[g].stream));
  }
  if (!syncAll()) return false;
  *us = (nowSeconds() - t0) * 1e6 / (static_cast<double>(opt_.iters) * opt_.graphLaunches);
  for (size_t g = 0; g < ranks_.size(); g++) PERF_CUDA(ranks_[g].rank, cudaGraphExecDestroy(execs[g]));
  return true;
}

// Poisons rank r's receive allocation and loads its input where the operation reads it.
bool Worker::prepare(const RowSpec& row, const Checker& checker, Rank& r, bool inPlace) {
  const size_t es = typeInfo(row.type).size, n = sendElems(row.coll, row.count, info_.nranks);
  hostIn_.resize(std::max<size_t>(1, n * es));
  checker.fillInput(r.rank, hostIn_.data(), 0, n);
  char* dst = r.send;
  if (inPlace) {
    dst = r.region();
    if (row.coll == Coll::kAllGather) dst += static_cast<size_t>(r.rank) * row.count * es;
  }
  PERF_CUDA(r.rank, cudaSetDevice(r.dev));
  PERF_CUDA(r.rank, cudaMemsetAsync(r.recvAlloc, kPoison, r.recvAllocBytes, r.stream));
  PERF_CUDA(r.rank, cudaMemcpyAsync(dst, hostIn_.data(), n * es, cudaMemcpyHostToDevice, r.stream));
  // Pageable source: the copy may still read hostIn_ after returning; finish before reuse.
  PERF_CUDA(r.rank, cudaStreamSynchronize(r.stream));
  return true;
}

bool Worker::check(const RowSpec& row, bool inPlace, double* wrong) {
  CheckSpec spec;
  spec.coll = row.coll;
  spec.type = row.type;
  spec.op = row.op;
  spec.nranks = info_.nranks;
  spec.root = row.root < 0 ? 0 : row.root;
  spec.count = row.count;
  Checker checker(spec);
  for (Rank& r : ranks_) {
    if (!prepare(row, checker, r, inPlace)) return false;
  }
  // One-sided: nothing tells a rank's put that its target is ready; so a barrier after every rank
  // poisoned its window, and another (below) after every rank read it back, before the next puts.
  bool unused = false;
  if (oneSided_ && !agree(false, &unused)) return false;
  if (!launch(row, inPlace) || !syncAll()) return false;
  const size_t es = typeInfo(row.type).size;
  const size_t recvBytes = recvElems(row.coll, row.count, info_.nranks) * es;
  // In place, ReduceScatter's buffer is its (larger) input; its slice of this rank is the result.
  const size_t usedBytes = std::max(recvBytes, inPlace ? sendElems(row.coll, row.count, info_.nranks) * es : 0);
  size_t total = 0;
  for (const Rank& r : ranks_) {
    const size_t span = kGuardBytes + usedBytes + kGuardBytes;
    hostOut_.resize(span);
    PERF_CUDA(r.rank, cudaMemcpyAsync(hostOut_.data(), r.recvAlloc, span, cudaMemcpyDeviceToHost, r.stream));
    PERF_CUDA(r.rank, cudaStreamSynchronize(r.stream));
    const uint8_t* region = hostOut_.data() + kGuardBytes;
    size_t slice = inPlace && row.coll == Coll::kReduceScatter ? static_cast<size_t>(r.rank) * row.count * es : 0;
    total += Checker::countUnpoisoned(hostOut_.data(), kGuardBytes, es);
    total += Checker::countUnpoisoned(region + usedBytes, kGuardBytes, es);
    total += checker.countWrong(r.rank, inPlace, region + slice);
  }
  *wrong = static_cast<double>(total);
  return !oneSided_ || agree(false, &unused);
}

const char* layoutText(const Layout& l, char* buf, size_t size) {
  std::snprintf(buf, size, "%d ranks = %d process%s x %d thread%s x %d GPU%s", l.nranks(), l.procs,
                l.procs == 1 ? "" : "es", l.threads, l.threads == 1 ? "" : "s", l.gpus, l.gpus == 1 ? "" : "s");
  return buf;
}

// The library lacks the one-sided functions (NCCL < 2.29): says so, as a comment and, with --csv, as
// the line --compare reads (with --json, in the document), and measures nothing. Not a failure:
// there is nothing to measure.
bool reportNoOneSided(const Options& opt) {
  std::vector<std::string> missing;
  loadedOneSided(&missing);
  if (!isOneSided(opt.coll) || missing.empty()) return false;
  const std::string why = noOneSidedText(missing);
  std::printf("# braid-perf %s: %s; nothing measured\n", opt.op.c_str(), why.c_str());
  if (opt.csv) std::printf("%s\n", formatUnsupportedCsv(why).c_str());
  std::fflush(stdout);
  if (!opt.jsonPath.empty()) {
    JsonLibrary library = loadedLibrary();
    library.unsupported = why;
    (void)writeJsonReport(opt.jsonPath, singleLibraryReport(opt, opt.layout.nranks(), "", library));
  }
  return true;
}

}  // namespace

int runCollBench(const Options& opt) {
  if (reportNoOneSided(opt)) return 0;
  const int nranks = opt.layout.nranks();
  const std::vector<RowSpec> rows = planRows(opt, nranks);
  static const char* const kAverage[] = {"rank 0", "mean", "min", "max"};
  char layout[128];
  char graph[64] = "";
  if (opt.graphLaunches > 0)
    std::snprintf(graph, sizeof(graph), " in a CUDA graph replayed %d times", opt.graphLaunches);
  std::printf("# braid-perf %s: %s; %d iterations%s (+%d warm-up) per size; check %s; time: %s over ranks\n",
              opt.op.c_str(), layoutText(opt.layout, layout, sizeof(layout)), opt.iters, graph, opt.warmup,
              opt.check ? "on" : "off", kAverage[opt.average]);
  if (!opt.csv) printHeader(stdout);
  std::fflush(stdout);
  Summary summary;
  PerfReport report = singleLibraryReport(opt, nranks, layout, loadedLibrary());
  OnStep onStep = [&](int step, const std::vector<std::vector<double>>& records) {
    RowResult row = combineRecords(rows[step], nranks, opt.average, records);
    summary.add(row);
    report.rows.push_back(JsonRow{row.spec, {row}});
    std::printf("%s\n", opt.csv ? formatCsvRow(row).c_str() : formatRow(row).c_str());
    std::fflush(stdout);
  };
  WorkerBody body = [&](const WorkerInfo& info, const IdSource& ids, const Emit& emit) {
    Worker worker(opt, rows, info);
    return worker.run(ids, emit);
  };
  LaunchConfig config;
  config.layout = opt.layout;
  config.timeoutSec = opt.timeoutSec;
  IdMaker makeId = [](ncclUniqueId* id) {
    ncclResult_t r = ncclGetUniqueId(id);
    if (r != ncclSuccess) printError("ncclGetUniqueId failed: %s", ncclGetErrorString(r));
    return r == ncclSuccess;
  };
  bool ok = runWorkers(config, body, onStep, makeId);
  summary.print(stdout);
  if (!ok) printError("%s failed (see the messages above)", opt.op.c_str());
  if (!opt.jsonPath.empty() && !writeJsonReport(opt.jsonPath, report)) ok = false;
  return ok && summary.wrong() == 0 ? 0 : 1;
}

}  // namespace braidperf
