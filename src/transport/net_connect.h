// The NET groups of one connectChannels call: connections to ranks on other hosts, over the
// communicator's network (net/network.h), moved by its proxy thread (proxy/proxy.h).
//
// Each side allocates its own FIFO in pinned host memory, one block per group (peer, direction):
// per channel a 4 KiB line of counters (head at 0, tail at 128, the Simple step sizes at 256), then
// the Simple buffer. Nothing is mapped across ranks: the network carries the slots. One network
// connection per channel and direction.
//
// Message order, within connectChannels (see connect.cc):
//   listen():    allocate the blocks; every receiving channel listens and its handle goes to the
//                sender (bootstrap sends never wait);
//   [the P2P / SHM groups connect]
//   establish(): receive the handles, then poll every connect and accept of the call together
//                until all are made (NCCL_BOOTSTRAP_TIMEOUT, the abort flag), so two ranks that
//                each send to and receive from the other cannot wait on each other;
//   finish():    the connection structs, and the FIFOs handed to the proxy.
#pragma once

#include <nccl.h>
#include <nccl_net.h>

#include <memory>
#include <vector>

#include "device/dev_types.h"
#include "transport/connect_internal.h"
#include "util/socket.h"

namespace braid::transport {

// Everything the NET groups of one call hold: the proxy's FIFOs, the network connections and the
// host blocks. The destructor takes the FIFOs from the proxy first, then closes the connections,
// then frees the memory; it never waits for a peer.
class NetLinks {
 public:
  NetLinks() = default;
  ~NetLinks();
  NetLinks(const NetLinks&) = delete;
  NetLinks& operator=(const NetLinks&) = delete;

 private:
  friend class NetConnect;
  struct Conn {
    void* comm = nullptr;
    void* mhandle = nullptr;
    bool isSend = false;
  };
  const ncclNet_v11_t* net_ = nullptr;
  proxy::Proxy* proxy_ = nullptr;
  uint64_t proxyKey_ = 0;
  std::vector<void*> listens_;
  std::vector<Conn> conns_;
  std::vector<std::unique_ptr<Block>> blocks_;
};

class NetConnect {
 public:
  // `groups`: the call's NET groups (kind kNet); ctx.net must be set when there are any.
  NetConnect(const Context& ctx, std::vector<Group*> groups);
  [[nodiscard]] ncclResult_t listen();
  [[nodiscard]] ncclResult_t establish(const Deadline& deadline);
  // Fills send[c] / recv[c] of the groups' channels (the vectors are long enough) and moves what
  // the groups hold into *out.
  [[nodiscard]] ncclResult_t finish(std::vector<DevSendConn>* send, std::vector<DevRecvConn>* recv,
                                    std::unique_ptr<NetLinks>* out);

 private:
  // One channel of one group.
  struct Channel {
    Group* group;
    int channel;  // the call's channel number
    int index;    // within the group's block
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    void* listen = nullptr;  // receive side, until accepted
    int conn = -1;           // index in links_->conns_ once made
  };
  [[nodiscard]] ncclResult_t allocate(Group* g, char** host);
  [[nodiscard]] ncclResult_t sendHandles(const Group& g);
  [[nodiscard]] ncclResult_t recvHandles(const Group& g);
  [[nodiscard]] ncclResult_t pollOnce(bool* allDone);
  std::vector<Channel*> channelsOf(const Group& g);

  const Context& ctx_;
  std::vector<Group*> groups_;
  std::vector<char*> hosts_;  // each group's block, host address
  std::vector<Channel> channels_;
  std::unique_ptr<NetLinks> links_;
};

}  // namespace braid::transport
