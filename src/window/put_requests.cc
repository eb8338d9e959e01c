#include "window/put_requests.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "cuda/cuda_check.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "window/mem_ops.h"

namespace braid::window {
namespace {

// `words` 64-bit words of host memory mapped for the GPU, zeroed: host and device addresses.
ncclResult_t mappedWords(size_t words, const std::string& what, uint64_t** host, uint64_t** dev) {
  void* mem = nullptr;
  CUDACHECK_AT(what, cudaHostAlloc(&mem, words * sizeof(uint64_t), cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(mem, 0, words * sizeof(uint64_t));
  *host = static_cast<uint64_t*>(mem);
  void* device = nullptr;
  CUDACHECK_AT(what, cudaHostGetDevicePointer(&device, mem, 0));
  *dev = static_cast<uint64_t*>(device);
  return ncclSuccess;
}

}  // namespace

PutRequests::~PutRequests() {
  graphReleases_->close();
  if (readyHost_ != nullptr) (void)cudaFreeHost(readyHost_);
  if (requestHost_ != nullptr) (void)cudaFreeHost(requestHost_);
}

ncclResult_t PutRequests::allocate(const std::string& what) {
  NCCLCHECK(mappedWords(2 * kPutSlots, what, &readyHost_, &readyDev_));
  doneHost_ = readyHost_ + kPutSlots;
  doneDev_ = readyDev_ + kPutSlots;
  NCCLCHECK(mappedWords(2 * kNetGraphPuts, what, &requestHost_, &requestDev_));
  graphDoneHost_ = requestHost_ + kNetGraphPuts;
  graphDoneDev_ = requestDev_ + kNetGraphPuts;
  return ncclSuccess;
}

ncclResult_t PutRequests::enqueueEager(const CudaDriver* drv, const NetPut& op, cudaStream_t stream,
                                       const std::atomic<bool>& failed, const std::string& who) {
  uint64_t seq = 0;
  {
    // The slot of put n is reused by put n + kPutSlots: that many may wait for their streams at most.
    const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(paramInt(ParamId::kBootstrapTimeout));
    std::unique_lock<std::mutex> lock(mutex_);
    while (issued_ - completed_.load() >= kPutSlots) {
      lock.unlock();
      if (std::chrono::steady_clock::now() > giveUp || failed) {
        WARN("ncclPutSignal: %s: %zu one-sided operations to other hosts still wait for their streams", who.c_str(),
             kPutSlots);
        return ncclInvalidUsage;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      lock.lock();
    }
    seq = ++issued_;
    queue_.push_back(Outgoing{seq, op, -1});
  }
  MemOps ops(drv);
  ops.write(readyDev_ + seq % kPutSlots, seq);
  ops.waitGeq(doneDev_ + seq % kPutSlots, seq);
  return ops.enqueue(stream);
}

ncclResult_t PutRequests::enqueueGraph(const CudaDriver* drv, const NetPut& op, cudaStream_t stream,
                                       const std::string& who) {
  size_t d = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (uint64_t released : graphReleases_->take()) freeGraphSlots_.push_back(static_cast<size_t>(released));
    if (!freeGraphSlots_.empty()) {
      d = freeGraphSlots_.back();
      freeGraphSlots_.pop_back();
    } else if (graphCount_.load() < kNetGraphPuts) {
      d = graphCount_.load();
      graphCount_.store(d + 1);
    } else {
      WARN(
          "%s: one-sided operations to other hosts captured in CUDA graphs: the %zu that live graphs may hold are "
          "taken (destroy graphs that are no longer replayed)",
          who.c_str(), kNetGraphPuts);
      return ncclInvalidUsage;
    }
    graphPuts_[d] = op;
    graphPuts_[d].graph = true;
  }
  NCCLCHECK(reg::holdForCapturedGraph(stream, graphReleases_, d));
  MemOps ops(drv);
  ops.write(graphDoneDev_ + d, 0);
  ops.write(requestDev_ + d, 1);
  ops.waitGeq(graphDoneDev_ + d, 1);
  return ops.enqueue(stream);
}

bool PutRequests::next(Outgoing* out) {
  const size_t graphs = graphCount_.load();
  for (size_t d = 0; d < graphs; ++d) {
    volatile uint64_t* request = reinterpret_cast<volatile uint64_t*>(requestHost_) + d;
    if (*request == 0) continue;
    *request = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);  // cleared before done can be raised
    std::lock_guard<std::mutex> lock(mutex_);             // the slot's put, as enqueueGraph wrote it
    *out = Outgoing{0, graphPuts_[d], static_cast<int>(d)};
    return true;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    const uint64_t ready = reinterpret_cast<volatile uint64_t*>(readyHost_)[it->seq % kPutSlots];
    if (ready != it->seq) continue;
    *out = *it;
    queue_.erase(it);
    return true;
  }
  return false;
}

void PutRequests::markRead(const Outgoing& out) {
  std::atomic_thread_fence(std::memory_order_release);
  if (out.graphSlot >= 0) {
    reinterpret_cast<volatile uint64_t*>(graphDoneHost_)[out.graphSlot] = 1;
  } else {
    reinterpret_cast<volatile uint64_t*>(doneHost_)[out.seq % kPutSlots] = out.seq;
    completed_.fetch_add(1);
  }
}

void PutRequests::releaseAll() {
  // Far ahead of every sequence number: each stream wait (a >= comparison) is met.
  for (size_t i = 0; i < kPutSlots; ++i) reinterpret_cast<volatile uint64_t*>(doneHost_)[i] = uint64_t{1} << 62;
  for (size_t d = 0; d < kNetGraphPuts; ++d) reinterpret_cast<volatile uint64_t*>(graphDoneHost_)[d] = 1;
}

}  // namespace braid::window
