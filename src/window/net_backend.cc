#include "window/net_backend.h"

#include <chrono>
#include <cstring>
#include <string>

#include "cuda/cuda_check.h"
#include "device/signal_add.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid::window {
namespace {

constexpr int kTag = 0x524d;  // "RM"
constexpr uint64_t kBufBytes = sizeof(ChunkHeader) + kNetChunkBytes;

}  // namespace

NetBackend::NetBackend(const CudaDriver* drv, const WindowContext& ctx, const SignalPad& pad,
                       std::unique_ptr<NetLinks> links)
    : drv_(drv),
      ctx_(ctx),
      pad_(pad),
      links_(std::move(links)),
      slotOf_(ctx.nranks, -1),
      windows_(ctx.rank),
      gin_(ctx, windows_, stop_, [this](int peer) { return reaches(peer); }),
      received_(pad.layout().words(), 0) {
  for (size_t i = 0; i < nPeers(); ++i) slotOf_[links_->peers()[i]] = static_cast<int>(i);
}

ncclResult_t NetBackend::allocate() {
  const std::string what = "one-sided operations across hosts (rank " + std::to_string(ctx_.rank) + ")";
  NCCLCHECK(requests_.allocate(what));
  CUDACHECK_AT(what, cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  void* buf = nullptr;
  CUDACHECK_AT(what, cudaHostAlloc(&buf, sizeof(uint64_t), cudaHostAllocPortable));
  countStage_ = static_cast<uint64_t*>(buf);
  CUDACHECK_AT(what, cudaHostAlloc(&buf, sizeof(uint64_t), cudaHostAllocPortable));
  inlineStage_ = static_cast<uint64_t*>(buf);
  gin_.attach(stream_, inlineStage_);
  const size_t n = nPeers();
  if (n == 0) return ncclSuccess;  // GIN within the LSA team only: no buffers, no connections
  const ncclNet_v11_t& net = links_->net();
  sendBuffers_.resize(kNetPipelineDepth);
  for (int b = 0; b < kNetPipelineDepth; ++b) {
    ChunkBuffer& c = sendBuffers_[b];
    CUDACHECK_AT(what, cudaHostAlloc(&buf, kBufBytes, cudaHostAllocPortable));
    c.buf = static_cast<char*>(buf);
    c.mhandles.assign(n, nullptr);
    for (size_t i = 0; i < n; ++i) {
      NCCLCHECK(net.regMr(links_->sendComm(i), c.buf, kBufBytes, NCCL_PTR_HOST, &c.mhandles[i]));
    }
    freeSends_.push_back(b);
  }
  receivers_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    receivers_[i].buffers.resize(kNetPipelineDepth);
    for (int b = 0; b < kNetPipelineDepth; ++b) {
      ChunkBuffer& c = receivers_[i].buffers[b];
      CUDACHECK_AT(what, cudaHostAlloc(&buf, kBufBytes, cudaHostAllocPortable));
      c.buf = static_cast<char*>(buf);
      c.mhandles.assign(1, nullptr);
      NCCLCHECK(net.regMr(links_->recvComm(i), c.buf, kBufBytes, NCCL_PTR_HOST, &c.mhandles[0]));
      receivers_[i].idle.push_back(b);
    }
  }
  return ncclSuccess;
}

ncclResult_t NetBackend::create(const CudaDriver* drv, const WindowContext& ctx, const SignalPad& pad,
                                std::unique_ptr<NetLinks> links, std::unique_ptr<NetBackend>* out) {
  std::unique_ptr<NetBackend> b(new NetBackend(drv, ctx, pad, std::move(links)));
  NCCLCHECK(b->allocate());
  b->thread_ = std::thread([raw = b.get()] { raw->run(); });
  *out = std::move(b);
  return ncclSuccess;
}

