// Unique id encoding, and bootstrapGetUniqueId (the root thread lives in root.cc).
#include "bootstrap/unique_id.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <random>

#include "bootstrap/bootstrap.h"
#include "bootstrap/root.h"
#include "util/check.h"
#include "util/log.h"
#include "util/net_if.h"
#include "util/params.h"
#include "util/text.h"

namespace braid {

void uniqueIdEncode(const UniqueIdContents& contents, ncclUniqueId* id) {
  std::memset(id->internal, 0, sizeof(id->internal));
  std::memcpy(id->internal, &contents.magic, sizeof(contents.magic));
  std::memcpy(id->internal + kUniqueIdAddressOffset, &contents.root, sizeof(contents.root));
}

ncclResult_t uniqueIdDecode(const ncclUniqueId& id, int index, int count, UniqueIdContents* out) {
  static_assert(kUniqueIdUsedBytes <= sizeof(ncclUniqueId::internal), "the id must hold magic and address");
  UniqueIdContents contents;
  std::memcpy(&contents.magic, id.internal, sizeof(contents.magic));
  std::memcpy(&contents.root, id.internal + kUniqueIdAddressOffset, sizeof(contents.root));
  bool tailZero = true;
  for (size_t i = kUniqueIdUsedBytes; i < sizeof(id.internal); ++i) tailZero = tailZero && id.internal[i] == 0;
  bool allZero = tailZero && contents.magic == 0 && !socketAddressIsValid(contents.root);
  if (allZero || !tailZero || !socketAddressIsValid(contents.root) || socketAddressPort(contents.root) == 0) {
    const char* why = allZero     ? "it is all zeros (was it filled by ncclGetUniqueId and passed to every rank?)"
                      : !tailZero ? "bytes 36-127 are not zero"
                      : !socketAddressIsValid(contents.root) ? "its address family is neither AF_INET nor AF_INET6"
                                                             : "its port is 0";
    WARN("Unique id %d of %d is garbage or uninitialized: %s; pass the id that ncclGetUniqueId returned, unchanged",
         index, count, why);
    return ncclInvalidUsage;
  }
  *out = contents;
  return ncclSuccess;
}

uint64_t uniqueIdRandomMagic() {
  std::random_device device;
  for (;;) {
    uint64_t magic = (static_cast<uint64_t>(device()) << 32) ^ device();
    if (magic != 0 && magic != kCommIdMagic) return magic;
  }
}

namespace {

// A root thread of this process on the bootstrap interface, and the id that names it.
ncclResult_t startRoot(UniqueIdContents* contents) {
  NetIf netIf;
  NCCLCHECK(netIfFindBootstrap(nullptr, &netIf));
  contents->magic = uniqueIdRandomMagic();
  Socket listener;
  NCCLCHECK(Socket::listen(netIf.addr, contents->magic, SocketType::kBootstrap, &listener));
  contents->root = listener.localAddress();
  std::unique_ptr<BootstrapRoot> root;
  NCCLCHECK(BootstrapRoot::start(std::move(listener), BootstrapRoot::idleTimeoutFromParams(), &root));
  // The root thread serves its job (or times out) on its own; see root.h for its lifetime.
  root->detach();
  INFO(kLogBootstrap, "Unique id: root listening on %s", socketAddressToString(contents->root).c_str());
  return ncclSuccess;
}

}  // namespace

ncclResult_t bootstrapGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) {
    WARN("ncclGetUniqueId: uniqueId is NULL");
    return ncclInvalidArgument;
  }
  UniqueIdContents contents;
  const std::string& commId = paramString(ParamId::kCommId);
  if (!trimWhitespace(commId).empty()) {
    // The root is rank 0's business (Bootstrap::create); the id only says where it will listen.
    NCCLCHECK(socketAddressParse(commId, AF_UNSPEC, "NCCL_COMM_ID", &contents.root));
    contents.magic = kCommIdMagic;
    INFO(kLogBootstrap | kLogInit, "Unique id for NCCL_COMM_ID=%s: rank 0 will run the root there",
         socketAddressToString(contents.root).c_str());
  } else {
    NCCLCHECK(startRoot(&contents));
  }
  uniqueIdEncode(contents, id);
  return ncclSuccess;
}

ncclResult_t bootstrapGetRootUniqueId(ncclUniqueId* id) {
  UniqueIdContents contents;
  NCCLCHECK(startRoot(&contents));
  uniqueIdEncode(contents, id);
  return ncclSuccess;
}

}  // namespace braid
