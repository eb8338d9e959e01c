#include "window/gin_comm.h"

#include <cuda_runtime.h>

#include <cstring>

#include "cuda/cuda_check.h"
#include "util/check.h"
#include "util/log.h"

namespace braid::window {

void askGinResources(const GinShape& s, GinPlaces* p, std::vector<ResourceAsk>* asks) {
  const uint64_t c = static_cast<uint64_t>(s.contexts);
  const uint64_t perSignal = c * static_cast<uint64_t>(s.signals) * sizeof(uint64_t);
  const uint64_t perCounter = c * static_cast<uint64_t>(s.counters) * sizeof(uint64_t);
  const uint64_t perPeer = c * static_cast<uint64_t>(s.nranks) * sizeof(uint32_t);
  asks->push_back(ResourceAsk{perSignal, 8, &p->signals, "the GIN signals (ginSignalCount)"});
  asks->push_back(ResourceAsk{perSignal, 8, &p->signalOffsets, "the GIN signals' offsets"});
  asks->push_back(ResourceAsk{perCounter, 8, &p->counters, "the GIN counters (ginCounterCount)"});
  asks->push_back(ResourceAsk{perPeer, 4, &p->pis, "the GIN rings' producer indices"});
  asks->push_back(ResourceAsk{perPeer, 4, &p->lastIssuedGet, "the GIN gets issued"});
  asks->push_back(ResourceAsk{perPeer, 4, &p->lastVisibleGet, "the GIN gets visible"});
  asks->push_back(ResourceAsk{perSignal, 8, &p->shadows, "the GIN signal shadows"});
  asks->push_back(ResourceAsk{c * sizeof(ncclGinProxyGpuCtx_t), 16, &p->contexts, "the GIN contexts"});
}

ncclResult_t GinComm::create(const GinShape& shape, const GinPlaces& places,
                             std::shared_ptr<const WindowInfo> resources, uint64_t serial, cudaStream_t stream,
                             std::unique_ptr<GinComm>* out) {
  std::unique_ptr<GinComm> g(new GinComm(shape, places, std::move(resources), serial));
  const size_t rings = static_cast<size_t>(shape.contexts) * shape.nranks;
  const std::string what = "ncclDevCommCreate: the GIN rings";
  void* buf = nullptr;
  CUDACHECK_AT(what, cudaHostAlloc(&buf, rings * shape.queueSize * sizeof(ncclGinProxyGfd_t),
                                   cudaHostAllocMapped | cudaHostAllocPortable));
  g->queues_ = static_cast<ncclGinProxyGfd_t*>(buf);
  std::memset(buf, 0, rings * shape.queueSize * sizeof(ncclGinProxyGfd_t));
  CUDACHECK_AT(what, cudaHostAlloc(&buf, rings * sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable));
  g->cis_ = static_cast<uint32_t*>(buf);
  std::memset(buf, 0, rings * sizeof(uint32_t));
  g->next_.assign(rings, 0);

  std::vector<ncclGinProxyGpuCtx_t> ctxs(shape.contexts);
  for (int c = 0; c < shape.contexts; ++c) {
    ncclGinProxyGpuCtx_t& d = ctxs[c];
    std::memset(&d, 0, sizeof(d));
    const size_t perSignal = static_cast<size_t>(c) * shape.signals;
    const size_t perPeer = static_cast<size_t>(c) * shape.nranks;
    d.nranks = shape.nranks;
    d.queueSize = shape.queueSize;
    d.queues = g->queues_ + perPeer * shape.queueSize;
    d.pis = reinterpret_cast<uint32_t*>(g->local(places.pis)) + perPeer;
    d.cis = g->cis_ + perPeer;
    d.counters = reinterpret_cast<uint64_t*>(g->local(places.counters)) + static_cast<size_t>(c) * shape.counters;
    d.signals = reinterpret_cast<uint64_t*>(g->local(places.signals)) + perSignal;
    d.signalOffsets = reinterpret_cast<uint64_t*>(g->local(places.signalOffsets)) + perSignal;
    d.lastIssuedGet = reinterpret_cast<uint32_t*>(g->local(places.lastIssuedGet)) + perPeer;
    d.lastVisibleGet = reinterpret_cast<uint32_t*>(g->local(places.lastVisibleGet)) + perPeer;
    // False although every put to a peer travels one connection in order and lands before the next
    // (a signal settles the earlier puts of its own sender): NCCL 2.32's hybrid barrier, where this
    // is true, trades its GIN barrier of every rank for a flush by each producer, an LSA barrier and
    // a rail barrier, which needs a flush to mean the puts have landed at their targets. Here a
    // flush waits for the consumer index, which moves once a put's source has been read, so a put
    // to another host's rank off the rail could land after that barrier ends.
    d.flushesAllPutsOnAnySignal = false;
  }
  CUDACHECK_AT(what, cudaMemcpyAsync(g->local(places.contexts), ctxs.data(), ctxs.size() * sizeof(ctxs[0]),
                                     cudaMemcpyHostToDevice, stream));
  CUDACHECK_AT(what, cudaStreamSynchronize(stream));
  *out = std::move(g);
  return ncclSuccess;
}

GinComm::~GinComm() {
  if (queues_ != nullptr) (void)cudaFreeHost(queues_);
  if (cis_ != nullptr) (void)cudaFreeHost(cis_);
}

void* GinComm::deviceHandle() const { return local(places_.contexts); }

uint64_t* GinComm::signalShadows() const { return reinterpret_cast<uint64_t*>(local(places_.shadows)); }

bool GinComm::take(int* context, int* peer, GinOp* op, std::string* why) {
  const size_t rings = next_.size();
  for (size_t k = 0; k < rings; ++k) {
    const size_t r = (cursor_ + k) % rings;
    ncclGinProxyGfd_t* slot = queues_ + r * shape_.queueSize + (next_[r] & (shape_.queueSize - 1));
    ncclGinProxyGfd_t gfd;
    for (int w = 0; w < ncclGinProxyGfdQwords; ++w) gfd.qword[w] = __atomic_load_n(&slot->qword[w], __ATOMIC_ACQUIRE);
    if (!gfdWritten(gfd)) continue;
    // Cleared before its consumer index moves past it: the device writes it again only after.
    for (uint64_t& w : slot->qword) __atomic_store_n(&w, uint64_t{0}, __ATOMIC_RELAXED);
    cursor_ = (r + 1) % rings;
    *context = static_cast<int>(r / shape_.nranks);
    *peer = static_cast<int>(r % shape_.nranks);
    why->clear();
    (void)decodeGfd(gfd, op, why);  // a bad one comes back with *why said
    return true;
  }
  return false;
}

void GinComm::done(int context, int peer) {
  const size_t r = ring(context, peer);
  ++next_[r];
  __atomic_store_n(&cis_[r], next_[r], __ATOMIC_RELEASE);
}

unsigned long long* GinComm::signal(int context, uint32_t id, int lsa) const {
  const uint64_t at = offset(places_.signals) + (static_cast<uint64_t>(context) * shape_.signals + id) * 8;
  return reinterpret_cast<unsigned long long*>(resources_->lsaPtr(lsa, at));
}

unsigned long long* GinComm::counter(int context, uint32_t id) const {
  return reinterpret_cast<unsigned long long*>(local(places_.counters)) +
         static_cast<size_t>(context) * shape_.counters + id;
}

}  // namespace braid::window