NetBackend::~NetBackend() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  for (size_t i = 0; i < receivers_.size(); ++i) {
    const ncclNet_v11_t& net = links_->net();
    for (ChunkBuffer& c : receivers_[i].buffers) {
      if (!c.mhandles.empty() && c.mhandles[0] != nullptr) (void)net.deregMr(links_->recvComm(i), c.mhandles[0]);
    }
  }
  for (ChunkBuffer& c : sendBuffers_) {
    for (size_t i = 0; i < c.mhandles.size(); ++i) {
      if (c.mhandles[i] != nullptr) (void)net().deregMr(links_->sendComm(i), c.mhandles[i]);
    }
  }
  links_.reset();  // the connections go before their buffers
  for (Receiver& r : receivers_) {
    for (ChunkBuffer& c : r.buffers) {
      if (c.buf != nullptr) (void)cudaFreeHost(c.buf);
    }
  }
  for (ChunkBuffer& c : sendBuffers_) {
    if (c.buf != nullptr) (void)cudaFreeHost(c.buf);
  }
  if (countStage_ != nullptr) (void)cudaFreeHost(countStage_);
  if (inlineStage_ != nullptr) (void)cudaFreeHost(inlineStage_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

void NetBackend::addWindow(uint64_t serial, std::shared_ptr<const WindowInfo> info) {
  windows_.add(serial, std::move(info));
}

void NetBackend::removeWindow(uint64_t serial) { windows_.remove(serial); }

void NetBackend::addGin(std::shared_ptr<GinComm> gin) { gin_.add(std::move(gin)); }

void NetBackend::removeGin(uint64_t serial) { gin_.remove(serial); }

void NetBackend::releaseWaits() { requests_.releaseAll(); }

ncclResult_t NetBackend::checkNotFailed() const {
  if (!failed_) return ncclSuccess;
  WARN("ncclPutSignal: rank %d: one-sided operations to other hosts stopped at an earlier error (see above)",
       ctx_.rank);
  return ncclRemoteError;
}

ncclResult_t NetBackend::put(const NetPut& op, cudaStream_t stream) {
  NCCLCHECK(checkNotFailed());
  return requests_.enqueueEager(drv_, op, stream, failed_, "rank " + std::to_string(ctx_.rank));
}

ncclResult_t NetBackend::putGraph(const NetPut& op, cudaStream_t stream) {
  NCCLCHECK(checkNotFailed());
  return requests_.enqueueGraph(drv_, op, stream, "rank " + std::to_string(ctx_.rank));
}

void NetBackend::fail(ncclResult_t error) {
  if (failed_.exchange(true)) return;
  if (ctx_.asyncError) ctx_.asyncError(error);
  releaseWaits();  // no stream waits for a put this thread will not read any more
}

void NetBackend::writeHeader(char* buf) const {
  const Sending& s = *sending_;
  if (s.streamPut()) {
    const NetPut& op = s.out.op;
    const ChunkHeader h = chunkHeader(op.serial, op.offset + s.sent, s.chunk, op.ctx, op.sig, s.last, op.graph);
    std::memcpy(buf, &h, sizeof(h));
    return;
  }
  const GinHeader h = GinService::header(*s.gin, s.sent, s.chunk, s.last);
  std::memcpy(buf, &h, sizeof(h));
}

// The last chunk is staged: the source may be reused.
void NetBackend::finishStaging() {
  Sending& s = *sending_;
  if (s.streamPut()) {
    requests_.markRead(s.out);  // the stream that put it may go on
    return;
  }
  const ncclResult_t result = gin_.staged(*s.gin);
  if (result != ncclSuccess) fail(result);
}

ncclResult_t NetBackend::stageChunk(int buffer) {
  Sending& s = *sending_;
  char* buf = sendBuffers_[buffer].buf;
  s.chunk = std::min(kNetChunkBytes, s.bytes - s.sent);
  s.last = s.sent + s.chunk == s.bytes;
  writeHeader(buf);
  const size_t header = s.streamPut() ? sizeof(ChunkHeader) : sizeof(GinHeader);
  if (s.chunk > 0 && !s.streamPut() && s.gin->op.hasInline) {
    std::memcpy(buf + header, &s.gin->op.inlineValue, s.chunk);
  } else if (s.chunk > 0) {
    const std::string what = "one-sided put to rank " + std::to_string(s.peer);
    CUDACHECK_AT(what, cudaMemcpyAsync(buf + header, static_cast<const char*>(s.src) + s.sent, s.chunk,
                                       cudaMemcpyDeviceToHost, stream_));
    CUDACHECK_AT(what, cudaStreamSynchronize(stream_));
  }
  s.sent += s.chunk;
  s.staged = buffer;
  s.size = header + s.chunk;
  if (s.last) finishStaging();
  return ncclSuccess;
}

// Sends complete in the order they were posted (one connection each; the oldest first is enough).
bool NetBackend::completeSends() {
  bool busy = false;
  while (!postedSends_.empty()) {
    const ncclNet_v11_t& net = links_->net();
    ChunkBuffer& c = sendBuffers_[postedSends_.front()];
    int done = 0, size = 0;
    if (net.test(c.request, &done, &size) != ncclSuccess) {
      WARN("rank %d: one-sided operations: a send to another host failed", ctx_.rank);
      fail(ncclSystemError);
      return false;
    }
    if (done == 0) break;
    c.request = nullptr;
    freeSends_.push_back(postedSends_.front());
    postedSends_.pop_front();
    busy = true;
  }
  return busy;
}

// Stages and posts chunks while send buffers are free: the current put's, then the next ready one's.
bool NetBackend::postSends() {
  bool busy = false;
  while (true) {
    if (sending_ == nullptr) {
      if (!nextSending()) return busy;
      if (sending_ == nullptr) {
        busy = true;  // carried out here, or failed
        if (failed_) return false;
        continue;
      }
    }
    Sending& s = *sending_;
    if (s.staged < 0) {
      if (freeSends_.empty()) return busy;
      const int b = freeSends_.back();
      freeSends_.pop_back();
      if (stageChunk(b) != ncclSuccess) {
        fail(ncclUnhandledCudaError);
        return false;
      }
    }
    const ncclNet_v11_t& net = links_->net();
    const size_t slot = static_cast<size_t>(slotOf_[s.peer]);
    ChunkBuffer& c = sendBuffers_[s.staged];
    if (net.isend(links_->sendComm(slot), c.buf, s.size, kTag, c.mhandles[slot], nullptr, &c.request) != ncclSuccess) {
      WARN("rank %d: one-sided put to rank %d: the network refused a send", ctx_.rank, s.peer);
      fail(ncclSystemError);
      return false;
    }
    if (c.request == nullptr) return busy;  // not now: post it again next time
    postedSends_.push_back(s.staged);
    s.staged = -1;
    busy = true;
    if (s.last) sending_.reset();
  }
}

bool NetBackend::nextSending() {
  std::unique_ptr<GinSend> gin;
  if (gin_.nextServe(&gin)) {
    startSending(std::move(gin));
    return true;
  }
  Outgoing next{};
  if (requests_.next(&next)) {
    sending_ = std::make_unique<Sending>();
    sending_->out = next;
    sending_->peer = next.op.peer;
    sending_->src = next.op.src;
    sending_->bytes = next.op.bytes;
    return true;
  }
  ncclResult_t result = ncclSuccess;
  if (!gin_.take(&result, &gin)) return false;
  if (result != ncclSuccess) {
    fail(result);
  } else if (gin != nullptr) {
    startSending(std::move(gin));
  }
  return true;
}

void NetBackend::startSending(std::unique_ptr<GinSend> gin) {
  sending_ = std::make_unique<Sending>();
  sending_->peer = gin->peer;
  sending_->src = gin->src;
  sending_->bytes = gin->bytes;
  sending_->gin = std::move(gin);
}

bool NetBackend::progressSend() {
  const bool completed = completeSends();
  return postSends() || completed;
}

bool NetBackend::progressReceive(size_t i) {
  const ncclNet_v11_t& net = this->net();
  Receiver& r = receivers_[i];
  while (!r.idle.empty()) {
    ChunkBuffer& c = r.buffers[r.idle.back()];
    void* data = c.buf;
    size_t size = kBufBytes;
    int tag = kTag;
    void* phandle = nullptr;
    if (net.irecv(links_->recvComm(i), 1, &data, &size, &tag, &c.mhandles[0], &phandle, &c.request) != ncclSuccess) {
      WARN("rank %d: one-sided operations from rank %d: the network refused a receive", ctx_.rank, links_->peers()[i]);
      fail(ncclSystemError);
      return false;
    }
    if (c.request == nullptr) break;
    r.posted.push_back(r.idle.back());
    r.idle.pop_back();
  }
  bool busy = false;
  while (!r.posted.empty()) {
    ChunkBuffer& c = r.buffers[r.posted.front()];
    int done = 0, size = 0;
    if (net.test(c.request, &done, &size) != ncclSuccess) {
      WARN("rank %d: one-sided operations from rank %d: the network failed", ctx_.rank, links_->peers()[i]);
      fail(ncclSystemError);
      return false;
    }
    if (done == 0) break;
    c.request = nullptr;
    r.idle.push_back(r.posted.front());
    r.posted.pop_front();
    busy = true;
    const ncclResult_t result = deliver(i, c.buf, static_cast<size_t>(size));
    if (result != ncclSuccess) {
      fail(result);
      return false;
    }
  }
  return busy;
}

ncclResult_t NetBackend::deliver(size_t i, const char* message, size_t size) {
  const int peer = links_->peers()[i];
  if (isGinMessage(message, size)) return gin_.deliver(peer, message, size);
  const PadLayout& l = pad_.layout();
  ChunkHeader h{};
  std::string why;
  if (!parseChunk(message, size, l.nCtx, l.nSig, &h, &why)) {
    WARN("rank %d: one-sided operations: rank %d sent a message of %zu bytes that is not a chunk (%s); dropped",
         ctx_.rank, peer, size, why.c_str());
    return ncclRemoteError;
  }
  std::shared_ptr<const WindowInfo> w;
  if (h.bytes > 0 && (w = windows_.await(peer, h.serial, stop_, "one-sided put")) == nullptr) return ncclInvalidUsage;
  const uint64_t bytes = w == nullptr ? 0 : w->userBytes;
  if (h.bytes > 0 && !chunkFits(h, bytes)) {
    WARN(
        "rank %d: one-sided put from rank %d: %llu bytes at offset %llu run past the end of window %llu (%llu "
        "bytes here); dropped",
        ctx_.rank, peer, static_cast<unsigned long long>(h.bytes), static_cast<unsigned long long>(h.offset),
        static_cast<unsigned long long>(h.serial), static_cast<unsigned long long>(bytes));
    return ncclRemoteError;
  }
  const std::string what = "one-sided put from rank " + std::to_string(peer);
  if (h.bytes > 0) {
    CUDACHECK_AT(what,
                 cudaMemcpyAsync(w->userPtr + h.offset, message + sizeof(h), h.bytes, cudaMemcpyHostToDevice, stream_));
  }
  if ((h.flags & kLastChunk) != 0 && (h.flags & kGraphSignal) != 0) {
    // A graph's signal: added atomically (a graph wait subtracts from the same word), after the data.
    SignalAdds adds{};
    adds.add(reinterpret_cast<unsigned long long*>(pad_.local() + l.graphCount(h.ctx, h.sig, peer)), 1);
    CUDACHECK_AT(what, launchSignalAdds(adds, stream_));
  } else if ((h.flags & kLastChunk) != 0) {
    // After the data on the same stream: a wait that sees the count sees the data.
    *countStage_ = ++received_[l.index(h.ctx, h.sig, peer)];
    CUDACHECK_AT(what, cudaMemcpyAsync(pad_.local() + l.count(h.ctx, h.sig, peer), countStage_, sizeof(uint64_t),
                                       cudaMemcpyHostToDevice, stream_));
  }
  CUDACHECK_AT(what, cudaStreamSynchronize(stream_));
  return ncclSuccess;
}

void NetBackend::run() {
  if (cudaSetDevice(ctx_.cudaDev) != cudaSuccess) {
    WARN("rank %d: the one-sided operations' thread cannot use GPU %d", ctx_.rank, ctx_.cudaDev);
    fail(ncclUnhandledCudaError);
    return;
  }
  // Spins while operations come (a sleep costs tens of microseconds of latency), naps once they
  // pause, and sleeps long once they have stopped for a while.
  using Clock = std::chrono::steady_clock;
  Clock::time_point lastBusy = Clock::now();
  while (!stop_.load()) {
    gin_.refresh();  // also after a failure: a device communicator being destroyed waits for it
    if (failed_) {
      // No operation completes any more (GIN kernels stop at the communicator's abort).
      sending_.reset();
      gin_.drop();
    }
    bool busy = false;
    if (!failed_) {
      gin_.releaseFlushes();
      busy = progressSend();
      for (size_t i = 0; i < receivers_.size() && !failed_; ++i) busy = progressReceive(i) || busy;
    }
    const Clock::time_point now = Clock::now();
    if (busy) {
      lastBusy = now;
    } else if (failed_ || now - lastBusy > std::chrono::milliseconds(100)) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    } else if (now - lastBusy > std::chrono::milliseconds(2)) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace braid::window
