// The proxy GIN transport's side of the network thread (net_backend.h): the GFDs device code
// posts (gin_comm.h) are carried out here. A put to a rank of this rank's LSA team is a copy into
// the peer's window through this rank's mapping of it, then an atomic add on the peer's signal,
// in one stream; a put to another host is staged and sent like a one-sided put's chunks, with a
// GIN header (gin_wire.h), and its signal is added by the receiving thread after the data.
// A get from another host is a request message; the peer's thread answers it with chunks of the
// data, which land here by the get's tag. A flush GFD completes once every such get has landed.
#include <chrono>
#include <cstring>
#include <string>

#include "cuda/cuda_check.h"
#include "device/signal_add.h"
#include "util/check.h"
#include "util/log.h"
#include "window/net_backend.h"

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

ncclResult_t NetBackend::windowPtr(uint64_t serial, uint64_t offset, uint64_t bytes, int lsa, const char* what,
                                   char** out) {
  std::shared_ptr<const WindowInfo> w = findWindow(serial);
  const int world = w == nullptr ? 0 : w->lsaBase() + lsa;
  if (w == nullptr || !ginFits(offset, bytes, w->worldBytes[world])) {
    WARN("rank %d: GIN: %s: %llu bytes at offset %llu of window %llu on rank %d, which %s", ctx_.rank, what,
         static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(offset),
         static_cast<unsigned long long>(serial), world,
         w == nullptr ? "this communicator does not have (deregistered?)" : "run past its end");
    return ncclInvalidUsage;
  }
  *out = w->lsaPtr(lsa, offset);
  return ncclSuccess;
}

void NetBackend::refreshGins() {
  if (!ginsChanged_.exchange(false)) return;
  std::lock_guard<std::mutex> lock(windowsMutex_);
  ginsSeen_.clear();
  for (auto& [serial, gin] : gins_) ginsSeen_.push_back(gin);
}

ncclResult_t NetBackend::ownWindowPtr(int peer, uint64_t serial, uint64_t offset, uint64_t bytes, const char* what,
                                      char** out) {
  if (awaitWindow(peer, serial) == nullptr) return ncclInvalidUsage;
  return windowPtr(serial, offset, bytes, ctx_.lsaRank, what, out);
}

bool NetBackend::takeGin() {
  for (const std::shared_ptr<GinComm>& gin : ginsSeen_) {
    int context = 0, peer = 0;
    GinOp op;
    std::string why;
    if (!gin->take(&context, &peer, &op, &why)) continue;
    ncclResult_t result = ncclSuccess;
    if (!why.empty()) {
      WARN("rank %d: GIN: context %d wrote a descriptor for rank %d that no device code writes (%s)", ctx_.rank,
           context, peer, why.c_str());
      result = ncclInvalidUsage;
    } else if (op.kind == GinOp::Kind::kFlush) {
      flushes_.push_back(ParkedFlush{gin, context, peer});  // done once the gets before it landed
      releaseFlushes();
    } else if (ctx_.inLsa(peer)) {
      result = runLocal(*gin, context, peer, op);
    } else if (reaches(peer)) {
      result = startRemote(gin, context, peer, op);
    } else {
      WARN("rank %d: GIN: rank %d is on another host, and the connections to other hosts failed (see above)", ctx_.rank,
           peer);
      result = ncclRemoteError;
    }
    if (result != ncclSuccess) fail(result);
    return true;
  }
  return false;
}

