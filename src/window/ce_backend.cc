#include "window/ce_backend.h"

#include <map>

#include "cuda/cuda_check.h"
#include "device/signal_add.h"
#include "util/check.h"
#include "util/log.h"

namespace braid::window {
namespace {

// Whether this GPU adds atomically to every GPU it may map peers' memory from (over NVLink it
// does; over PCIe often not). Peers in other processes name their GPUs in their own numbering, so
// every visible GPU that this one can reach is asked.
std::string graphAtomicsMissing(const WindowContext& ctx) {
  if (ctx.lsaSize == 1) return "";
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  for (int dev = 0; dev < count; ++dev) {
    int access = 0, atomics = 0;
    if (dev == ctx.cudaDev || cudaDeviceCanAccessPeer(&access, ctx.cudaDev, dev) != cudaSuccess || access == 0)
      continue;
    if (cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, ctx.cudaDev, dev) != cudaSuccess ||
        atomics == 0) {
      (void)cudaGetLastError();
      return "GPU " + std::to_string(ctx.cudaDev) + " has no native atomics on GPU " + std::to_string(dev) +
             " (no NVLink between them), which one-sided signals inside CUDA graphs use";
    }
  }
  (void)cudaGetLastError();
  return "";
}

}  // namespace

CeBackend::CeBackend(const CudaDriver* drv, const WindowContext& ctx, const SignalPad& pad)
    : drv_(drv),
      ctx_(ctx),
      pad_(pad),
      noGraph_(graphAtomicsMissing(ctx)),
      sent_(pad.layout().words(), 0),
      expect_(pad.layout().words(), 0) {}

ncclResult_t CeBackend::copy(void* dst, const void* src, uint64_t bytes, cudaStream_t stream) const {
  const std::string what = "one-sided copy of rank " + std::to_string(ctx_.rank);
  CUDACHECK_AT(what, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  return ncclSuccess;
}

ncclResult_t CeBackend::checkGraph() const {
  if (noGraph_.empty()) return ncclSuccess;
  WARN("one-sided operation captured in a CUDA graph on rank %d: %s", ctx_.rank, noGraph_.c_str());
  return ncclInvalidUsage;
}

ncclResult_t CeBackend::put(const PutOp& op, bool graph, cudaStream_t stream) {
  return graph ? putGraph(op, stream) : putEager(op, stream);
}

ncclResult_t CeBackend::wait(const std::vector<WaitOp>& waits, bool graph, cudaStream_t stream) {
  return graph ? waitGraph(waits, stream) : waitEager(waits, stream);
}

ncclResult_t CeBackend::putEager(const PutOp& op, cudaStream_t stream) {
  const PadLayout& l = pad_.layout();
  if (op.bytes > 0) NCCLCHECK(copy(op.dst, op.src, op.bytes, stream));
  uint64_t count = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    count = ++sent_[l.index(op.ctx, op.sig, op.peer)];
  }
  MemOps ops(drv_);
  char* stage = local(l.stage(op.ctx, op.sig, op.peer));
  ops.write(stage, count);
  NCCLCHECK(ops.enqueue(stream));
  return copy(pad_.peer(ctx_.lsaOf(op.peer), l.count(op.ctx, op.sig, ctx_.rank)), stage, sizeof(uint64_t), stream);
}

ncclResult_t CeBackend::putGraph(const PutOp& op, cudaStream_t stream) {
  NCCLCHECK(checkGraph());
  const PadLayout& l = pad_.layout();
  if (op.bytes > 0) NCCLCHECK(copy(op.dst, op.src, op.bytes, stream));
  SignalAdds adds{};
  adds.add(
      reinterpret_cast<unsigned long long*>(pad_.peer(ctx_.lsaOf(op.peer), l.graphCount(op.ctx, op.sig, ctx_.rank))),
      1);
  CUDACHECK_AT(std::string("one-sided signal in a graph"), launchSignalAdds(adds, stream));
  return ncclSuccess;
}

ncclResult_t CeBackend::waitEager(const std::vector<WaitOp>& waits, cudaStream_t stream) {
  const PadLayout& l = pad_.layout();
  MemOps ops(drv_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const WaitOp& op : waits) {
      uint64_t& expected = expect_[l.index(op.ctx, op.sig, op.peer)];
      expected += static_cast<uint64_t>(op.count);
      ops.waitGeq(local(l.count(op.ctx, op.sig, op.peer)), expected);
    }
  }
  return ops.enqueue(stream);
}

ncclResult_t CeBackend::waitGraph(const std::vector<WaitOp>& waits, cudaStream_t stream) {
  NCCLCHECK(checkGraph());
  const PadLayout& l = pad_.layout();
  // Descriptors of one word are summed: the wait is for all of them, then all are taken away.
  std::map<uint64_t, uint64_t> outstanding;
  for (const WaitOp& op : waits) outstanding[l.graphCount(op.ctx, op.sig, op.peer)] += static_cast<uint64_t>(op.count);
  MemOps ops(drv_);
  for (const auto& [offset, count] : outstanding) ops.waitGeq(local(offset), count);
  NCCLCHECK(ops.enqueue(stream));
  SignalAdds adds{};
  for (auto it = outstanding.begin(); it != outstanding.end();) {
    adds.add(reinterpret_cast<unsigned long long*>(local(it->first)), ~it->second + 1);  // minus the count
    ++it;
    if (adds.count == kMaxSignalAdds || it == outstanding.end()) {
      CUDACHECK_AT(std::string("one-sided wait in a graph"), launchSignalAdds(adds, stream));
      adds.count = 0;
    }
  }
  return ncclSuccess;
}

void CeBackend::releaseWaits() {
  // Every word a wait of this rank may block on gets a value that ends it: the counts what this
  // rank expects, the graph counts a value past any opCnt. Written through a private stream (the
  // blocked ones are stuck), then waited for.
  const PadLayout& l = pad_.layout();
  std::vector<uint64_t> image(l.words() * 2, uint64_t{1} << 62);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (uint64_t i = 0; i < l.words(); ++i) image[i] = expect_[i];
  }
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  cudaError_t err =
      cudaMemcpyAsync(pad_.local(), image.data(), image.size() * sizeof(uint64_t), cudaMemcpyHostToDevice, stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    INFO(kLogAlloc, "one-sided teardown: releasing the waits of rank %d failed: %s", ctx_.rank,
         cudaGetErrorString(err));
  }
  (void)cudaStreamDestroy(stream);
}

}  // namespace braid::window
