#include "proxy/proxy.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "util/log.h"
#include "util/thread_guard.h"

namespace braid::proxy {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxSlots = 16;

const char* resultName(ncclResult_t res) {
  switch (res) {
    case ncclRemoteError:
      return "the peer closed or reset the connection (ncclRemoteError)";
    case ncclSystemError:
      return "a system call failed (ncclSystemError)";
    case ncclInternalError:
      return "internal error";
    default:
      return "error";
  }
}

}  // namespace

struct Proxy::Fifo {
  NetFifo io;
  uint64_t posted = 0;  // steps handed to the network
  uint64_t done = 0;    // steps whose transfer completed (published as head or tail)
  void* requests[kMaxSlots] = {};
  bool stopped = false;  // failed, or ended by a farewell
};

struct Proxy::Batch {
  uint64_t key = 0;
  std::vector<Fifo> fifos;
};

Proxy::Proxy(std::string name, ErrorSink onError, const LaunchCounts* launches)
    : name_(std::move(name)),
      onError_(std::move(onError)),
      pacer_(name_, launches),
      kicker_(std::make_shared<ProxyKicker>()) {
  kicker_->proxy_ = this;
  thread_ = std::thread([this] {
    // An exception stops this proxy's transfers: the communicator learns it like any network error.
    const ncclResult_t result = guardThread(name_.c_str(), [this] { run(); });
    if (result != ncclSuccess && onError_) onError_(result);
  });
}

Proxy::~Proxy() {
  {
    std::lock_guard<std::mutex> lock(kicker_->mutex_);
    kicker_->proxy_ = nullptr;  // a kick in progress has finished; later ones do nothing
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    changes_.store(true, std::memory_order_release);
  }
  pacer_.wake();
  thread_.join();
}

uint64_t Proxy::add(std::vector<NetFifo> fifos) {
  auto batch = std::make_unique<Batch>();
  for (NetFifo& io : fifos) {
    Fifo f;
    f.io = std::move(io);
    f.io.slots = std::clamp(f.io.slots, 1, kMaxSlots);
    batch->fifos.push_back(std::move(f));
  }
  uint64_t key = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    key = nextKey_++;
    batch->key = key;
    pendingAdds_.push_back(std::move(batch));
    changeSerial_++;
    changes_.store(true, std::memory_order_release);
  }
  pacer_.wake();
  return key;
}

void Proxy::remove(uint64_t key) {
  std::unique_lock<std::mutex> lock(mutex_);
  pendingRemoves_.push_back(key);
  const uint64_t serial = ++changeSerial_;
  changes_.store(true, std::memory_order_release);
  pacer_.wake();
  applied_.wait(lock, [&] { return appliedSerial_ >= serial; });
}

void ProxyKicker::kick() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (proxy_ != nullptr) proxy_->kick();
}

void Proxy::kick() { pacer_.kick(); }

void Proxy::farewell() {
  std::unique_lock<std::mutex> lock(mutex_);
  farewellPending_ = true;
  const uint64_t serial = ++changeSerial_;
  changes_.store(true, std::memory_order_release);
  pacer_.wake();
  applied_.wait(lock, [&] { return appliedSerial_ >= serial; });
}

void Proxy::applyChanges() {
  bool farewell = false;
  uint64_t serial = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& batch : pendingAdds_) batches_.push_back(std::move(batch));
    pendingAdds_.clear();
    for (uint64_t key : pendingRemoves_) {
      batches_.erase(std::remove_if(batches_.begin(), batches_.end(), [&](const auto& b) { return b->key == key; }),
                     batches_.end());
    }
    pendingRemoves_.clear();
    farewell = farewellPending_;
    farewellPending_ = false;
    serial = changeSerial_;
    changes_.store(false, std::memory_order_relaxed);
  }
  if (farewell) sendFarewells();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    appliedSerial_ = serial;
  }
  applied_.notify_all();
}

