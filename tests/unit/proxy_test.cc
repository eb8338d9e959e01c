// The proxy moving NET FIFOs over the built-in socket network on loopback, with the GPU's side of
// each FIFO played by a host thread that follows the same protocol (device/dev_types.h): the
// sender fills a slot, stores its size, publishes tail; the receiver waits for tail, reads the slot,
// publishes head. Random step sizes, per-step different contents, every byte checked; a peer that
// closes its end is reported through the error callback, one that says farewell first is not; a
// kicker outlives its proxy; a ping-pong times a NET hop beside idle FIFOs.
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

#include "proxy_test_util.h"
#include "scoped_env.h"
#include "util/params.h"

namespace braid::proxy {
namespace {

using namespace test_helpers;  // NOLINT(google-build-using-namespace): this family's helpers

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
