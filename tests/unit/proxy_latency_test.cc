// Ping-pong through two proxies over loopback sockets, the GPUs played by host threads: every step
// goes and comes back while idle receive FIFOs sit beside the busy ones (which a proxy then tests
// through one epoll scan per sweep, net/ready_scan.h). Prints the one-way latency of a NET hop as
// the proxies add it; meaningful on a machine with a core per spinning thread (4), not on CI's 2.
// 64 cores of the GPU machines, before the scan: 9.8 / 13.9 / 16.5 us with 0 / 4 / 12 idle FIFOs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "net/socket_net_plugin.h"
#include "proxy/proxy.h"
#include "util/params.h"

namespace braid::proxy {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSlots = kFifoSlotsSimple;
constexpr size_t kSlotBytes = 64 << 10;

struct HostFifo {
  alignas(128) uint64_t head = 0;
  alignas(128) uint64_t tail = 0;
  alignas(128) uint32_t sizes[kNetSizeSlots] = {};
  std::vector<char> buff = std::vector<char>(kSlots * kSlotBytes);
};

struct Conn {
  void* send = nullptr;
  void* recv = nullptr;
};

class ProxyLatency : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("NCCL_SOCKET_IFNAME", "=lo", 1);
    paramsReset();
    ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
    ASSERT_EQ(net_.init(&ctx_, 7, &config, nullptr, nullptr), ncclSuccess);
  }
  void TearDown() override {
    for (Conn& c : conns_) {
      EXPECT_EQ(net_.closeSend(c.send), ncclSuccess);
      EXPECT_EQ(net_.closeRecv(c.recv), ncclSuccess);
    }
    EXPECT_EQ(net_.finalize(ctx_), ncclSuccess);
  }
  Conn connect() {
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    void* listenComm = nullptr;
    Conn c;
    EXPECT_EQ(net_.listen(ctx_, 0, handle, &listenComm), ncclSuccess);
    while (c.send == nullptr || c.recv == nullptr) {
      if (c.send == nullptr) {
        EXPECT_EQ(net_.connect(ctx_, 0, handle, &c.send, nullptr), ncclSuccess);
      }
      if (c.recv == nullptr) {
        EXPECT_EQ(net_.accept(listenComm, &c.recv, nullptr), ncclSuccess);
      }
    }
    EXPECT_EQ(net_.closeListen(listenComm), ncclSuccess);
    conns_.push_back(c);
    return c;
  }
  NetFifo fifoOf(HostFifo* f, void* comm, bool isSend) {
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
    io.tag = 3;
    io.what = isSend ? "send" : "recv";
    return io;
  }
  const ncclNet_v11_t& net_ = net::socketNetPlugin();
  void* ctx_ = nullptr;
  std::vector<Conn> conns_;
};

uint64_t load(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void store(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

TEST_F(ProxyLatency, OneWayHop) {
  for (int idle : {0, 4, 12}) {
    Conn ab = connect();
    Conn ba = connect();
    std::vector<Conn> idleConns;
    for (int i = 0; i < 2 * idle; ++i) idleConns.push_back(connect());
    HostFifo aSend, aRecv, bSend, bRecv;
    std::vector<HostFifo> idleFifos(2 * idle);
    Proxy a("a", nullptr);
    Proxy b("b", nullptr);
    std::vector<NetFifo> aFifos = {fifoOf(&aSend, ab.send, true), fifoOf(&aRecv, ba.recv, false)};
    std::vector<NetFifo> bFifos = {fifoOf(&bSend, ba.send, true), fifoOf(&bRecv, ab.recv, false)};
    for (int i = 0; i < idle; ++i) {
      aFifos.push_back(fifoOf(&idleFifos[2 * i], idleConns[2 * i].recv, false));
      bFifos.push_back(fifoOf(&idleFifos[2 * i + 1], idleConns[2 * i + 1].recv, false));
    }
    const uint64_t ka = a.add(aFifos);
    const uint64_t kb = b.add(bFifos);
    constexpr int kIters = 300;
    std::thread echo([&] {
      for (uint64_t s = 0; s < kIters; ++s) {
        while (load(&bRecv.tail) < s + 1) {
        }
        store(&bRecv.head, s + 1);
        while (load(&bSend.head) + kSlots < s + 1) {
        }
        bSend.sizes[s % kNetSizeSlots] = 16;
        store(&bSend.tail, s + 1);
      }
    });
    std::vector<double> us;
    for (uint64_t s = 0; s < kIters; ++s) {
      const auto t0 = Clock::now();
      while (load(&aSend.head) + kSlots < s + 1) {
      }
      aSend.sizes[s % kNetSizeSlots] = 16;
      store(&aSend.tail, s + 1);
      const auto limit = t0 + std::chrono::seconds(20);
      while (load(&aRecv.tail) < s + 1) {
        ASSERT_LT(Clock::now(), limit) << "step " << s << " did not come back (" << idle << " idle FIFOs)";
      }
      store(&aRecv.head, s + 1);
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2);
    }
    echo.join();
    std::sort(us.begin(), us.end());
    std::printf("idle receive FIFOs per proxy %2d: one-way hop median %.1f us, p90 %.1f us\n", idle, us[us.size() / 2],
                us[us.size() * 9 / 10]);
    a.remove(ka);
    b.remove(kb);
  }
}

}  // namespace
}  // namespace braid::proxy
