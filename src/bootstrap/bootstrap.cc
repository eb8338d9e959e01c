// Bootstrap::create: the rendezvous of the ranks with their root(s) and the ring that follows.
//
// Protocol (all connections start with the socket handshake of util/socket.h; structs: wire.h):
//  1. Every rank listens on its bootstrap interface (handshake key: from the first id's magic).
//  2. With nIds ids, root k serves the contiguous block of ranks rootBlock(nranks, nIds, k).
//     Each rank connects to its root (key: from that id's magic) and sends a RootCheckIn {rank,
//     nranks, nIds, root index, its listener address, its timeout, pid and host}. With several
//     roots, the first rank of each block also checks in with the previous root (cyclically) as
//     a "stitch", so that root can tell its block's last rank where the ring continues.
//  3. The connection to the root stays open. The root answers every rank once all the check-ins
//     it expects are in: RootReply {ok, address of the next rank}. A rank therefore returns from
//     the rendezvous only when its whole block is there, and any failure seen by the root reaches
//     every waiting rank as a RootReply {error, diagnosis} instead of a bare timeout: ranks that
//     never came (the root's deadline is the first rank's NCCL_BOOTSTRAP_TIMEOUT; ranks give it
//     kRootGrace more so that its diagnosis arrives first), inconsistent nranks or ids, a rank
//     claimed twice, a rank that disconnects before the end. A rank that sees its root's
//     connection close without a reply knows the root died or rejected its handshake (stale or
//     corrupted id); a refused connection means no root listens there any more.
//  4. Each rank then allGathers every rank's listener address around the ring (bootstrap_ops.cc:
//     sends go to the next rank over a direct connection, receives come from the previous one).
//     From then on any two ranks talk over direct connections: tagged messages with a
//     (kind, tag, size) header, matched by (peer, kind, tag) in arrival order.
// With NCCL_COMM_ID the id carries kCommIdMagic and the address rank 0 listens on: rank 0 runs the
// root on a thread for the duration of create, and the other ranks retry refused connections
// until it is up (NCCL_SOCKET_RETRY_CNT / NCCL_SOCKET_RETRY_SLEEP_MSEC, within the timeout).
//
// Results: ncclInvalidArgument for bad arguments; ncclInvalidUsage for garbage ids and for
// inconsistent calls between ranks (nranks, ids, duplicate rank); ncclRemoteError when another
// process is missing, died, refused or did not answer in time; ncclSystemError when a local
// system call fails (no interface, cannot listen); ncclInternalError when the abort flag is
// raised (with an INFO line, as it is not a failure of the bootstrap).
#include "bootstrap/bootstrap.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap_impl.h"
#include "bootstrap/root.h"
#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "util/check.h"
#include "util/log.h"
#include "util/net_if.h"
#include "util/params.h"
#include "util/socket_auth.h"
#include "util/text.h"

namespace braid {

namespace {

constexpr std::chrono::milliseconds kRootGrace(1000);
constexpr int64_t kMaxTimeoutSeconds = 86400;

std::chrono::milliseconds bootstrapTimeout() {
  int64_t seconds = paramInt(ParamId::kBootstrapTimeout);
  if (seconds < 1 || seconds > kMaxTimeoutSeconds) {
    WARN("NCCL_BOOTSTRAP_TIMEOUT=%lld is outside 1-86400 seconds; using 120", static_cast<long long>(seconds));
    seconds = 120;
  }
  return std::chrono::seconds(seconds);
}

// The context of one rank's rendezvous, for connecting and for messages.
struct Rendezvous {
  int rank = 0;
  int nranks = 0;
  int nroots = 0;
  std::vector<UniqueIdContents> roots;
  bool commIdMode = false;  // the id came from NCCL_COMM_ID: rank 0 runs the root
  Deadline deadline;        // NCCL_BOOTSTRAP_TIMEOUT from the start of create
  Deadline rootDeadline;    // the same plus kRootGrace, for the root's answer

