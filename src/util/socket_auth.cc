// Keys and proofs of the socket handshake (see socket_auth.h).
#include "util/socket_auth.h"

#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

#include "util/check.h"
#include "util/hmac_sha256.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {

namespace {

constexpr char kKeyLabel[] = "braid-key-v1";
constexpr char kProofLabel[] = "braid-v1";

// The configured secret: BRAID_COMM_SECRET wins over BRAID_COMM_SECRET_FILE.
ncclResult_t configuredSecret(std::string* out) {
  out->clear();
  if (paramIsSet(ParamId::kCommSecret)) {
    *out = paramString(ParamId::kCommSecret);
    return ncclSuccess;
  }
  if (!paramIsSet(ParamId::kCommSecretFile)) return ncclSuccess;
  const std::string& path = paramString(ParamId::kCommSecretFile);
  std::ifstream file(path);
  if (!file || !std::getline(file, *out)) {
    WARN("BRAID_COMM_SECRET_FILE %s cannot be read: its first line is the job's secret", path.c_str());
    return ncclInvalidUsage;
  }
  if (!out->empty() && out->back() == '\r') out->pop_back();
  if (out->empty()) {
    WARN("BRAID_COMM_SECRET_FILE %s: the first line is empty; it must hold the job's secret", path.c_str());
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

}  // namespace

bool socketAuthSecretConfigured() { return paramIsSet(ParamId::kCommSecret) || paramIsSet(ParamId::kCommSecretFile); }

ncclResult_t socketAuthKey(uint64_t magic, SocketAuthKey* out) {
  std::string secret;
  NCCLCHECK(configuredSecret(&secret));
  HmacSha256 mac(secret.data(), secret.size());
  mac.update(kKeyLabel, sizeof(kKeyLabel) - 1);
  uint8_t word[8];
  for (int i = 0; i < 8; ++i) word[i] = static_cast<uint8_t>(magic >> (8 * i));
  mac.update(word, sizeof(word));
  const Sha256Digest d = mac.final();
  std::memcpy(out->data(), d.data(), out->size());
  // Wipe the local copy: nothing in this process needs the secret's text once the key exists.
  volatile char* s = secret.empty() ? nullptr : &secret[0];
  for (size_t i = 0; i < secret.size(); ++i) s[i] = 0;
  return ncclSuccess;
}

SocketProof socketAuthProof(const SocketAuthKey& key, SocketAuthRole role, uint32_t type, const SocketNonce& acceptor,
                            const SocketNonce& connector) {
  HmacSha256 mac(key.data(), key.size());
  mac.update(kProofLabel, sizeof(kProofLabel) - 1);
  const uint8_t roleByte = static_cast<uint8_t>(role);
  mac.update(&roleByte, 1);
  uint8_t typeBytes[4];
  for (int i = 0; i < 4; ++i) typeBytes[i] = static_cast<uint8_t>(type >> (8 * i));
  mac.update(typeBytes, sizeof(typeBytes));
  mac.update(acceptor.data(), acceptor.size());
  mac.update(connector.data(), connector.size());
  const Sha256Digest d = mac.final();
  SocketProof proof;
  std::memcpy(proof.data(), d.data(), proof.size());
  return proof;
}

void socketAuthWarnIfUnauthenticated() {
  if (socketAuthSecretConfigured()) return;
  static std::once_flag once;
  std::call_once(once, [] {
    WARN(
        "NCCL_COMM_ID is set and no BRAID_COMM_SECRET or BRAID_COMM_SECRET_FILE: this job is unauthenticated, so "
        "anyone who can reach the root's address can join it; give every rank the same secret");
  });
}

}  // namespace braid
