// The proxy moving NET FIFOs over the built-in socket network on loopback, with the GPU's side of
// each FIFO played by a host thread that follows the same protocol (device/dev_types.h): the
// sender fills a slot, stores its size, publishes tail; the receiver waits for tail, reads the slot,
// publishes head. Random step sizes, per-step different contents, every byte checked; a peer that
// closes its end is reported through the error callback, one that says farewell first is not; an
// idle proxy sleeps, longer once its launches have ended, wakes at once for a kick or a peer's
// data, and does not spin beside data it has no slot for; a ping-pong times a NET hop beside idle
// FIFOs.
#include "proxy/proxy.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "net/socket_net_plugin.h"
#include "scoped_env.h"
#include "util/params.h"

namespace braid::proxy {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kSlots = kFifoSlotsSimple;
constexpr size_t kSlotBytes = 256 << 10;
constexpr size_t kLlSlotBytes = 32 << 10;

// One direction's host FIFO, as the transport lays it out (each side has its own): Simple slots,
// and LL slots (with the padding for the last one's trailer).
struct HostFifo {
  alignas(128) uint64_t head = 0;
  alignas(128) uint64_t tail = 0;
  alignas(128) uint32_t sizes[kNetSizeSlots] = {};
  std::vector<char> buff = std::vector<char>(kSlots * kSlotBytes);
  std::vector<char> ll = std::vector<char>(kFifoSlotsLL * kLlSlotBytes + 16);
};

uint64_t load(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void store(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

bool waitFor(const uint64_t* counter, uint64_t atLeast, std::chrono::seconds limit) {
  const auto until = Clock::now() + limit;
  while (load(counter) < atLeast) {
    if (Clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

char byteOf(uint64_t step, size_t i) { return static_cast<char>((step * 131 + i * 7 + (i >> 9)) & 0xff); }

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

TEST_F(ProxyTest, StepsOfRandomSizesArriveInOrderAndIntact) {
  HostFifo sendSide, recvSide;
  std::atomic<int> errors{0};
  Proxy sender("sender proxy", [&](ncclResult_t) { errors++; });
  Proxy receiver("receiver proxy", [&](ncclResult_t) { errors++; });
  const uint64_t sendKey = sender.add({fifoOf(&sendSide, true)});
  const uint64_t recvKey = receiver.add({fifoOf(&recvSide, false)});

  constexpr uint64_t kSteps = 400;
  std::vector<uint32_t> sizes(kSteps);
  std::mt19937 rng(12345);
  for (uint32_t& s : sizes)
    s = rng() % 3 == 0 ? 1 + rng() % 64 : static_cast<uint32_t>(16 * (1 + rng() % (kSlotBytes / 16)));
  sizes[0] = kSlotBytes;  // a full slot
  sizes[1] = 0;           // an empty step still counts

  std::thread gpuSender([&] {
    for (uint64_t step = 0; step < kSteps; ++step) {
      ASSERT_TRUE(waitFor(&sendSide.head, step + 1 > kSlots ? step + 1 - kSlots : 0, std::chrono::seconds(20)));
      char* slot = sendSide.buff.data() + (step % kSlots) * kSlotBytes;
      for (size_t i = 0; i < sizes[step]; ++i) slot[i] = byteOf(step, i);
      sendSide.sizes[step % kNetSizeSlots] = sizes[step];
      store(&sendSide.tail, step + 1);
    }
  });
  size_t badBytes = 0;
  for (uint64_t step = 0; step < kSteps; ++step) {
    ASSERT_TRUE(waitFor(&recvSide.tail, step + 1, std::chrono::seconds(20))) << "step " << step;
    const char* slot = recvSide.buff.data() + (step % kSlots) * kSlotBytes;
    for (size_t i = 0; i < sizes[step]; ++i) badBytes += slot[i] != byteOf(step, i) ? 1 : 0;
    store(&recvSide.head, step + 1);
  }
  gpuSender.join();
  EXPECT_EQ(badBytes, 0u);
  // The sender's head reaches every step: all sends completed, every slot released.
  EXPECT_TRUE(waitFor(&sendSide.head, kSteps, std::chrono::seconds(10)));
  EXPECT_EQ(errors.load(), 0);
  sender.remove(sendKey);
  receiver.remove(recvKey);
}

// Four connections each way between two proxies, every one moving large steps (split over the data
// sockets) and small ones at once, the way a ring's channels cross hosts: every byte arrives.
TEST_F(ProxyTest, FourConnectionsEachWayMoveLargeAndSmallStepsAtOnce) {
  constexpr int kConns = 4;
  constexpr uint64_t kSteps = 60;
  std::vector<std::pair<void*, void*>> conns(2 * kConns);
  for (auto& c : conns) connectPair(&c.first, &c.second);
  std::vector<HostFifo> sendSides(2 * kConns), recvSides(2 * kConns);
  std::atomic<int> errors{0};
  Proxy a("a", [&](ncclResult_t) { errors++; });
  Proxy b("b", [&](ncclResult_t) { errors++; });
  std::vector<NetFifo> aFifos, bFifos;
  for (int i = 0; i < 2 * kConns; ++i) {
    // Connections 0..3 go from a to b, 4..7 from b to a.
    (i < kConns ? aFifos : bFifos).push_back(fifoOn(&sendSides[i], conns[i].first, true));
    (i < kConns ? bFifos : aFifos).push_back(fifoOn(&recvSides[i], conns[i].second, false));
  }
  const uint64_t ka = a.add(aFifos);
  const uint64_t kb = b.add(bFifos);
  auto sizeOf = [](int conn, uint64_t step) {
    return static_cast<uint32_t>(step % 3 == 0 ? 16 * (1 + (step * 7 + conn) % 40)
                                               : kSlotBytes - 16 * (conn + step % 5));
  };
  std::vector<std::thread> gpus;
  std::vector<size_t> badBytes(2 * kConns, 0);
  for (int i = 0; i < 2 * kConns; ++i) {
    gpus.emplace_back([&, i] {
      HostFifo& f = sendSides[i];
      for (uint64_t step = 0; step < kSteps; ++step) {
        if (!waitFor(&f.head, step + 1 > kSlots ? step + 1 - kSlots : 0, std::chrono::seconds(30))) return;
        char* slot = f.buff.data() + (step % kSlots) * kSlotBytes;
        for (size_t k = 0; k < sizeOf(i, step); ++k) slot[k] = byteOf(step + 1000 * i, k);
        f.sizes[step % kNetSizeSlots] = sizeOf(i, step);
        store(&f.tail, step + 1);
      }
    });
    gpus.emplace_back([&, i] {
      HostFifo& f = recvSides[i];
      for (uint64_t step = 0; step < kSteps; ++step) {
        if (!waitFor(&f.tail, step + 1, std::chrono::seconds(30))) {
          badBytes[i] += 1u << 30;
          return;
        }
        const char* slot = f.buff.data() + (step % kSlots) * kSlotBytes;
        for (size_t k = 0; k < sizeOf(i, step); ++k) badBytes[i] += slot[k] != byteOf(step + 1000 * i, k) ? 1 : 0;
        store(&f.head, step + 1);
      }
    });
  }
  for (std::thread& t : gpus) t.join();
  for (int i = 0; i < 2 * kConns; ++i) EXPECT_EQ(badBytes[i], 0u) << "connection " << i;
  EXPECT_EQ(errors.load(), 0);
  a.remove(ka);
  b.remove(kb);
}

// LL over the network: LL steps (lines in the LL FIFO, size marked kNetSizeLL) interleaved with
// Simple ones, each within its protocol's window on the shared head. Every LL step's lines must be
// in the receiver's LL slot when its tail says it arrived, every Simple step in its Simple slot.
TEST_F(ProxyTest, LlAndSimpleStepsInterleaveAndLlLinesLandInTheLlFifo) {
  withLl_ = true;
  HostFifo sendSide, recvSide;
  std::atomic<int> errors{0};
  Proxy sender("sender proxy", [&](ncclResult_t) { errors++; });
  Proxy receiver("receiver proxy", [&](ncclResult_t) { errors++; });
  sender.add({fifoOf(&sendSide, true)});
  receiver.add({fifoOf(&recvSide, false)});

  constexpr uint64_t kSteps = 300;
  std::mt19937 rng(777);
  std::vector<bool> isLl(kSteps);
  std::vector<uint32_t> bytes(kSteps);  // LL: the lines' bytes; Simple: the payload
  for (uint64_t step = 0; step < kSteps; ++step) {
    isLl[step] = step % 4 != 3;  // runs of LL steps, wider than the Simple window
    bytes[step] = isLl[step] ? static_cast<uint32_t>(16 * (1 + rng() % (kLlSlotBytes / 16)))
                             : static_cast<uint32_t>(1 + rng() % kSlotBytes);
  }
  std::thread gpuSender([&] {
    for (uint64_t step = 0; step < kSteps; ++step) {
      const uint64_t window = isLl[step] ? kFifoSlotsLL : kSlots;
      ASSERT_TRUE(waitFor(&sendSide.head, step + 1 > window ? step + 1 - window : 0, std::chrono::seconds(20)));
      char* slot = isLl[step] ? sendSide.ll.data() + (step % kFifoSlotsLL) * kLlSlotBytes
                              : sendSide.buff.data() + (step % kSlots) * kSlotBytes;
      for (size_t i = 0; i < bytes[step]; ++i) slot[i] = byteOf(step, i);
      sendSide.sizes[step % kNetSizeSlots] = bytes[step] | (isLl[step] ? kNetSizeLL : 0);
      store(&sendSide.tail, step + 1);
    }
  });
  size_t badBytes = 0;
  for (uint64_t step = 0; step < kSteps; ++step) {
    ASSERT_TRUE(waitFor(&recvSide.tail, step + 1, std::chrono::seconds(20))) << "step " << step;
    const char* slot = isLl[step] ? recvSide.ll.data() + (step % kFifoSlotsLL) * kLlSlotBytes
                                  : recvSide.buff.data() + (step % kSlots) * kSlotBytes;
    for (size_t i = 0; i < bytes[step]; ++i) badBytes += slot[i] != byteOf(step, i) ? 1 : 0;
    store(&recvSide.head, step + 1);
  }
  gpuSender.join();
  EXPECT_EQ(badBytes, 0u);
  EXPECT_TRUE(waitFor(&sendSide.head, kSteps, std::chrono::seconds(10)));
  EXPECT_EQ(errors.load(), 0);
}

// An LL line as the GPU writes it (device/prims/prims_ll.h): 4 data bytes and the flag, twice.
void writeLlLine(char* slot, size_t line, uint64_t data, uint64_t step) {
  const uint64_t flag = static_cast<uint32_t>(step + 1);
  auto* words = reinterpret_cast<uint64_t*>(slot + 16 * line);
  __atomic_store_n(&words[0], (data & 0xffffffffu) | flag << 32, __ATOMIC_RELEASE);
  __atomic_store_n(&words[1], (data >> 32) | flag << 32, __ATOMIC_RELEASE);
}
uint64_t lineData(uint64_t step, size_t line) { return (step + 1) * 0x9e3779b97f4a7c15ull ^ line; }

// LL steps published the GPU's way, by their size word and their lines' flags, with no tail
// (proxy.h): a step with a line still missing its flag is not sent; then steps of random line
// counts, each announced before its lines, arrive whole in order; every size word is cleared once
// its step is sent; and a farewell first sends a flag-published step the kernel left behind.
TEST_F(ProxyTest, LlStepsPublishedByTheirFlagsAloneAreSentWholeAndNotBefore) {
  withLl_ = true;
  HostFifo sendSide, recvSide;
  std::atomic<int> errors{0};
  Proxy receiver("receiver proxy", [&](ncclResult_t) { errors++; });
  receiver.add({fifoOf(&recvSide, false)});
  auto sender = std::make_unique<Proxy>("sender proxy", [&](ncclResult_t) { errors++; });
  const uint64_t key = sender->add({fifoOf(&sendSide, true)});
  auto sendSlotOf = [&](uint64_t step) { return sendSide.ll.data() + (step % kFifoSlotsLL) * kLlSlotBytes; };
  auto receivedWhole = [&](uint64_t step, size_t lines) {
    const char* slot = recvSide.ll.data() + (step % kFifoSlotsLL) * kLlSlotBytes;
    size_t bad = 0;
    for (size_t l = 0; l < lines; ++l) {
      uint64_t words[2];
      std::memcpy(words, slot + 16 * l, sizeof(words));
      const uint64_t data = (words[0] & 0xffffffffu) | (words[1] << 32);
      bad += data != lineData(step, l) || words[0] >> 32 != step + 1 || words[1] >> 32 != step + 1 ? 1 : 0;
    }
    return bad == 0;
  };

  // Step 0: announced, its first line written, its second not yet.
  sendSide.sizes[0] = 2 * 16 | kNetSizeLL;
  writeLlLine(sendSlotOf(0), 0, lineData(0, 0), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(load(&recvSide.tail), 0u) << "a step was sent before its last line's flag";
  writeLlLine(sendSlotOf(0), 1, lineData(0, 1), 0);
  ASSERT_TRUE(waitFor(&recvSide.tail, 1, std::chrono::seconds(10)));
  EXPECT_TRUE(receivedWhole(0, 2));
  store(&recvSide.head, 1);

  constexpr uint64_t kSteps = 200;
  std::mt19937 rng(4242);
  std::vector<size_t> lines(kSteps + 1, 2);
  for (uint64_t step = 1; step <= kSteps; ++step) lines[step] = 1 + rng() % (kLlSlotBytes / 16);
  std::thread gpuSender([&] {
    for (uint64_t step = 1; step <= kSteps; ++step) {
      ASSERT_TRUE(
          waitFor(&sendSide.head, step + 1 > kFifoSlotsLL ? step + 1 - kFifoSlotsLL : 0, std::chrono::seconds(20)));
      __atomic_store_n(&sendSide.sizes[step % kNetSizeSlots], static_cast<uint32_t>(lines[step] * 16) | kNetSizeLL,
                       __ATOMIC_RELAXED);
      for (size_t l = lines[step]; l-- > 0;) writeLlLine(sendSlotOf(step), l, lineData(step, l), step);
    }
  });
  size_t badSteps = 0;
  for (uint64_t step = 1; step <= kSteps; ++step) {
    ASSERT_TRUE(waitFor(&recvSide.tail, step + 1, std::chrono::seconds(20))) << "step " << step;
    badSteps += receivedWhole(step, lines[step]) ? 0 : 1;
    store(&recvSide.head, step + 1);
  }
  gpuSender.join();
  EXPECT_EQ(badSteps, 0u);
  ASSERT_TRUE(waitFor(&sendSide.head, kSteps + 1, std::chrono::seconds(10)));
  for (int w = 0; w < kNetSizeSlots; ++w) EXPECT_EQ(sendSide.sizes[w], 0u) << "size word " << w;
  EXPECT_EQ(load(&sendSide.tail), 0u) << "this test never used the tail";

  // The kernel's last step, then an orderly end before the proxy took it: it goes first.
  const uint64_t last = kSteps + 1;
  sendSide.sizes[last % kNetSizeSlots] = 16 | kNetSizeLL;
  writeLlLine(sendSlotOf(last), 0, lineData(last, 0), last);
  sender->farewell();
  sender->remove(key);
  sender.reset();
  ASSERT_TRUE(waitFor(&recvSide.tail, last + 1, std::chrono::seconds(10)));
  EXPECT_TRUE(receivedWhole(last, 1));
  EXPECT_EQ(errors.load(), 0);
}

// A receiver without LL FIFOs (BRAID_NET_LL differs between the ranks) cannot place an LL step: one
// error through the callback, instead of data in the wrong slot.
TEST_F(ProxyTest, AnLlStepAtAReceiverWithoutLlFifosIsAnError) {
  HostFifo sendSide, recvSide;
  std::atomic<int> errors{0};
  withLl_ = true;
  Proxy sender("sender proxy", nullptr);
  sender.add({fifoOf(&sendSide, true)});
  withLl_ = false;
  Proxy receiver("receiver proxy", [&](ncclResult_t res) {
    EXPECT_EQ(res, ncclInternalError);
    errors++;
  });
  receiver.add({fifoOf(&recvSide, false)});
  sendSide.sizes[0] = 64 | kNetSizeLL;
  store(&sendSide.tail, 1);
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (errors.load() == 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(errors.load(), 1);
  EXPECT_EQ(load(&recvSide.tail), 0u) << "the step was not published";
}

TEST_F(ProxyTest, APeerThatClosesIsReportedAndTheOtherStepsStop) {
  HostFifo recvSide;
  std::atomic<int> errors{0};
  std::atomic<ncclResult_t> reported{ncclSuccess};
  Proxy receiver("receiver proxy", [&](ncclResult_t res) {
    reported = res;
    errors++;
  });
  receiver.add({fifoOf(&recvSide, false)});
  ASSERT_EQ(net_.closeSend(sendComm_), ncclSuccess);  // the sending host goes away
  sendComm_ = nullptr;
  pairs_[0].first = nullptr;
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (errors.load() == 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(errors.load(), 1);
  EXPECT_EQ(reported.load(), ncclRemoteError);
  EXPECT_EQ(load(&recvSide.tail), 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(errors.load(), 1) << "a failed FIFO is reported once";
}

// An orderly end: the sender's GPU leaves steps in its FIFO that the network has not taken yet, then
// its communicator is destroyed (farewell, then the connection closes). Every step still arrives,
// and the receiving proxy stops that FIFO without reporting an error.
TEST_F(ProxyTest, AFarewellAfterTheLastStepsEndsTheReceiversFifoWithoutAnError) {
  HostFifo sendSide, recvSide;
  std::atomic<int> errors{0};
  Proxy receiver("receiver proxy", [&](ncclResult_t) { errors++; });
  receiver.add({fifoOf(&recvSide, false)});
  {
    Proxy sender("sender proxy", [&](ncclResult_t) { errors++; });
    const uint64_t key = sender.add({fifoOf(&sendSide, true)});
    for (uint64_t step = 0; step < kSlots; ++step) {
      char* slot = sendSide.buff.data() + step * kSlotBytes;
      for (size_t i = 0; i < kSlotBytes; ++i) slot[i] = byteOf(step, i);
      sendSide.sizes[step] = kSlotBytes;
    }
    store(&sendSide.tail, kSlots);  // the kernel is done; the proxy may not have sent a byte yet
    sender.farewell();
    sender.remove(key);
  }
  ASSERT_EQ(net_.closeSend(sendComm_), ncclSuccess);
  sendComm_ = nullptr;
  pairs_[0].first = nullptr;
  ASSERT_TRUE(waitFor(&recvSide.tail, kSlots, std::chrono::seconds(10)));
  size_t badBytes = 0;
  for (uint64_t step = 0; step < kSlots; ++step) {
    const char* slot = recvSide.buff.data() + step * kSlotBytes;
    for (size_t i = 0; i < kSlotBytes; ++i) badBytes += slot[i] != byteOf(step, i) ? 1 : 0;
  }
  EXPECT_EQ(badBytes, 0u);
  store(&recvSide.head, kSlots);  // the receiver's GPU consumes them and releases the slots
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(errors.load(), 0) << "a peer that said farewell is not a failed peer";
  EXPECT_EQ(load(&recvSide.tail), static_cast<uint64_t>(kSlots)) << "the farewell is not a step";
}

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec * 1e-6;
}

// CPU seconds the whole process uses in 0.5 s, after 50 ms in which its proxies go past their spin
// window (2 ms by default) and fall asleep.
double cpuOfHalfASecondIdle() {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const double before = cpuSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  return cpuSeconds() - before;
}

TEST_F(ProxyTest, AnIdleProxySleepsAndAKickWakesItAtOnce) {
  HostFifo sendSide, recvSide;
  Proxy sender("sender proxy", nullptr);
  Proxy receiver("receiver proxy", nullptr);
  sender.add({fifoOf(&sendSide, true)});
  receiver.add({fifoOf(&recvSide, false)});
  const double used = cpuOfHalfASecondIdle();
  EXPECT_LT(used, 0.1) << "two idle proxies used " << used << " s of CPU in 0.5 s";
  // A step after the idle time still goes through.
  sendSide.buff[0] = 42;
  sendSide.sizes[0] = 1;
  sender.kick();
  store(&sendSide.tail, 1);
  ASSERT_TRUE(waitFor(&recvSide.tail, 1, std::chrono::seconds(5)));
  EXPECT_EQ(recvSide.buff[0], 42);
}

// Proxies that never spin and sleep up to 200 ms (BRAID_PROXY_LAUNCH_WINDOW_MS as given), so that
// a wake that does not come shows as tens of milliseconds on any machine. The caller restores the
// environment and calls paramsReset() when its proxies are gone.
void useLongSleepsWithoutSpin(testing::ScopedEnv* env, const char* launchWindowMs) {
  env->clear({"BRAID_PROXY_SPIN_US", "BRAID_PROXY_MAX_SLEEP_US", "BRAID_PROXY_LAUNCH_WINDOW_MS"});
  setenv("BRAID_PROXY_SPIN_US", "0", 1);
  setenv("BRAID_PROXY_MAX_SLEEP_US", "200000", 1);
  setenv("BRAID_PROXY_LAUNCH_WINDOW_MS", launchWindowMs, 1);
  paramsReset();
}

// The sending GPU publishes a 16-byte step (then `kick`s its proxy, when given, as its launch
// would); the receiving GPU waits for it and releases the slot. Milliseconds from publication to
// arrival, or a negative value after 5 s.
double msToMoveOneStep(HostFifo* sendSide, HostFifo* recvSide, uint64_t step, Proxy* kick) {
  sendSide->sizes[step % kNetSizeSlots] = 16;
  const auto t0 = Clock::now();
  store(&sendSide->tail, step + 1);
  if (kick != nullptr) kick->kick();
  if (!waitFor(&recvSide->tail, step + 1, std::chrono::seconds(5))) return -1;
  store(&recvSide->head, step + 1);
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A step from a peer while the receiving proxy sleeps (no launch kicked it, as when the peer runs
// late): the socket's data ends the sleep at once instead of at the next timed poll. Sleeps of up to
// 200 ms and no spin window make the difference plain on any machine: after 400 ms of idle time the
// receiver is in a 200 ms sleep that ends ~127 ms after the step arrives.
TEST_F(ProxyTest, AStepFromAPeerWakesASleepingReceiverAtOnce) {
  testing::ScopedEnv env;
  useLongSleepsWithoutSpin(&env, "0");
  HostFifo sendSide, recvSide;
  std::vector<double> ms;
  {
    Proxy sender("sender proxy", nullptr);
    Proxy receiver("receiver proxy", nullptr);
    sender.add({fifoOf(&sendSide, true)});
    receiver.add({fifoOf(&recvSide, false)});
    for (uint64_t step = 0; step < 5; ++step) {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      ms.push_back(msToMoveOneStep(&sendSide, &recvSide, step, &sender));
      ASSERT_GE(ms.back(), 0) << "step " << step;
    }
  }
  env.restore();
  paramsReset();
  std::sort(ms.begin(), ms.end());
  EXPECT_LT(ms[ms.size() / 2], 50.0) << "the receiver saw the step only at the end of its sleep (worst " << ms.back()
                                     << " ms)";
}

// A kernel that starts long after its launch kicked the proxy (the host ahead of the GPU): within
// the launch window the sender sleeps at most 50 us, so its first step leaves at once, not at the
// end of a long sleep (without the window, 200 ms after the kick it is in a sleep that ends at
// 328 ms). Prints what the proxies cost in the window.
TEST_F(ProxyTest, AKernelThatStartsLongAfterItsLaunchIsSentAtOnce) {
  testing::ScopedEnv env;
  useLongSleepsWithoutSpin(&env, "1000");
  HostFifo sendSide, recvSide;
  std::vector<double> ms;
  double cpu = 0;
  double idle = 0;
  {
    Proxy sender("sender proxy", nullptr);
    Proxy receiver("receiver proxy", nullptr);
    sender.add({fifoOf(&sendSide, true)});
    receiver.add({fifoOf(&recvSide, false)});
    for (uint64_t step = 0; step < 3; ++step) {
      sender.kick();  // the launch
      const double before = cpuSeconds();
      const auto kicked = Clock::now();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the GPU is busy with earlier work
      cpu += cpuSeconds() - before;
      idle += std::chrono::duration<double>(Clock::now() - kicked).count();
      ms.push_back(msToMoveOneStep(&sendSide, &recvSide, step, nullptr));  // the kernel starts
      ASSERT_GE(ms.back(), 0) << "step " << step;
    }
  }
  env.restore();
  paramsReset();
  std::sort(ms.begin(), ms.end());
  std::printf("a late kernel's step: median %.2f ms; the process used %.1f%% of a core in the launch window\n",
              ms[ms.size() / 2], 100 * cpu / idle);
  EXPECT_LT(ms[ms.size() / 2], 20.0) << "the sender saw the step only at the end of a long sleep (worst " << ms.back()
                                     << " ms)";
}

// The same, past any launch window: while the peer watch has not seen the launch end (LaunchCounts
// differ), the sender still sleeps at most 50 us, so a kernel that starts 400 ms after its kick is
// sent at once (without the counts it would wait for the end of a 200 ms sleep).
TEST_F(ProxyTest, AKernelThatStartsAfterTheWindowIsSentAtOnceWhileItsLaunchHasNotEnded) {
  testing::ScopedEnv env;
  useLongSleepsWithoutSpin(&env, "0");
  HostFifo sendSide, recvSide;
  LaunchCounts launches;
  std::vector<double> ms;
  {
    Proxy sender("sender proxy", nullptr, &launches);
    Proxy receiver("receiver proxy", nullptr);
    sender.add({fifoOf(&sendSide, true)});
    receiver.add({fifoOf(&recvSide, false)});
    for (uint64_t step = 0; step < 3; ++step) {
      sender.kick();  // the launch
      launches.issued.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(400));         // the GPU is busy with earlier work
      ms.push_back(msToMoveOneStep(&sendSide, &recvSide, step, nullptr));  // the kernel starts
      ASSERT_GE(ms.back(), 0) << "step " << step;
      launches.completed.store(launches.issued.load());  // the watch sees it end
    }
  }
  env.restore();
  paramsReset();
  std::sort(ms.begin(), ms.end());
  EXPECT_LT(ms[ms.size() / 2], 20.0) << "the sender slept through a pending launch (worst " << ms.back() << " ms)";
}

// Sleeps (voluntary context switches: each ppoll that times out is one) of the whole process in
// 1.5 s, after 0.5 s in which its proxies fell asleep.
long sleepsInAnIdleSecondAndAHalf() {
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  return after.ru_nvcsw - before.ru_nvcsw;
}

// Once every launch has ended (LaunchCounts agree), nothing of ours needs an idle proxy before the
// next kick: its sleeps grow with the quiet time (1/64 of it, up to 100 ms) instead of stopping at
// BRAID_PROXY_MAX_SLEEP_US (1 ms). Two proxies wake ~200 times in 1.5 s instead of ~3,000, and a
// kick still wakes them at once.
TEST_F(ProxyTest, AnIdleProxyWhoseLaunchesHaveEndedWakesRarely) {
  HostFifo sendSide, recvSide;
  long withoutCounts = 0;
  {
    Proxy sender("sender proxy", nullptr);
    Proxy receiver("receiver proxy", nullptr);
    withoutCounts = sleepsInAnIdleSecondAndAHalf();
  }
  LaunchCounts launches;
  launches.issued.store(3);
  launches.completed.store(3);
  Proxy sender("sender proxy", nullptr, &launches);
  Proxy receiver("receiver proxy", nullptr, &launches);
  sender.add({fifoOf(&sendSide, true)});
  receiver.add({fifoOf(&recvSide, false)});
  const long withCounts = sleepsInAnIdleSecondAndAHalf();
  std::printf("sleeps of two idle proxies in 1.5 s: %ld without launch counts, %ld once their launches ended\n",
              withoutCounts, withCounts);
  EXPECT_LT(withCounts * 5, withoutCounts);
  sendSide.buff[0] = 42;
  sendSide.sizes[0] = 1;
  const auto t0 = Clock::now();
  sender.kick();
  store(&sendSide.tail, 1);
  ASSERT_TRUE(waitFor(&recvSide.tail, 1, std::chrono::seconds(5)));
  EXPECT_EQ(recvSide.buff[0], 42);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_LT(ms, 50.0) << "a kick did not end a long sleep at once";
}

// Data the GPU has no slot for stays unread in the receiver's socket, which stays readable: the
// receiving proxy must not take that for news and spin, but go back to timed sleeps.
TEST_F(ProxyTest, DataWithoutAFreeSlotDoesNotKeepTheReceiverBusy) {
  HostFifo sendSide, recvSide;
  Proxy sender("sender proxy", nullptr);
  Proxy receiver("receiver proxy", nullptr);
  sender.add({fifoOf(&sendSide, true)});
  receiver.add({fifoOf(&recvSide, false)});
  constexpr uint64_t kSteps = kSlots + 4;    // the receiving GPU never consumes: 4 steps find no slot
  constexpr uint32_t kStepBytes = 32 << 10;  // on the control socket, read into no buffer ahead
  for (uint64_t step = 0; step < kSteps; ++step) {
    ASSERT_TRUE(waitFor(&sendSide.head, step + 1 > kSlots ? step + 1 - kSlots : 0, std::chrono::seconds(5)));
    sendSide.sizes[step % kNetSizeSlots] = kStepBytes;
    store(&sendSide.tail, step + 1);
    sender.kick();
  }
  ASSERT_TRUE(waitFor(&recvSide.tail, kSlots, std::chrono::seconds(5)));
  ASSERT_TRUE(waitFor(&sendSide.head, kSteps, std::chrono::seconds(5)));  // all sent: in the receiver's socket
  const double used = cpuOfHalfASecondIdle();
  EXPECT_LT(used, 0.1) << "the proxies used " << used << " s of CPU in 0.5 s beside unread data";
  EXPECT_EQ(load(&recvSide.tail), kSlots);
  store(&recvSide.head, kSlots);  // the GPU consumes its slots: the rest arrives
  EXPECT_TRUE(waitFor(&recvSide.tail, kSteps, std::chrono::seconds(5)));
}

// What a CUDA graph's host node holds: it kicks while its proxy lives, and does nothing (no crash)
// once the proxy is gone, as when a graph is replayed after its communicator was destroyed.
TEST_F(ProxyTest, AKickerWakesItsProxyAndOutlivesIt) {
  HostFifo sendSide, recvSide;
  std::shared_ptr<ProxyKicker> sendKicker;
  std::shared_ptr<ProxyKicker> recvKicker;
  {
    Proxy sender("sender proxy", nullptr);
    Proxy receiver("receiver proxy", nullptr);
    sendKicker = sender.kicker();
    recvKicker = receiver.kicker();
    EXPECT_EQ(sendKicker, sender.kicker()) << "one kicker per proxy";
    sender.add({fifoOf(&sendSide, true)});
    receiver.add({fifoOf(&recvSide, false)});
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // both asleep
    sendSide.buff[0] = 7;
    sendSide.sizes[0] = 1;
    store(&sendSide.tail, 1);
    sendKicker->kick();
    recvKicker->kick();
    ASSERT_TRUE(waitFor(&recvSide.tail, 1, std::chrono::seconds(5)));
    EXPECT_EQ(recvSide.buff[0], 7);
  }
  sendKicker->kick();  // the proxies are gone: nothing happens
  recvKicker->kick();
}

// Ping-pong through two proxies, every step going and coming back, while idle receive FIFOs sit
// beside the busy ones (which a proxy tests through one epoll scan per sweep, net/ready_scan.h).
// Prints the one-way latency of a NET hop as the proxies add it: meaningful on a machine with a
// core per spinning thread (4), not on CI's 2. On the 64 cores of the GPU machines: 9.8 / 13.9 /
// 16.5 us with 0 / 4 / 12 idle FIFOs before the scan, 6.7 / 6.4 / 8.2 us with it and with batched
// socket calls (net/socket_net.h).
TEST_F(ProxyTest, PingPongBesideIdleReceiveFifos) {
  for (int idle : {0, 4, 12}) {
    std::pair<void*, void*> ab, ba;  // send end, receive end
    connectPair(&ab.first, &ab.second);
    connectPair(&ba.first, &ba.second);
    std::vector<std::pair<void*, void*>> idleConns(2 * idle);
    for (auto& c : idleConns) connectPair(&c.first, &c.second);
    HostFifo aSend, aRecv, bSend, bRecv;
    std::vector<HostFifo> idleFifos(2 * idle);
    Proxy a("a", nullptr);
    Proxy b("b", nullptr);
    std::vector<NetFifo> aFifos = {fifoOn(&aSend, ab.first, true), fifoOn(&aRecv, ba.second, false)};
    std::vector<NetFifo> bFifos = {fifoOn(&bSend, ba.first, true), fifoOn(&bRecv, ab.second, false)};
    for (int i = 0; i < idle; ++i) {
      aFifos.push_back(fifoOn(&idleFifos[2 * i], idleConns[2 * i].second, false));
      bFifos.push_back(fifoOn(&idleFifos[2 * i + 1], idleConns[2 * i + 1].second, false));
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
