// A ring of n ranks emulated on one GPU for the device-layer tests (device_ring_test.cu,
// device_direct_test.cu): one DevComm per rank, FIFOs in this GPU's memory for every ring and
// direct connection, the ring shapes a sweep runs, and the ranks' buffer pools.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device/dev_types.h"

namespace braid {
namespace devtest {

#define DEVTEST_CUDA(call)                                                                               \
  do {                                                                                                   \
    cudaError_t e_ = (call);                                                                             \
    if (e_ != cudaSuccess) {                                                                             \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return false;                                                                                      \
    }                                                                                                    \
  } while (0)

// The (ranks, channels) shapes of the emulated rings a sweep runs. The full tier: 2, 3, 4 and 8 ranks
// on 1 and 3 channels. The quick tier (BRAID_GPU_TIER=quick, tests/README.md) runs 2 ranks on 1
// channel, 3 (a ring that is not a power of two) and 8 on 3.
struct RingShape {
  int nranks;
  int nChannels;
};
inline std::vector<RingShape> sweepRingShapes() {
  const char* tier = std::getenv("BRAID_GPU_TIER");
  if (tier != nullptr && std::string(tier) == "quick") return {{2, 1}, {3, 3}, {8, 3}};
  std::vector<RingShape> shapes;
  for (int n : {2, 3, 4, 8}) {
    for (int nChannels : {1, 3}) shapes.push_back({n, nChannels});
  }
  return shapes;
}

// One communicator per rank, all on the current GPU, connected in one ring per channel. Channel c
// uses a different ring order (identity, reversed, evens then odds), so that ring positions and
// ranks differ. Up to kMaxDirectPeers + 1 ranks also get nChannels direct channels (every rank
// to every other, with LL and Simple FIFOs).
class RingEmulation {
 public:
  RingEmulation(int n, int nChannels);
  ~RingEmulation();
  RingEmulation(const RingEmulation&) = delete;
  RingEmulation& operator=(const RingEmulation&) = delete;

  int n() const { return n_; }
  int nChannels() const { return nChannels_; }
  DevComm* comm(int r) const { return comms_[r]; }
  cudaStream_t stream(int r) const { return streams_[r]; }
  void setAbort(int v) { *abortHost_ = v; }
  bool ok() const { return ok_; }

 private:
  bool init();
  int n_;
  int nChannels_;
  bool ok_ = false;
  volatile int* abortHost_ = nullptr;
  int* abortDev_ = nullptr;
  std::vector<void*> deviceAllocs_;
  std::vector<DevComm*> comms_;
  std::vector<cudaStream_t> streams_;
};

// Per-rank device pools for send and receive buffers, grown on demand.
class Buffers {
 public:
  ~Buffers();
  bool reserve(int nranks, size_t bytes);
  char* send(int r) const { return send_[r]; }
  char* recv(int r) const { return recv_[r]; }