  std::string rootName(int root) const {
    return "bootstrap root " + std::to_string(root) + " of " + std::to_string(nroots);
  }
};

ncclResult_t checkIn(const Rendezvous& rv, int root, CheckInKind kind, const SocketAddress& listen,
                     std::chrono::milliseconds timeout, Socket* out) {
  RootCheckIn in{};
  in.protocol = kBootstrapProtocol;
  in.kind = static_cast<uint32_t>(kind);
  in.rank = rv.rank;
  in.nranks = rv.nranks;
  in.nroots = rv.nroots;
  in.root = root;
  in.timeoutMs = static_cast<int32_t>(timeout.count());
  in.pid = static_cast<int32_t>(getpid());
  in.listen = listen;
  if (gethostname(in.host, sizeof(in.host) - 1) != 0) std::snprintf(in.host, sizeof(in.host), "unknown");
  // Under NCCL_COMM_ID rank 0 may not listen yet: keep retrying refused connections.
  NCCLCHECK(Socket::connect(rv.roots[static_cast<size_t>(root)].root, rv.roots[static_cast<size_t>(root)].magic,
                            SocketType::kBootstrap, rv.rootName(root), rv.commIdMode, rv.deadline, out));
  return out->sendAll(&in, sizeof(in), rv.deadline);
}

// Reads the root's framed RootReply. Every outcome other than an ok reply is one WARN here, in
// the words of this rank's situation.
ncclResult_t awaitRoot(const Rendezvous& rv, Socket* sock, RootReply* reply) {
  struct {
    uint64_t length;
    RootReply reply;
  } __attribute__((packed)) frame;
  std::string name = sock->peerName();
  size_t got = 0;
  for (;;) {
    bool closed = false;
    NCCLCHECK(sock->recvSome(&frame, sizeof(frame), &got, &closed));
    if (got == sizeof(frame)) break;
    if (closed) {
      WARN(
          "Rank %d of %d: %s closed the connection without answering: its process exited or was killed, or it "
          "rejected this rank's handshake because the unique id is stale (its root already served a job) or "
          "corrupted",
          rv.rank, rv.nranks, name.c_str());
      return ncclRemoteError;
    }
    if (rv.rootDeadline.aborted()) {
      INFO(kLogBootstrap, "Rank %d of %d: aborted while waiting for %s", rv.rank, rv.nranks, name.c_str());
      return ncclInternalError;
    }
    if (rv.rootDeadline.expired()) {
      WARN("Rank %d of %d: no answer from %s after %.3g s: its process may be stuck or stopped", rv.rank, rv.nranks,
           name.c_str(), rv.rootDeadline.timeoutSeconds());
      return ncclRemoteError;
    }
    pollfd pfd{sock->fd(), POLLIN, 0};
    (void)::poll(&pfd, 1, rv.rootDeadline.sliceMs());
  }
  ncclResult_t result = ncclSuccess;
  std::string why;
  if (parseRootReplyFrame(reinterpret_cast<const uint8_t*>(&frame), sizeof(frame), reply, &result, &why) !=
      ncclSuccess) {
    WARN("Rank %d of %d: %s sent %s", rv.rank, rv.nranks, name.c_str(), why.c_str());
    return ncclInternalError;
  }
  if (result != ncclSuccess) {
    WARN("Rank %d of %d: %s failed the rendezvous: %s", rv.rank, rv.nranks, name.c_str(),
         peerText(reply->message, sizeof(reply->message), sizeof(reply->message)).c_str());
    return result;
  }
  return ncclSuccess;
}

ncclResult_t checkArguments(const ncclUniqueId* ids, int nIds, int rank, int nranks, const void* out) {
  if (ids == nullptr || out == nullptr) {
    WARN("Bootstrap: %s is NULL", ids == nullptr ? "the unique id array" : "the output pointer");
    return ncclInvalidArgument;
  }
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    WARN("Bootstrap: rank %d is not in [0, nranks=%d)", rank, nranks);
    return ncclInvalidArgument;
  }
  if (nranks > kBootstrapMaxRanks) {
    WARN("Bootstrap: nranks=%d is more than the %d ranks a communicator may have", nranks, kBootstrapMaxRanks);
    return ncclInvalidArgument;
  }
  if (nIds < 1 || nIds > nranks) {
    WARN("Bootstrap: %d unique ids for %d ranks: need between 1 and nranks", nIds, nranks);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t Bootstrap::create(const ncclUniqueId* ids, int nIds, int rank, int nranks,
                               const std::atomic<int>* abortFlag, std::unique_ptr<Bootstrap>* out) {
  auto start = std::chrono::steady_clock::now();
  NCCLCHECK(checkArguments(ids, nIds, rank, nranks, out));
  std::chrono::milliseconds timeout = bootstrapTimeout();
  Rendezvous rv;
  rv.rank = rank;
  rv.nranks = nranks;
  rv.nroots = nIds;
  rv.roots.resize(static_cast<size_t>(nIds));
  rv.deadline = Deadline::after(timeout, abortFlag);
  rv.rootDeadline = Deadline::after(timeout + kRootGrace, abortFlag);
  for (int i = 0; i < nIds; ++i) NCCLCHECK(uniqueIdDecode(ids[i], i, nIds, &rv.roots[static_cast<size_t>(i)]));
  rv.commIdMode = rv.roots[0].magic == kCommIdMagic;
  // NCCL_COMM_ID's magic is a public constant: only a configured secret keeps strangers out.
  if (rv.commIdMode) socketAuthWarnIfUnauthenticated();
  if (rv.commIdMode && nIds > 1) {
    WARN("Rank %d of %d: an NCCL_COMM_ID unique id cannot be combined with other ids (%d ids given)", rank, nranks,
         nIds);
    return ncclInvalidUsage;
  }

  // Under NCCL_COMM_ID rank 0 runs the root itself, for the duration of create.
  std::unique_ptr<BootstrapRoot> localRoot;
  if (rv.commIdMode && rank == 0) {
    Socket rootListener;
    NCCLCHECK(Socket::listen(rv.roots[0].root, kCommIdMagic, SocketType::kBootstrap, &rootListener));
    NCCLCHECK(BootstrapRoot::start(std::move(rootListener), timeout, &localRoot));
  }

  NetIf netIf;
  NCCLCHECK(netIfFindBootstrap(rv.commIdMode ? &rv.roots[0].root : nullptr, &netIf));
  Socket listener;
  NCCLCHECK(Socket::listen(netIf.addr, rv.roots[0].magic, SocketType::kBootstrap, &listener));
  SocketAddress listenAddr = listener.localAddress();
  SocketAcceptor acceptor(std::move(listener), sizeof(PeerHello), std::chrono::milliseconds(5000),
                          kBootstrapMaxPending);

  int myRoot = rootOfRank(nranks, nIds, rank);
  int stitchRoot = nIds > 1 && rank == rootBlock(nranks, nIds, myRoot).begin ? (myRoot + nIds - 1) % nIds : -1;
  Socket rootSock, stitchSock;
  NCCLCHECK(checkIn(rv, myRoot, CheckInKind::kMember, listenAddr, timeout, &rootSock));
  if (stitchRoot >= 0) NCCLCHECK(checkIn(rv, stitchRoot, CheckInKind::kStitch, listenAddr, timeout, &stitchSock));
  RootReply reply{}, stitchReply{};
  NCCLCHECK(awaitRoot(rv, &rootSock, &reply));
  if (stitchRoot >= 0) NCCLCHECK(awaitRoot(rv, &stitchSock, &stitchReply));
  rootSock.close();
  stitchSock.close();
  if (!socketAddressIsValid(reply.next)) {
    WARN("Rank %d of %d: %s sent no address for the next rank", rank, nranks, rv.rootName(myRoot).c_str());
    return ncclInternalError;
  }

  auto impl = std::make_unique<BootstrapImpl>(rank, nranks, rv.roots[0].magic, std::move(acceptor), timeout, abortFlag);
  NCCLCHECK(impl->exchangeAddresses(reply.next));
  // Every rank has its reply once the ring works, so the local root has finished.
  if (localRoot) localRoot->join();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  INFO(kLogBootstrap, "Bootstrap: rank %d of %d ready in %.2f ms (%d root%s, listening on %s)", rank, nranks, ms, nIds,
       nIds == 1 ? "" : "s", socketAddressToString(listenAddr).c_str());
  *out = std::move(impl);
  return ncclSuccess;
}

}  // namespace braid
