#include "transport/suspend.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "transport/memory.h"
#include "transport/uds.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid::transport {
namespace {

constexpr uint64_t kResumeMagic = 0x4252524553554d45ull;  // "BRRESUME"

// Sent to every peer with shared blocks once this rank's own blocks are remade.
struct ResumeNote {
  uint64_t magic;
  uint64_t commHash;
  int32_t fromRank;
  int32_t pad;
  char udsName[104];  // where this rank takes the descriptors of remade peer blocks ("" if nowhere)
};

// The payload of the datagram that carries a remade block's descriptor.
struct ResumeFdNote {
  uint64_t magic;
  uint64_t commHash;
  int32_t fromRank;
  int32_t pad;
  uint64_t ownerAddress;  // BlockRecord::ownerAddress
};

std::vector<BlockRecord> recordsOf(const std::vector<const Connections*>& all) {
  std::vector<BlockRecord> records;
  for (const Connections* conns : all) records.insert(records.end(), conns->blocks().begin(), conns->blocks().end());
  return records;
}

bool sharedWithPeer(Suspension s) {
  return s == Suspension::kOwn || s == Suspension::kImported || s == Suspension::kGranted;
}

// State of one resume.
struct Resume {
  const SuspendContext& ctx;
  std::vector<BlockRecord> records;
  std::vector<int> peers;                                // ascending, with blocks shared
  std::vector<std::string> peerSockets;                  // per entry of peers
  UdsSocket uds;                                         // bound when a peer process's blocks are mapped here
  std::vector<std::pair<ResumeFdNote, UniqueFd>> early;  // descriptors not yet asked for
  Deadline deadline;
  std::string me;
};

ncclResult_t remakeOwn(Resume* r) {
  for (const BlockRecord& rec : r->records) {
    if (rec.block->suspension() == Suspension::kOwn) NCCLCHECK(rec.block->resume(UniqueFd()));
  }
  return ncclSuccess;
}

ncclResult_t exchangeNotes(Resume* r) {
  ResumeNote mine;
  std::memset(&mine, 0, sizeof(mine));
  mine.magic = kResumeMagic;
  mine.commHash = r->ctx.commHash;
  mine.fromRank = r->ctx.rank;
  std::strncpy(mine.udsName, r->uds.name().c_str(), sizeof(mine.udsName) - 1);
  for (int peer : r->peers) NCCLCHECK(r->ctx.bootstrap->send(peer, tags::kResume, &mine, sizeof(mine)));
  for (int peer : r->peers) {
    ResumeNote note;
    NCCLCHECK(r->ctx.bootstrap->recv(peer, tags::kResume, &note, sizeof(note)));
    if (note.magic != kResumeMagic || note.commHash != r->ctx.commHash || note.fromRank != peer) {
      WARN("%s: resume: rank %d sent a message of another communicator or version", r->me.c_str(), peer);
      return ncclInternalError;
    }
    note.udsName[sizeof(note.udsName) - 1] = '\0';
    r->peerSockets.emplace_back(note.udsName);
  }
  return ncclSuccess;
}

const std::string& socketOf(const Resume& r, int peer) {
  auto it = std::lower_bound(r.peers.begin(), r.peers.end(), peer);
  return r.peerSockets[static_cast<size_t>(it - r.peers.begin())];
}

ncclResult_t drainFds(Resume* r) {
  if (!r->uds.valid()) return ncclSuccess;
  while (true) {
    ResumeFdNote note{};
    UniqueFd fd;
    bool got = false;
    NCCLCHECK(r->uds.tryRecvFd(&note, sizeof(note), &fd, r->me, &got));
    if (!got) return ncclSuccess;
    if (note.magic == kResumeMagic && note.commHash == r->ctx.commHash) r->early.emplace_back(note, std::move(fd));
  }
}

ncclResult_t sendFds(Resume* r) {
  auto drain = [r] { return drainFds(r); };
  for (const BlockRecord& rec : r->records) {
    if (rec.block->suspension() != Suspension::kOwn || !rec.block->exported()) continue;
    const std::string& dest = socketOf(*r, rec.peer);
    if (dest.empty() || !r->uds.valid()) {
      WARN("%s: resume: rank %d maps this rank's block but named no socket for it", r->me.c_str(), rec.peer);
      return ncclInternalError;
    }
    UniqueFd fd;
    NCCLCHECK(rec.block->exportFd(&fd));
    ResumeFdNote note{kResumeMagic, r->ctx.commHash, r->ctx.rank, 0, rec.ownerAddress};
    NCCLCHECK(r->uds.sendFd(dest, fd.get(), &note, sizeof(note), r->deadline,
                            r->me + " -> rank " + std::to_string(rec.peer) + " (resumed block)", drain));
  }
  return ncclSuccess;
}

ncclResult_t takeFd(Resume* r, const BlockRecord& rec, UniqueFd* out) {
  while (true) {
    for (auto it = r->early.begin(); it != r->early.end(); ++it) {
      if (it->first.fromRank == rec.peer && it->first.ownerAddress == rec.ownerAddress) {
        *out = std::move(it->second);
        r->early.erase(it);
        return ncclSuccess;
      }
    }
    ResumeFdNote note{};
    UniqueFd fd;
    NCCLCHECK(r->uds.recvFd(&note, sizeof(note), &fd, r->deadline, r->me + " <- rank " + std::to_string(rec.peer)));
    if (note.magic == kResumeMagic && note.commHash == r->ctx.commHash) r->early.emplace_back(note, std::move(fd));
  }
}

ncclResult_t mapPeers(Resume* r) {
  for (const BlockRecord& rec : r->records) {
    const Suspension s = rec.block->suspension();
    if (s == Suspension::kGranted) NCCLCHECK(rec.block->resume(UniqueFd()));
    if (s != Suspension::kImported) continue;
    UniqueFd fd;
    NCCLCHECK(takeFd(r, rec, &fd));
    NCCLCHECK(rec.block->resume(std::move(fd)));
  }
  return ncclSuccess;
}

}  // namespace