 private:
  std::vector<char*> send_;
  std::vector<char*> recv_;
  size_t bytes_ = 0;
};

inline std::vector<int> ringOrder(int n, int channel) {
  std::vector<int> order;
  if (channel % 3 == 0) {
    for (int r = 0; r < n; r++) order.push_back(r);
  } else if (channel % 3 == 1) {
    for (int r = n - 1; r >= 0; r--) order.push_back(r);
  } else {
    for (int r = 0; r < n; r += 2) order.push_back(r);
    for (int r = 1; r < n; r += 2) order.push_back(r);
  }
  return order;
}

// FIFO slot sizes: small enough that large operations take many steps and wrap the FIFO often.
constexpr uint32_t kSlotBytes[kNumProtos] = {/*LL*/ 32 << 10, /*LL128*/ 128 * 512, /*Simple*/ 128 << 10};

inline RingEmulation::RingEmulation(int n, int nChannels) : n_(n), nChannels_(nChannels) { ok_ = init(); }

inline bool RingEmulation::init() {
  int* abortHost = nullptr;
  DEVTEST_CUDA(cudaHostAlloc(&abortHost, sizeof(int), cudaHostAllocMapped));
  *abortHost = 0;
  abortHost_ = abortHost;
  DEVTEST_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&abortDev_), abortHost, 0));
  std::vector<DevComm> host(n_);
  for (int r = 0; r < n_; r++) {
    std::memset(&host[r], 0, sizeof(DevComm));
    host[r].rank = r;
    host[r].nranks = n_;
    host[r].nChannels = nChannels_;
    for (int p = 0; p < kNumProtos; p++) host[r].slotBytes[p] = kSlotBytes[p];
    host[r].abortFlag = abortDev_;
  }
  size_t connBytes = 0;
  for (int p = 0; p < kNumProtos; p++) connBytes += static_cast<size_t>(kSlotBytes[p]) * kFifoSlots[p];
  for (int c = 0; c < nChannels_; c++) {
    const std::vector<int> order = ringOrder(n_, c);
    int* ranks = nullptr;
    DEVTEST_CUDA(cudaMalloc(&ranks, n_ * sizeof(int)));
    deviceAllocs_.push_back(ranks);
    DEVTEST_CUDA(cudaMemcpy(ranks, order.data(), n_ * sizeof(int), cudaMemcpyHostToDevice));
    for (int pos = 0; pos < n_; pos++) {
      // The connection from position pos to pos + 1: FIFO buffers and tail at the receiver, head
      // at the sender (all on this one GPU); zeroed.
      char* mem = nullptr;
      DEVTEST_CUDA(cudaMalloc(&mem, connBytes + 256));
      deviceAllocs_.push_back(mem);
      DEVTEST_CUDA(cudaMemset(mem, 0, connBytes + 256));
      const int sender = order[pos];
      const int receiver = order[(pos + 1) % n_];
      DevChannel& s = host[sender].channels[c];
      DevChannel& rcv = host[receiver].channels[c];
      s.ringRanks = ranks;
      s.ringIndex = pos;
      char* buff = mem;
      for (int p = 0; p < kNumProtos; p++) {
        s.send.buffs[p] = buff;
        rcv.recv.buffs[p] = buff;
        buff += static_cast<size_t>(kSlotBytes[p]) * kFifoSlots[p];
      }
      s.send.tail = rcv.recv.tail = reinterpret_cast<uint64_t*>(mem + connBytes);
      s.send.head = rcv.recv.head = reinterpret_cast<uint64_t*>(mem + connBytes + 128);
    }
  }
  if (n_ <= kMaxDirectPeers + 1) {
    for (int r = 0; r < n_; r++) {
      host[r].nDirectChannels = nChannels_;
      host[r].directSlotBytes = kSlotBytes[kProtoSimple];
    }
    for (int c = 0; c < nChannels_; c++) {
      for (int sender = 0; sender < n_; sender++) {
        for (int k = 1; k < n_; k++) {
          // Peer slot k - 1 of the sender goes to rank sender + k, whose slot k - 1 receives from it.
          char* mem = nullptr;
          DEVTEST_CUDA(cudaMalloc(&mem, connBytes + 256));
          deviceAllocs_.push_back(mem);
          DEVTEST_CUDA(cudaMemset(mem, 0, connBytes + 256));
          DevSendConn& s = host[sender].direct[c].send[k - 1];
          DevRecvConn& rcv = host[(sender + k) % n_].direct[c].recv[k - 1];
          char* buff = mem;
          for (int p = 0; p < kNumProtos; p++) {
            s.buffs[p] = rcv.buffs[p] = buff;
            buff += static_cast<size_t>(kSlotBytes[p]) * kFifoSlots[p];
          }
          s.tail = rcv.tail = reinterpret_cast<uint64_t*>(mem + connBytes);
          s.head = rcv.head = reinterpret_cast<uint64_t*>(mem + connBytes + 128);
        }
      }
    }
  }
  for (int r = 0; r < n_; r++) {
    DevComm* d = nullptr;
    DEVTEST_CUDA(cudaMalloc(&d, sizeof(DevComm)));
    deviceAllocs_.push_back(d);
    DEVTEST_CUDA(cudaMemcpy(d, &host[r], sizeof(DevComm), cudaMemcpyHostToDevice));
    comms_.push_back(d);
    cudaStream_t s = nullptr;
    DEVTEST_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    streams_.push_back(s);
  }
  return true;
}

inline RingEmulation::~RingEmulation() {
  cudaDeviceSynchronize();
  for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  for (void* p : deviceAllocs_) cudaFree(p);
  if (abortHost_ != nullptr) cudaFreeHost(const_cast<int*>(abortHost_));
}

inline Buffers::~Buffers() {
  if (!send_.empty()) cudaFree(send_[0]);
  if (!recv_.empty()) cudaFree(recv_[0]);
}

// Every rank's area `bytes` after the previous rank's in one allocation (the symmetric kernels
// address a peer's buffer as rank 0's plus a stride).
inline bool Buffers::reserve(int nranks, size_t bytes) {
  if (static_cast<int>(send_.size()) >= nranks && bytes_ >= bytes) return true;
  if (!send_.empty()) cudaFree(send_[0]);
  if (!recv_.empty()) cudaFree(recv_[0]);
  send_.assign(nranks, nullptr);
  recv_.assign(nranks, nullptr);
  bytes_ = bytes;
  DEVTEST_CUDA(cudaMalloc(&send_[0], bytes * nranks));
  DEVTEST_CUDA(cudaMalloc(&recv_[0], bytes * nranks));
  for (int r = 1; r < nranks; r++) {
    send_[r] = send_[0] + bytes * r;
    recv_[r] = recv_[0] + bytes * r;
  }
  return true;
}

}  // namespace devtest
}  // namespace braid