ncclResult_t NetBackend::runLocal(GinComm& gin, int context, int peer, const GinOp& op) {
  const int lsa = ctx_.lsaOf(peer);
  const std::string what = "GIN operation to rank " + std::to_string(peer);
  SignalAdds adds{};
  switch (op.kind) {
    case GinOp::Kind::kFlush:  // parked by takeGin, never run here
      break;
    case GinOp::Kind::kGet: {
      char *src = nullptr, *dst = nullptr;
      NCCLCHECK(windowPtr(op.srcHandle, op.srcOffset, op.bytes, lsa, "get source", &src));
      NCCLCHECK(windowPtr(op.dstHandle, op.dstOffset, op.bytes, ctx_.lsaRank, "get destination", &dst));
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
      NCCLCHECK(windowPtr(op.vaHandle, op.vaOffset, sizeof(uint64_t), lsa, "VA signal", &word));
      adds.add(reinterpret_cast<unsigned long long*>(word), op.signal == GinOp::Signal::kAdd ? op.signalValue : 1);
      break;
    }
    case GinOp::Kind::kPut: {
      if (op.bytes > 0) {
        char* dst = nullptr;
        NCCLCHECK(windowPtr(op.dstHandle, op.dstOffset, op.bytes, lsa, "put destination", &dst));
        const void* src = inlineStage_;
        if (op.hasInline) {
          std::memcpy(inlineStage_, &op.inlineValue, sizeof(op.inlineValue));
        } else {
          char* s = nullptr;
          NCCLCHECK(windowPtr(op.srcHandle, op.srcOffset, op.bytes, ctx_.lsaRank, "put source", &s));
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

void NetBackend::releaseFlushes() {
  if (!gets_.empty()) return;
  for (ParkedFlush& f : flushes_) f.gin->done(f.context, f.peer);
  flushes_.clear();
}

ncclResult_t NetBackend::startGet(const std::shared_ptr<GinComm>& gin, int context, int peer, const GinOp& op) {
  char* dst = nullptr;
  NCCLCHECK(windowPtr(op.dstHandle, op.dstOffset, op.bytes, ctx_.lsaRank, "get destination", &dst));
  const uint64_t tag = ++lastGetTag_;
  gets_[tag] = PendingGet{peer, dst, op.bytes, 0};
  auto s = std::make_unique<Sending>();
  s->gin = gin;
  s->ginOp = op;
  s->ginContext = context;
  s->ginFlags = kGinGetRequest;
  s->ginTag = tag;
  s->ginDevComm = gin->serial();
  s->peer = peer;
  sending_ = std::move(s);
  return ncclSuccess;
}

bool NetBackend::nextServe() {
  if (serves_.empty()) return false;
  const Serve& v = serves_.front();
  auto s = std::make_unique<Sending>();
  s->ginFlags = kGinGetReply;
  s->ginTag = v.tag;
  s->ginDevComm = v.devComm;
  s->peer = v.peer;
  s->src = v.src;
  s->bytes = v.bytes;
  serves_.pop_front();
  sending_ = std::move(s);
  return true;
}

// A peer's get: its data goes back in chunks, once the thread gets to it.
ncclResult_t NetBackend::serveGet(int peer, const GinHeader& h) {
  constexpr size_t kMaxServes = size_t{1} << 16;  // more is no peer's rings, but a flood
  if (serves_.size() >= kMaxServes) {
    WARN("rank %d: GIN: rank %d asks for more than %zu gets at once; dropped", ctx_.rank, peer, kMaxServes);
    return ncclRemoteError;
  }
  char* src = nullptr;
  if (ownWindowPtr(peer, h.serial, h.offset, h.value, "get from another host", &src) != ncclSuccess) {
    return ncclRemoteError;
  }
  serves_.push_back(Serve{peer, h.devComm, h.tag, src, h.value});
  return ncclSuccess;
}

// A chunk of the reply to one of this rank's gets: it must be that get's, from its peer, in order.
ncclResult_t NetBackend::landReply(int peer, const GinHeader& h, const char* payload) {
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

ncclResult_t NetBackend::startRemote(const std::shared_ptr<GinComm>& gin, int context, int peer, const GinOp& op) {
  if (op.kind == GinOp::Kind::kGet) return startGet(gin, context, peer, op);
  if (op.kind == GinOp::Kind::kPut) NCCLCHECK(checkIds(*gin, op, ctx_.rank));
  auto s = std::make_unique<Sending>();
  s->gin = gin;
  s->ginOp = op;
  s->ginContext = context;
  s->ginDevComm = gin->serial();
  s->peer = peer;
  s->bytes = op.kind == GinOp::Kind::kPut ? op.bytes : 0;
  if (s->bytes > 0 && !op.hasInline) {
    char* src = nullptr;
    NCCLCHECK(windowPtr(op.srcHandle, op.srcOffset, op.bytes, ctx_.lsaRank, "put source", &src));
    s->src = src;
  }
  sending_ = std::move(s);
  return ncclSuccess;
}

std::shared_ptr<GinComm> NetBackend::awaitGin(int peer, uint64_t serial) {
  // The peer's device communicator may be ready before this rank's is entered here.
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    {
      std::lock_guard<std::mutex> lock(windowsMutex_);
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

ncclResult_t NetBackend::deliverGin(int peer, const char* message, size_t size) {
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
  const GinShape& shape = gin->shape();
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
    if (ownWindowPtr(peer, h.serial, h.offset, h.bytes, "put from another host", &dst) != ncclSuccess) {
      return ncclRemoteError;
    }
    CUDACHECK_AT(what, cudaMemcpyAsync(dst, message + sizeof(h), h.bytes, cudaMemcpyHostToDevice, stream_));
  }
  if (signal) {
    unsigned long long* word = nullptr;
    if (va) {
      char* w = nullptr;
      if (h.offset % sizeof(uint64_t) != 0 ||
          ownWindowPtr(peer, h.serial, h.offset, sizeof(uint64_t), "VA signal from another host", &w) != ncclSuccess) {
        return ncclRemoteError;
      }
      word = reinterpret_cast<unsigned long long*>(w);
    } else {
      word = gin->signal(static_cast<int>(h.context), h.signal, ctx_.lsaRank);
    }
    SignalAdds adds{};
    adds.add(word, h.value);
    CUDACHECK_AT(what, launchSignalAdds(adds, stream_));
  }
  CUDACHECK_AT(what, cudaStreamSynchronize(stream_));
  return ncclSuccess;
}

}  // namespace braid::window
