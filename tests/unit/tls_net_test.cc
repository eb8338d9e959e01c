// TLS under the bootstrap and the socket network (util/tls.h), on loopback: ranks as threads
// create a bootstrap over TLS and run allGather, barrier and ring messages with random per-rank
// data; the socket network moves messages of every size class, large ones split over its data
// sockets and helper threads, exactly; a listener that encrypts refuses a plain network peer.
// Each case prints its bandwidth beside the same case in plain text, for information.
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "net/socket_net.h"
#include "tls_test_util.h"
#include "util/check.h"

namespace braid {
namespace {

using testing::kTestPsk;
using testing::setPsk;
using Clock = std::chrono::steady_clock;

// 127.0.0.1, port 0 (the listener takes an ephemeral one).
SocketAddress loopback() {
  SocketAddress a{};
  EXPECT_EQ(socketAddressParse("127.0.0.1:1", AF_INET, "test", &a), ncclSuccess);
  socketAddressSetPort(&a, 0);
  return a;
}

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::vector<char> randomData(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<char> v(n);
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

using TlsNetTest = testing::TlsTest;

// One rank: create, allGather of a random slot, barrier, a large message to the next rank, barrier.
ncclResult_t runRank(const ncclUniqueId& id, int rank, int nranks, uint32_t seed, std::string* problem) {
  std::unique_ptr<Bootstrap> bs;
  NCCLCHECK(Bootstrap::create(&id, 1, rank, nranks, nullptr, &bs));
  constexpr size_t kSlot = 4099;
  std::vector<char> all(kSlot * static_cast<size_t>(nranks), 0x5a);
  const std::vector<char> mine = randomData(kSlot, seed + static_cast<uint32_t>(rank));
  std::memcpy(all.data() + kSlot * static_cast<size_t>(rank), mine.data(), kSlot);
  NCCLCHECK(bs->allGather(all.data(), kSlot));
  for (int r = 0; r < nranks; ++r) {
    if (std::memcmp(all.data() + kSlot * static_cast<size_t>(r), randomData(kSlot, seed + r).data(), kSlot) != 0) {
      *problem = "allGather slot " + std::to_string(r) + " differs on rank " + std::to_string(rank);
    }
  }
  NCCLCHECK(bs->barrier());
  const size_t big = (3 << 20) + static_cast<size_t>(rank);
  const int next = (rank + 1) % nranks;
  const int prev = (rank + nranks - 1) % nranks;
  const std::vector<char> out = randomData(big, seed * 7 + static_cast<uint32_t>(rank));
  std::vector<char> in((3 << 20) + static_cast<size_t>(prev));
  NCCLCHECK(bs->send(next, 5, out.data(), out.size()));
  NCCLCHECK(bs->recv(prev, 5, in.data(), in.size()));
  if (in != randomData(in.size(), seed * 7 + static_cast<uint32_t>(prev))) {
    *problem = "the ring message from rank " + std::to_string(prev) + " differs on rank " + std::to_string(rank);
  }
  return bs->barrier();
}

TEST_F(TlsNetTest, BootstrapOfRanksInThreadsOverTls) {
  BRAID_SKIP_WITHOUT_OPENSSL();
  ASSERT_EQ(setPsk(kTestPsk), ncclSuccess);
  constexpr int kRanks = 6;
  ncclUniqueId id;
  ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess);
  const uint32_t seed = std::random_device()();
  std::vector<ncclResult_t> results(kRanks, ncclInternalError);
  std::vector<std::string> problems(kRanks);
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] { results[r] = runRank(id, r, kRanks, seed, &problems[r]); });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(results[r], ncclSuccess) << "rank " << r << ": " << log();
    EXPECT_EQ(problems[r], "") << "rank " << r;
  }
  std::printf("  %d ranks over TLS: create, allGather, 3 MiB ring, barriers in %.2f s\n", kRanks, secondsSince(start));
  EXPECT_EQ(log().find("WARN"), std::string::npos) << log();
}