// The kernels have finished, but a send FIFO may still hold steps the network has not taken: they
// go first, then the farewells (in a slot the GPU no longer uses). Nothing here waits past the
// deadline: a peer that stopped reading must not hold up a destroy.
void Proxy::sendFarewells() {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(kFarewellMs);
  auto drained = [](const Fifo& f) { return f.done == filledSteps(f); };
  std::vector<Fifo*> senders;
  for (auto& batch : batches_) {
    for (Fifo& f : batch->fifos) {
      const bool peerGone = std::find(peersGone_.begin(), peersGone_.end(), f.io.peer) != peersGone_.end();
      if (f.io.isSend && !f.stopped && !peerGone) senders.push_back(&f);
    }
  }
  std::vector<std::pair<Fifo*, void*>> farewells;
  while (!senders.empty() && Clock::now() < deadline) {
    for (size_t i = 0; i < senders.size();) {
      Fifo& f = *senders[i];
      if (!f.stopped && !drained(f)) (void)progress(&f);
      if (f.stopped) {
        senders.erase(senders.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      void* request = nullptr;
      if (drained(f) && f.io.net->isend(f.io.comm, f.io.buff, kFarewellBytes, f.io.tag, f.io.mhandle, nullptr,
                                        &request) != ncclSuccess) {
        senders.erase(senders.begin() + static_cast<std::ptrdiff_t>(i));  // the peer is gone: nothing to tell
        continue;
      }
      if (request == nullptr) {
        i++;  // not drained yet, or the network is busy: again
        continue;
      }
      farewells.emplace_back(&f, request);
      senders.erase(senders.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  while (!farewells.empty() && Clock::now() < deadline) {
    for (size_t i = 0; i < farewells.size();) {
      int finished = 0;
      int size = 0;
      if (farewells[i].first->io.net->test(farewells[i].second, &finished, &size) != ncclSuccess || finished != 0) {
        farewells.erase(farewells.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        i++;
      }
    }
  }
  for (auto& batch : batches_) {
    for (Fifo& f : batch->fifos) f.stopped = f.stopped || f.io.isSend;  // nothing is sent after a farewell
  }
}

// Where step `step` is sent from, and how many bytes travel (see proxy.h).
char* Proxy::sendSlot(const NetFifo& io, uint64_t step, size_t* bytes) {
  const uint32_t size = *reinterpret_cast<const volatile uint32_t*>(&io.sizes[step % kNetSizeSlots]);
  if ((size & kNetSizeLL) != 0 && io.llBuff != nullptr) {
    *bytes = (size & ~kNetSizeLL) + 8;
    return io.llBuff + static_cast<size_t>(step % kFifoSlotsLL) * io.llSlotBytes;
  }
  *bytes = (static_cast<size_t>(size) + 15) / 16 * 16;
  return io.buff + static_cast<size_t>(step % static_cast<uint64_t>(io.slots)) * io.slotBytes;
}

// An LL step announced by its size word whose every line carries its flag (see proxy.h). Read
// from the last line back: where a step takes several passes of the CTA its last lines are
// written last, so a step still being written is usually told by its first load.
bool Proxy::llStepFilled(const NetFifo& io, uint64_t step) {
  if (io.llBuff == nullptr) return false;
  const uint32_t size = __atomic_load_n(&io.sizes[step % kNetSizeSlots], __ATOMIC_ACQUIRE);
  const size_t bytes = size & ~kNetSizeLL;
  if ((size & kNetSizeLL) == 0 || bytes == 0 || bytes % 16 != 0 || bytes > io.llSlotBytes) return false;
  const auto* line =
      reinterpret_cast<const uint64_t*>(io.llBuff + static_cast<size_t>(step % kFifoSlotsLL) * io.llSlotBytes);
  const uint64_t flag = static_cast<uint32_t>(step + 1);
  for (size_t word = bytes / 8; word-- > 0;) {
    if (__atomic_load_n(&line[word], __ATOMIC_ACQUIRE) >> 32 != flag) return false;
  }
  return true;
}

// The steps the GPU has filled, counted from the first: those below its tail (it covers every
// earlier step), then LL steps found by their flags, within the window the network may take.
uint64_t Proxy::filledSteps(const Fifo& f) {
  uint64_t filled = std::max(f.posted, __atomic_load_n(f.io.tail, __ATOMIC_ACQUIRE));
  const uint64_t window = f.done + static_cast<uint64_t>(f.io.slots);
  while (filled < window && llStepFilled(f.io, filled)) filled++;
  return filled;
}

// A received step of `bytes` in its Simple slot: an LL one (8 modulo 16) goes on to its LL slot.
ncclResult_t Proxy::placeReceived(const NetFifo& io, uint64_t step, size_t bytes) {
  if (bytes % 16 == 0) return ncclSuccess;
  if (bytes % 16 != 8 || io.llBuff == nullptr || bytes - 8 > io.llSlotBytes) {
    WARN(
        "%s: %s: step %llu arrived with %zu bytes, neither a Simple step (a multiple of 16) nor an LL one "
        "(8 more%s)",
        name_.c_str(), io.what.c_str(), static_cast<unsigned long long>(step), bytes,
        io.llBuff == nullptr ? "; LL over the network is off here: BRAID_NET_LL differs between ranks?" : "");
    return ncclInternalError;
  }
  const size_t slot = static_cast<size_t>(step % static_cast<uint64_t>(io.slots));
  const auto* from = reinterpret_cast<const uint64_t*>(io.buff + slot * io.slotBytes);
  auto* to = reinterpret_cast<uint64_t*>(io.llBuff + static_cast<size_t>(step % kFifoSlotsLL) * io.llSlotBytes);
  for (size_t i = 0; i < (bytes - 8) / 8; i++) __atomic_store_n(&to[i], from[i], __ATOMIC_RELAXED);
  return ncclSuccess;
}

bool Proxy::progress(Fifo* f) {
  NetFifo& io = f->io;
  bool moved = false;
  auto fail = [&](ncclResult_t res, const char* call) {
    WARN("%s: %s: network %s %s failed: %s; this connection stops (abort the communicator)", name_.c_str(),
         io.what.c_str(), io.net->name, call, resultName(res));
    f->stopped = true;
    if (onError_) onError_(res);
    return true;
  };
  // Post: sends of the steps the GPU filled, or receives into the slots it released.
  const uint64_t limit =
      io.isSend ? filledSteps(*f) : __atomic_load_n(io.head, __ATOMIC_ACQUIRE) + static_cast<uint64_t>(io.slots);
  while (f->posted < limit && f->posted < f->done + static_cast<uint64_t>(io.slots)) {
    const int slot = static_cast<int>(f->posted % static_cast<uint64_t>(io.slots));
    void* data = io.buff + static_cast<size_t>(slot) * io.slotBytes;
    void* request = nullptr;
    ncclResult_t res;
    if (io.isSend) {
      size_t bytes = 0;
      data = sendSlot(io, f->posted, &bytes);
      res = io.net->isend(io.comm, data, bytes, io.tag, io.mhandle, nullptr, &request);
    } else {
      size_t size = io.slotBytes;
      int tag = io.tag;
      void* mhandle = io.mhandle;
      res = io.net->irecv(io.comm, 1, &data, &size, &tag, &mhandle, nullptr, &request);
    }
    if (res != ncclSuccess) return fail(res, io.isSend ? "isend" : "irecv");
    if (request == nullptr) break;  // the network is busy: later
    f->requests[slot] = request;
    f->posted++;
    moved = true;
  }
  // Complete, in order, and publish.
  while (f->done < f->posted) {
    const int slot = static_cast<int>(f->done % static_cast<uint64_t>(io.slots));
    int finished = 0;
    int size = 0;
    const ncclResult_t res = io.net->test(f->requests[slot], &finished, &size);
    if (res != ncclSuccess) return fail(res, "test");
    if (finished == 0) break;
    f->requests[slot] = nullptr;
    if (!io.isSend && static_cast<size_t>(size) == kFarewellBytes) {
      INFO(kLogNet, "%s: %s: the peer ended the connection in order (it destroyed its communicator)", name_.c_str(),
           io.what.c_str());
      f->stopped = true;
      peersGone_.push_back(io.peer);
      return true;
    }
    if (!io.isSend) {
      const ncclResult_t placed = placeReceived(io, f->done, static_cast<size_t>(size));
      if (placed != ncclSuccess) return fail(placed, "receive (step size)");
    }
    if (io.isSend) __atomic_store_n(&io.sizes[f->done % kNetSizeSlots], 0u, __ATOMIC_RELAXED);  // before head
    f->done++;
    __atomic_store_n(io.isSend ? io.head : io.tail, f->done, __ATOMIC_RELEASE);
    moved = true;
  }
  return moved;
}

bool Proxy::progressAll() {
  bool moved = false;
  for (auto& batch : batches_) {
    for (Fifo& f : batch->fifos) {
      if (!f.stopped && progress(&f)) moved = true;
    }
  }
  return moved;
}

void Proxy::run() {
  while (true) {
    if (changes_.load(std::memory_order_acquire)) {
      bool stopping = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping = stop_;
      }
      applyChanges();
      if (stopping) return;
    }
    pacer_.afterPass(progressAll(), changes_);
  }
}

}  // namespace braid::proxy
