// The built-in socket network through its ncclNet_v11_t table, as Braid's proxy (and any NCCL
// caller) uses it: init and devices on the loopback interface, properties, a non-blocking
// connect/accept, host-only registration, a message into a larger receive with the size reported
// by test, the refusals (grouped receives, GPU memory, a bad device), and teardown.
#include "net/socket_net_plugin.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "util/params.h"

namespace braid::net {
namespace {

class SocketNetPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("NCCL_SOCKET_IFNAME", "=lo", 1);  // before the first init, which finds the devices
    paramsReset();
    ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
    ASSERT_EQ(net_.init(&ctx_, 42, &config, nullptr, nullptr), ncclSuccess);
    ASSERT_NE(ctx_, nullptr);
  }
  void TearDown() override {
    if (ctx_ != nullptr) {
      EXPECT_EQ(net_.finalize(ctx_), ncclSuccess);
    }
  }
  const ncclNet_v11_t& net_ = socketNetPlugin();
  void* ctx_ = nullptr;
};

TEST_F(SocketNetPlugin, TheTableDescribesAHostNetworkOnTheChosenInterface) {
  EXPECT_STREQ(net_.name, "Socket");
  int ndev = 0;
  ASSERT_EQ(net_.devices(&ndev), ncclSuccess);
  ASSERT_EQ(ndev, 1);
  ncclNetProperties_v11_t props{};
  ASSERT_EQ(net_.getProperties(0, &props), ncclSuccess);
  EXPECT_STREQ(props.name, "lo");
  EXPECT_EQ(props.ptrSupport, NCCL_PTR_HOST);
  EXPECT_EQ(props.maxRecvs, 1);
  EXPECT_EQ(props.netDeviceType, NCCL_NET_DEVICE_HOST);
  EXPECT_EQ(props.vProps.ndevs, 1);
  EXPECT_GT(props.speed, 0);
  EXPECT_EQ(net_.getProperties(1, &props), ncclInvalidArgument);
  // Optional members a host network leaves out.
  EXPECT_EQ(net_.regMrDmaBuf, nullptr);
  EXPECT_EQ(net_.getDeviceMr, nullptr);
  EXPECT_EQ(net_.makeVDevice, nullptr);
}

TEST_F(SocketNetPlugin, AMessageCrossesAConnectionMadeWithoutBlocking) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* listenComm = nullptr;
  ASSERT_EQ(net_.listen(ctx_, 0, handle, &listenComm), ncclSuccess);
  ASSERT_NE(listenComm, nullptr);
  void* sendComm = nullptr;
  void* recvComm = nullptr;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((sendComm == nullptr || recvComm == nullptr) && std::chrono::steady_clock::now() < until) {
    if (sendComm == nullptr) {
      ASSERT_EQ(net_.connect(ctx_, 0, handle, &sendComm, nullptr), ncclSuccess);
    }
    if (recvComm == nullptr) {
      ASSERT_EQ(net_.accept(listenComm, &recvComm, nullptr), ncclSuccess);
    }
  }
  ASSERT_NE(sendComm, nullptr);
  ASSERT_NE(recvComm, nullptr);

  std::vector<int32_t> payload(1 << 18), out(1 << 19, -1);
  std::iota(payload.begin(), payload.end(), 7);
  void *smh = nullptr, *rmh = nullptr;
  ASSERT_EQ(net_.regMr(sendComm, payload.data(), payload.size() * 4, NCCL_PTR_HOST, &smh), ncclSuccess);
  ASSERT_EQ(net_.regMr(recvComm, out.data(), out.size() * 4, NCCL_PTR_HOST, &rmh), ncclSuccess);
  void* cudaMh = nullptr;
  EXPECT_EQ(net_.regMr(recvComm, out.data(), out.size() * 4, NCCL_PTR_CUDA, &cudaMh), ncclInternalError);

  void* sreq = nullptr;
  void* rreq = reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION);  // a hint, not a request
  ASSERT_EQ(net_.isend(sendComm, payload.data(), payload.size() * 4, 5, smh, nullptr, &sreq), ncclSuccess);
  void* data[1] = {out.data()};
  size_t sizes[1] = {out.size() * 4};
  int tags[1] = {5};
  void* mhs[1] = {rmh};
  ASSERT_EQ(net_.irecv(recvComm, 1, data, sizes, tags, mhs, nullptr, &rreq), ncclSuccess);
  ASSERT_NE(sreq, nullptr);
  ASSERT_NE(rreq, reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION));
  int sendDone = 0, recvDone = 0, received = -1;
  while ((sendDone == 0 || recvDone == 0) && std::chrono::steady_clock::now() < until) {
    if (sendDone == 0) {
      ASSERT_EQ(net_.test(sreq, &sendDone, nullptr), ncclSuccess);
    }
    if (recvDone == 0) {
      ASSERT_EQ(net_.test(rreq, &recvDone, &received), ncclSuccess);
    }
  }
  ASSERT_EQ(recvDone, 1);
  EXPECT_EQ(received, static_cast<int>(payload.size() * 4));
  EXPECT_EQ(std::memcmp(out.data(), payload.data(), payload.size() * 4), 0);
  EXPECT_EQ(out[payload.size()], -1);

  // Grouped receives are refused (maxRecvs 1); nothing to flush in host memory.
  void* data2[2] = {out.data(), out.data() + 8};
  size_t sizes2[2] = {32, 32};
  int tags2[2] = {0, 1};
  void* req = nullptr;
  EXPECT_EQ(net_.irecv(recvComm, 2, data2, sizes2, tags2, nullptr, nullptr, &req), ncclInternalError);
  int flushSize = 4;
  EXPECT_EQ(net_.iflush(recvComm, 1, data, &flushSize, mhs, &req), ncclSuccess);
  EXPECT_EQ(req, nullptr);

  EXPECT_EQ(net_.deregMr(sendComm, smh), ncclSuccess);
  EXPECT_EQ(net_.deregMr(recvComm, rmh), ncclSuccess);
  EXPECT_EQ(net_.closeSend(sendComm), ncclSuccess);
  EXPECT_EQ(net_.closeRecv(recvComm), ncclSuccess);
  EXPECT_EQ(net_.closeListen(listenComm), ncclSuccess);
}

TEST_F(SocketNetPlugin, ABadDeviceIsRefusedByName) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* listenComm = nullptr;
  EXPECT_EQ(net_.listen(ctx_, 3, handle, &listenComm), ncclInvalidArgument);
  EXPECT_EQ(listenComm, nullptr);
}

}  // namespace
}  // namespace braid::net