BlockBytes ownDeviceBytes(const std::vector<const Connections*>& all) {
  BlockBytes bytes;
  for (const BlockRecord& rec : recordsOf(all)) {
    const Suspension s = rec.block->suspension();
    if (s == Suspension::kOwn) bytes.suspendable += rec.block->bytes();
    if (s == Suspension::kCannot && rec.own) bytes.persistent += rec.block->bytes();  // cudaMalloc
  }
  return bytes;
}

bool connectionsSuspendable(const std::vector<const Connections*>& all, std::string* why) {
  for (const BlockRecord& rec : recordsOf(all)) {
    if (rec.block->suspension() != Suspension::kCannot) continue;
    *why = "its connection with rank " + std::to_string(rec.peer) +
           " uses cudaMalloc memory (cuMem is off: NCCL_CUMEM_ENABLE=0, or the GPU has no virtual memory "
           "management), whose addresses cannot outlive it";
    return false;
  }
  return true;
}

ncclResult_t suspendConnections(const std::vector<const Connections*>& all) {
  const std::vector<BlockRecord> records = recordsOf(all);
  for (const BlockRecord& rec : records) {
    if (rec.block->suspension() == Suspension::kImported) NCCLCHECK(rec.block->suspend(0));
  }
  for (const BlockRecord& rec : records) {
    if (rec.block->suspension() == Suspension::kOwn) NCCLCHECK(rec.block->suspend(rec.keepBytes));
  }
  return ncclSuccess;
}

ncclResult_t resumeConnections(const SuspendContext& ctx, const std::vector<const Connections*>& all) {
  Resume r{ctx, recordsOf(all), {}, {}, UdsSocket(), {}, Deadline(), std::string()};
  r.me = "rank " + std::to_string(ctx.rank) + " (GPU " + std::to_string(ctx.cudaDev) + ")";
  r.deadline = Deadline::after(std::chrono::seconds(paramInt(ParamId::kBootstrapTimeout)), ctx.abortFlag);
  std::set<int> peers;
  bool mapsPeerProcess = false;
  for (const BlockRecord& rec : r.records) {
    const Suspension s = rec.block->suspension();
    if (sharedWithPeer(s)) peers.insert(rec.peer);
    mapsPeerProcess = mapsPeerProcess || s == Suspension::kImported;
  }
  r.peers.assign(peers.begin(), peers.end());
  NCCLCHECK(remakeOwn(&r));
  if (mapsPeerProcess) {
    const std::string name = udsSocketName(ctx.commHash, ctx.rank, static_cast<int>(::getpid()), nextUdsSerial());
    NCCLCHECK(UdsSocket::bind(name, r.me, &r.uds));
  }
  NCCLCHECK(exchangeNotes(&r));
  NCCLCHECK(sendFds(&r));
  return mapPeers(&r);
}

}  // namespace braid::transport
