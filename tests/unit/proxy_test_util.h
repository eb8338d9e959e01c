// What the proxy tests share: a host FIFO laid out as the transport lays it out, with the GPU's side
// played by a host thread, and a fixture that connects proxies over the socket network on loopback.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "net/socket_net_plugin.h"
#include "proxy/proxy.h"
#include "util/params.h"

namespace braid::proxy::test_helpers {

using Clock = std::chrono::steady_clock;

inline constexpr int kSlots = kFifoSlotsSimple;
inline constexpr size_t kSlotBytes = 256 << 10;
inline constexpr size_t kLlSlotBytes = 32 << 10;

// One direction's host FIFO, as the transport lays it out (each side has its own): Simple slots,
// and LL slots (with the padding for the last one's trailer).
struct HostFifo {
  alignas(128) uint64_t head = 0;
  alignas(128) uint64_t tail = 0;
  alignas(128) uint32_t sizes[kNetSizeSlots] = {};
  std::vector<char> buff = std::vector<char>(kSlots * kSlotBytes);
  std::vector<char> ll = std::vector<char>(kFifoSlotsLL * kLlSlotBytes + 16);
};

inline uint64_t load(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
inline void store(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

inline bool waitFor(const uint64_t* counter, uint64_t atLeast, std::chrono::seconds limit) {
  const auto until = Clock::now() + limit;
  while (load(counter) < atLeast) {
    if (Clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

inline char byteOf(uint64_t step, size_t i) { return static_cast<char>((step * 131 + i * 7 + (i >> 9)) & 0xff); }

class ProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("NCCL_SOCKET_IFNAME", "=lo", 1);
    paramsReset();
    ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
    ASSERT_EQ(net_.init(&ctx_, 7, &config, nullptr, nullptr), ncclSuccess);
    connectPair(&sendComm_, &recvComm_);
  }
  void TearDown() override {
    for (auto [send, recv] : pairs_) {
      if (send != nullptr) {
        EXPECT_EQ(net_.closeSend(send), ncclSuccess);
      }
      EXPECT_EQ(net_.closeRecv(recv), ncclSuccess);
    }
    EXPECT_EQ(net_.finalize(ctx_), ncclSuccess);
  }
  // One more connection over loopback, closed by TearDown.
  void connectPair(void** sendComm, void** recvComm) {
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    void* listenComm = nullptr;
    ASSERT_EQ(net_.listen(ctx_, 0, handle, &listenComm), ncclSuccess);
    *sendComm = nullptr;
    *recvComm = nullptr;
    const auto until = Clock::now() + std::chrono::seconds(10);
    while ((*sendComm == nullptr || *recvComm == nullptr) && Clock::now() < until) {
      if (*sendComm == nullptr) {
        ASSERT_EQ(net_.connect(ctx_, 0, handle, sendComm, nullptr), ncclSuccess);
      }
      if (*recvComm == nullptr) {
        ASSERT_EQ(net_.accept(listenComm, recvComm, nullptr), ncclSuccess);
      }
    }
    ASSERT_EQ(net_.closeListen(listenComm), ncclSuccess);
    ASSERT_NE(*sendComm, nullptr);
    ASSERT_NE(*recvComm, nullptr);
    pairs_.emplace_back(*sendComm, *recvComm);
  }
  NetFifo fifoOf(HostFifo* f, bool isSend) { return fifoOn(f, isSend ? sendComm_ : recvComm_, isSend); }
  NetFifo fifoOn(HostFifo* f, void* comm, bool isSend) {
    NetFifo io;
    io.isSend = isSend;
    io.net = &net_;
    io.comm = comm;
    io.buff = f->buff.data();
    io.slots = kSlots;
    io.slotBytes = kSlotBytes;
    io.head = &f->head;
    io.tail = &f->tail;
    io.sizes = f->sizes;
    if (withLl_) {
      io.llBuff = f->ll.data();
      io.llSlotBytes = kLlSlotBytes;
    }
    io.tag = 3;
    io.what = isSend ? "test send" : "test recv";
    return io;
  }
  const ncclNet_v11_t& net_ = net::socketNetPlugin();
  void* ctx_ = nullptr;
  void* sendComm_ = nullptr;
  void* recvComm_ = nullptr;
  std::vector<std::pair<void*, void*>> pairs_;  // every connection made, send and receive ends
  bool withLl_ = false;                         // fifoOf gives LL FIFOs too
};

}  // namespace braid::proxy::test_helpers
