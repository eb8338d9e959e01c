// The proxy GIN transport's side of the network thread (gin_service.h).
#include "window/gin_service.h"

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "cuda/cuda_check.h"
#include "device/signal_add.h"
#include "util/check.h"
#include "util/log.h"

namespace braid::window {
namespace {

// A put's signal and counter ids, against what its device communicator has.
ncclResult_t checkIds(const GinComm& gin, const GinOp& op, int rank) {
  if (op.signal != GinOp::Signal::kNone && op.signalId >= static_cast<uint32_t>(gin.shape().signals)) {
    WARN("rank %d: GIN: signal %u of a device communicator with %d", rank, op.signalId, gin.shape().signals);
    return ncclInvalidUsage;
  }
  if (op.hasCounter && op.counterId >= static_cast<uint32_t>(gin.shape().counters)) {
    WARN("rank %d: GIN: counter %u of a device communicator with %d", rank, op.counterId, gin.shape().counters);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

}  // namespace

void GinService::add(std::shared_ptr<GinComm> gin) {
  std::lock_guard<std::mutex> lock(mutex_);
  gins_[gin->serial()] = std::move(gin);
  changed_ = true;
}

void GinService::remove(uint64_t serial) {
  std::lock_guard<std::mutex> lock(mutex_);
  gins_.erase(serial);
  changed_ = true;
}

void GinService::refresh() {
  if (!changed_.exchange(false)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  seen_.clear();
  for (auto& [serial, gin] : gins_) seen_.push_back(gin);
}

void GinService::drop() {
  flushes_.clear();
  gets_.clear();
  serves_.clear();
}

ncclResult_t GinService::ownRange(int peer, uint64_t serial, uint64_t offset, uint64_t bytes, const char* what,
                                  char** out) {
  if (windows_.await(peer, serial, stop_, "GIN message") == nullptr) return ncclInvalidUsage;
  return windows_.lsaRange(serial, offset, bytes, ctx_.lsaRank, what, out);
}

bool GinService::take(ncclResult_t* result, std::unique_ptr<GinSend>* send) {
  for (const std::shared_ptr<GinComm>& gin : seen_) {
    int context = 0, peer = 0;
    GinOp op;
    std::string why;
    if (!gin->take(&context, &peer, &op, &why)) continue;
    *result = ncclSuccess;
    if (!why.empty()) {
      WARN("rank %d: GIN: context %d wrote a descriptor for rank %d that no device code writes (%s)", ctx_.rank,
           context, peer, why.c_str());
      *result = ncclInvalidUsage;
    } else if (op.kind == GinOp::Kind::kFlush) {
      flushes_.push_back(ParkedFlush{gin, context, peer});  // done once the gets before it landed
      releaseFlushes();
    } else if (ctx_.inLsa(peer)) {
      *result = runLocal(*gin, context, peer, op);
    } else if (reachable_(peer)) {
      *result = startRemote(gin, context, peer, op, send);
    } else {
      WARN("rank %d: GIN: rank %d is on another host, and the connections to other hosts failed (see above)", ctx_.rank,
           peer);
      *result = ncclRemoteError;
    }
    return true;
  }
  return false;
}

ncclResult_t GinService::runLocal(GinComm& gin, int context, int peer, const GinOp& op) {
  const int lsa = ctx_.lsaOf(peer);
  const std::string what = "GIN operation to rank " + std::to_string(peer);
  SignalAdds adds{};
  switch (op.kind) {
    case GinOp::Kind::kFlush:  // parked by take, never run here
      break;
    case GinOp::Kind::kGet: {
      char *src = nullptr, *dst = nullptr;
      NCCLCHECK(windows_.lsaRange(op.srcHandle, op.srcOffset, op.bytes, lsa, "get source", &src));
      NCCLCHECK(windows_.lsaRange(op.dstHandle, op.dstOffset, op.bytes, ctx_.lsaRank, "get destination", &dst));
      if (op.bytes > 0) CUDACHECK_AT(what, cudaMemcpyAsync(dst, src, op.bytes, cudaMemcpyDefault, stream_));
      break;
    }
    case GinOp::Kind::kVaSignal: {
      if (op.vaOffset % sizeof(uint64_t) != 0) {
        WARN("rank %d: GIN: a VA signal at offset %llu, not a multiple of 8", ctx_.rank,
             static_cast<unsigned long long>(op.vaOffset));
        return ncclInvalidUsage;
      }
      char* word = nullptr;
      NCCLCHECK(windows_.lsaRange(op.vaHandle, op.vaOffset, sizeof(uint64_t), lsa, "VA signal", &word));
      adds.add(reinterpret_cast<unsigned long long*>(word), op.signal == GinOp::Signal::kAdd ? op.signalValue : 1);
      break;
    }
    case GinOp::Kind::kPut: {
      if (op.bytes > 0) {
        char* dst = nullptr;
        NCCLCHECK(windows_.lsaRange(op.dstHandle, op.dstOffset, op.bytes, lsa, "put destination", &dst));
        const void* src = inlineStage_;
        if (op.hasInline) {
          std::memcpy(inlineStage_, &op.inlineValue, sizeof(op.inlineValue));
        } else {
          char* s = nullptr;
          NCCLCHECK(windows_.lsaRange(op.srcHandle, op.srcOffset, op.bytes, ctx_.lsaRank, "put source", &s));
          src = s;
        }
        CUDACHECK_AT(what, cudaMemcpyAsync(dst, src, op.bytes, cudaMemcpyDefault, stream_));
      }
      NCCLCHECK(checkIds(gin, op, ctx_.rank));
      if (op.signal != GinOp::Signal::kNone) {
        adds.add(gin.signal(context, op.signalId, lsa), op.signal == GinOp::Signal::kAdd ? op.signalValue : 1);
      }
      if (op.hasCounter) adds.add(gin.counter(context, op.counterId), 1);
      break;
    }
  }
  // The adds follow the copy in the stream, after a system-scope fence: a signal seen means data seen.
  if (adds.count > 0) CUDACHECK_AT(what, launchSignalAdds(adds, stream_));
  CUDACHECK_AT(what, cudaStreamSynchronize(stream_));
  gin.done(context, peer);
  return ncclSuccess;
}

void GinService::releaseFlushes() {
  if (!gets_.empty()) return;
  for (ParkedFlush& f : flushes_) f.gin->done(f.context, f.peer);
  flushes_.clear();
}

bool GinService::nextServe(std::unique_ptr<GinSend>* send) {
  if (serves_.empty()) return false;
  *send = std::make_unique<GinSend>(std::move(serves_.front()));
  serves_.pop_front();
  return true;
}

// A peer's get: its data goes back in chunks, once the thread gets to it.
ncclResult_t GinService::serveGet(int peer, const GinHeader& h) {
  constexpr size_t kMaxServes = size_t{1} << 16;  // more is no peer's rings, but a flood
  if (serves_.size() >= kMaxServes) {
    WARN("rank %d: GIN: rank %d asks for more than %zu gets at once; dropped", ctx_.rank, peer, kMaxServes);
    return ncclRemoteError;
  }
  char* src = nullptr;
  if (ownRange(peer, h.serial, h.offset, h.value, "get from another host", &src) != ncclSuccess) {
    return ncclRemoteError;
  }
  GinSend reply;
  reply.flags = kGinGetReply;
  reply.tag = h.tag;
  reply.devComm = h.devComm;
  reply.peer = peer;
  reply.src = src;
  reply.bytes = h.value;
  serves_.push_back(std::move(reply));
  return ncclSuccess;
}

// A chunk of the reply to one of this rank's gets: it must be that get's, from its peer, in order.
ncclResult_t GinService::landReply(int peer, const GinHeader& h, const char* payload) {
  auto it = gets_.find(h.tag);
  if (it == gets_.end() || it->second.peer != peer || h.offset != it->second.received ||
      h.bytes > it->second.bytes - it->second.received ||
      ((h.flags & kGinLast) != 0) != (h.offset + h.bytes == it->second.bytes)) {
    WARN(
        "rank %d: GIN: rank %d sent %llu bytes at %llu of a reply to get %llu, which this rank did not ask of it "
        "so; dropped",
        ctx_.rank, peer, static_cast<unsigned long long>(h.bytes), static_cast<unsigned long long>(h.offset),
        static_cast<unsigned long long>(h.tag));
    return ncclRemoteError;
  }
  PendingGet& g = it->second;
  if (h.bytes > 0) {
    const std::string what = "GIN get from rank " + std::to_string(peer);
    CUDACHECK_AT(what, cudaMemcpyAsync(g.dst + h.offset, payload, h.bytes, cudaMemcpyHostToDevice, stream_));
    CUDACHECK_AT(what, cudaStreamSynchronize(stream_));
  }
  g.received += h.bytes;
  if ((h.flags & kGinLast) != 0) gets_.erase(it);
  return ncclSuccess;
}

ncclResult_t GinService::startRemote(const std::shared_ptr<GinComm>& gin, int context, int peer, const GinOp& op,
                                     std::unique_ptr<GinSend>* send) {
  auto s = std::make_unique<GinSend>();
  s->gin = gin;
  s->op = op;
  s->context = context;
  s->devComm = gin->serial();
  s->peer = peer;
  if (op.kind == GinOp::Kind::kGet) {  // a request; the reply lands at the destination by the tag
    char* dst = nullptr;
    NCCLCHECK(windows_.lsaRange(op.dstHandle, op.dstOffset, op.bytes, ctx_.lsaRank, "get destination", &dst));
    s->flags = kGinGetRequest;
    s->tag = ++lastGetTag_;
    gets_[s->tag] = PendingGet{peer, dst, op.bytes, 0};
    *send = std::move(s);
    return ncclSuccess;
  }
  if (op.kind == GinOp::Kind::kPut) NCCLCHECK(checkIds(*gin, op, ctx_.rank));
  s->bytes = op.kind == GinOp::Kind::kPut ? op.bytes : 0;
  if (s->bytes > 0 && !op.hasInline) {
    char* src = nullptr;
    NCCLCHECK(windows_.lsaRange(op.srcHandle, op.srcOffset, op.bytes, ctx_.lsaRank, "put source", &src));
    s->src = src;
  }
  *send = std::move(s);
  return ncclSuccess;
}

GinHeader GinService::header(const GinSend& s, uint64_t sent, uint64_t chunk, bool last) {
  const GinOp& g = s.op;
  GinHeader h{};
  h.magic = kGinMagic;
  h.devComm = s.devComm;
  h.context = static_cast<uint32_t>(s.context);
  h.bytes = chunk;
  if (s.flags != 0) {  // a get's request (the op's source is the peer's) or a chunk of its reply
    h.flags = s.flags | (last ? kGinLast : 0);
    h.tag = s.tag;
    h.serial = s.flags == kGinGetRequest ? g.srcHandle : 0;
    h.offset = s.flags == kGinGetRequest ? g.srcOffset : sent;
    h.value = s.flags == kGinGetRequest ? g.bytes : 0;
    return h;
  }
  if (g.kind == GinOp::Kind::kVaSignal) {
    h.serial = g.vaHandle;
    h.offset = g.vaOffset;
    h.flags = kGinVaSignal;
  } else {
    h.serial = g.dstHandle;
    h.offset = g.dstOffset + sent;
    h.signal = g.signalId;
  }
  if (last) {
    h.flags |= kGinLast;
    if (g.signal == GinOp::Signal::kInc) h.flags |= kGinSignalInc;
    if (g.signal == GinOp::Signal::kAdd) h.flags |= kGinSignalAdd;
    h.value = g.signal == GinOp::Signal::kAdd ? g.signalValue : 1;
  }
  return h;
}

ncclResult_t GinService::staged(const GinSend& s) {
  if (s.flags == kGinGetReply) return ncclSuccess;  // served
  if (s.flags != kGinGetRequest && s.op.hasCounter) {
    SignalAdds adds{};
    adds.add(s.gin->counter(s.context, s.op.counterId), 1);
    const std::string what = "GIN counter " + std::to_string(s.op.counterId);
    CUDACHECK_AT(what, launchSignalAdds(adds, stream_));
    CUDACHECK_AT(what, cudaStreamSynchronize(stream_));
  }
  s.gin->done(s.context, s.peer);  // a get's request: the GFD is done, its data comes later
  return ncclSuccess;
}

std::shared_ptr<GinComm> GinService::awaitGin(int peer, uint64_t serial) {
  // The peer's device communicator may be ready before this rank's is entered here.
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = gins_.find(serial);
      if (it != gins_.end()) return it->second;
    }
    if (std::chrono::steady_clock::now() > giveUp || stop_.load()) {
      WARN("rank %d: GIN: rank %d names device communicator %llu, which this rank does not have (destroyed?)",
           ctx_.rank, peer, static_cast<unsigned long long>(serial));
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

ncclResult_t GinService::deliver(int peer, const char* message, size_t size) {
  GinHeader h{};
  std::string why;
  if (!parseGin(message, size, ~uint32_t{0}, &h, &why)) {
    WARN("rank %d: GIN: rank %d sent a message of %zu bytes that is not a GIN message (%s); dropped", ctx_.rank, peer,
         size, why.c_str());
    return ncclRemoteError;
  }
  if ((h.flags & kGinGetReply) != 0) return landReply(peer, h, message + sizeof(h));
  std::shared_ptr<GinComm> gin = awaitGin(peer, h.devComm);
  if (gin == nullptr) return ncclRemoteError;
  if ((h.flags & kGinGetRequest) != 0) return serveGet(peer, h);
  return landPut(peer, *gin, h, message + sizeof(h));
}

// A chunk of a peer's put: its data into this rank's window, then (last chunk) its signal.
ncclResult_t GinService::landPut(int peer, const GinComm& gin, const GinHeader& h, const char* payload) {
  const GinShape& shape = gin.shape();
  const bool signal = (h.flags & (kGinSignalInc | kGinSignalAdd)) != 0;
  const bool va = (h.flags & kGinVaSignal) != 0;
  if (h.context >= static_cast<uint32_t>(shape.contexts) ||
      (signal && !va && h.signal >= static_cast<uint32_t>(shape.signals))) {
    WARN("rank %d: GIN: rank %d names context %u, signal %u of a device communicator with %d and %d; dropped",
         ctx_.rank, peer, h.context, h.signal, shape.contexts, shape.signals);
    return ncclRemoteError;
  }
  const std::string what = "GIN put from rank " + std::to_string(peer);
  char* dst = nullptr;
  if (h.bytes > 0) {
    if (ownRange(peer, h.serial, h.offset, h.bytes, "put from another host", &dst) != ncclSuccess) {
      return ncclRemoteError;
    }
    CUDACHECK_AT(what, cudaMemcpyAsync(dst, payload, h.bytes, cudaMemcpyHostToDevice, stream_));
  }
  if (signal) {
    unsigned long long* word = nullptr;
    if (va) {
      char* w = nullptr;
      if (h.offset % sizeof(uint64_t) != 0 ||
          ownRange(peer, h.serial, h.offset, sizeof(uint64_t), "VA signal from another host", &w) != ncclSuccess) {
        return ncclRemoteError;
      }
      word = reinterpret_cast<unsigned long long*>(w);
    } else {
      word = gin.signal(static_cast<int>(h.context), h.signal, ctx_.lsaRank);
    }
    SignalAdds adds{};
    adds.add(word, h.value);
    CUDACHECK_AT(what, launchSignalAdds(adds, stream_));
  }
  CUDACHECK_AT(what, cudaStreamSynchronize(stream_));
  return ncclSuccess;
}

}  // namespace braid::window