std::unique_ptr<net::SocketNetConn> acceptOne(net::SocketNetListener* l,
                                              std::chrono::milliseconds within = std::chrono::seconds(10)) {
  std::unique_ptr<net::SocketNetConn> conn;
  const auto until = Clock::now() + within;
  while (conn == nullptr && Clock::now() < until) {
    EXPECT_EQ(l->accept(&conn), ncclSuccess);
    if (conn == nullptr) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return conn;
}

// Posts every message at both ends and tests them until all are done; false after 60 s or on an error.
bool moveAll(net::SocketNetConn* send, net::SocketNetConn* recv, const std::vector<std::vector<char>>& payloads,
             std::vector<std::vector<char>>* outputs, std::vector<size_t>* sizes) {
  std::vector<net::SocketNetRequest*> sends(payloads.size()), recvs(payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    if (recv->post(false, (*outputs)[i].data(), (*outputs)[i].size(), static_cast<int>(i), &recvs[i]) != ncclSuccess ||
        send->post(true, const_cast<char*>(payloads[i].data()), payloads[i].size(), static_cast<int>(i), &sends[i]) !=
            ncclSuccess) {
      return false;
    }
  }
  size_t left = 2 * payloads.size();
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (left > 0 && Clock::now() < until) {
    for (size_t i = 0; i < payloads.size(); ++i) {
      bool done = false;
      if (sends[i] != nullptr) {
        if (send->test(sends[i], &done, nullptr) != ncclSuccess) return false;
        if (done) sends[i] = nullptr, left--;
      }
      if (recvs[i] != nullptr) {
        if (recv->test(recvs[i], &done, &(*sizes)[i]) != ncclSuccess) return false;
        if (done) recvs[i] = nullptr, left--;
      }
    }
  }
  return left == 0;
}

// Parameter: helper threads per connection end (0: the caller's thread moves the data sockets).
class TlsSocketNet : public testing::TlsTest, public ::testing::WithParamInterface<int> {};

TEST_P(TlsSocketNet, RandomMessagesOfEverySizeArriveExactly) {
  BRAID_SKIP_WITHOUT_OPENSSL();
  setEnv("NCCL_SOCKET_NTHREADS", std::to_string(GetParam()));
  setEnv("NCCL_NSOCKS_PERTHREAD", "2");
  const std::vector<size_t> sizes = {0,
                                     1,
                                     4095,
                                     net::kSocketNetInlineBytes,
                                     net::kSocketNetInlineBytes + 1,
                                     200001,
                                     7,
                                     (16 << 20) + 13,
                                     3 << 20,
                                     (64 << 20) + 5};
  std::vector<std::vector<char>> payloads;
  for (size_t i = 0; i < sizes.size(); ++i) payloads.push_back(randomData(sizes[i], static_cast<uint32_t>(i) + 11));
  double seconds[2] = {0, 0};
  for (const bool encrypt : {false, true}) {
    SCOPED_TRACE(encrypt ? "TLS" : "plain");
    // Before the connections: their helpers may write into these until the connections are gone.
    std::vector<std::vector<char>> outputs;
    for (size_t s : sizes) outputs.emplace_back(s + 64, static_cast<char>(0x5a));
    if (encrypt) {
      ASSERT_EQ(setPsk(kTestPsk), ncclSuccess);
    }
    net::SocketNetHandle handle{};
    std::unique_ptr<net::SocketNetListener> listener;
    ASSERT_EQ(net::SocketNetListener::listen(loopback(), &handle, &listener), ncclSuccess);
    std::unique_ptr<net::SocketNetConn> send;
    ASSERT_EQ(net::socketNetConnect(handle, net::socketNetSocksPerConn(), &send,
                                    [&] { return listener->progressHandshakes(); }),
              ncclSuccess);
    std::unique_ptr<net::SocketNetConn> recv = acceptOne(listener.get());
    ASSERT_NE(recv, nullptr);
    std::vector<size_t> got(sizes.size(), 12345);
    const auto start = Clock::now();
    ASSERT_TRUE(moveAll(send.get(), recv.get(), payloads, &outputs, &got)) << log();
    seconds[encrypt ? 1 : 0] = secondsSince(start);
    for (size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_EQ(got[i], sizes[i]) << "message " << i;
      EXPECT_EQ(std::memcmp(outputs[i].data(), payloads[i].data(), sizes[i]), 0) << "message " << i;
      EXPECT_EQ(outputs[i][sizes[i]], 0x5a) << "message " << i << " wrote past its size";
    }
  }
  size_t total = 0;
  for (size_t s : sizes) total += s;
  std::printf("  %d helper thread(s), %zu MiB: plain %.2f GB/s, TLS %.2f GB/s\n", GetParam(), total >> 20,
              total / seconds[0] / 1e9, total / seconds[1] / 1e9);
}

INSTANTIATE_TEST_SUITE_P(HelperThreads, TlsSocketNet, ::testing::Values(0, 2),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param) + "threads"; });

TEST_F(TlsNetTest, AnEncryptingListenerRefusesAPlainNetworkPeer) {
  BRAID_SKIP_WITHOUT_OPENSSL();
  ASSERT_EQ(setPsk(kTestPsk), ncclSuccess);
  net::SocketNetHandle handle{};
  std::unique_ptr<net::SocketNetListener> listener;
  ASSERT_EQ(net::SocketNetListener::listen(loopback(), &handle, &listener), ncclSuccess);
  tlsDisable();
  std::unique_ptr<net::SocketNetConn> send;
  const auto start = Clock::now();
  EXPECT_EQ(net::socketNetConnect(handle, 2, &send, [&] { return listener->progressHandshakes(); }), ncclRemoteError);
  EXPECT_LT(secondsSince(start), 2.0);
  EXPECT_EQ(acceptOne(listener.get(), std::chrono::milliseconds(200)), nullptr);
  EXPECT_NE(log().find("it encrypts with TLS and this process does not"), std::string::npos) << log();
}

}  // namespace
}  // namespace braid
