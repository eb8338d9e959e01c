// Shared by the TLS tests (tls_socket_test.cc, tls_net_test.cc): whether OpenSSL 3 is on this
// machine, keys, and a fixture that resets the encryption setting and captures the log.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "scoped_env.h"
#include "util/log.h"
#include "util/params.h"
#include "util/tls.h"

namespace braid::testing {

// Two keys of the job (each over NCCL's 32-byte minimum), and another job's.
inline const char* const kTestPsk = "test-psk-0123456789abcdef0123456789abcdef";
inline const char* const kOtherPsk = "other-psk-fedcba9876543210fedcba9876543210";

inline bool openSslPresent() {
  void* ssl = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
  if (ssl == nullptr) return false;
  dlclose(ssl);
  return true;
}

#define BRAID_SKIP_WITHOUT_OPENSSL()                                                               \
  do {                                                                                             \
    if (!::braid::testing::openSslPresent()) {                                                     \
      GTEST_SKIP() << "libssl.so.3 (OpenSSL 3) is not on this machine: TLS cannot be tested here"; \
    }                                                                                              \
  } while (0)

inline ncclResult_t setPsk(const char* psk) { return tlsSetPsk(psk, std::strlen(psk), "test"); }

// Every test starts with encryption unset and its own log file (NCCL_DEBUG=WARN), and ends with
// encryption unset.
class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.clear({"BRAID_ENCRYPTION_PSK_FILE", "BRAID_TLS_LIBSSL", "BRAID_TLS_LIBCRYPTO", "BRAID_COMM_SECRET",
                "BRAID_COMM_SECRET_FILE", "NCCL_COMM_ID", "NCCL_SOCKET_IFNAME", "NCCL_BOOTSTRAP_TIMEOUT", "NCCL_DEBUG",
                "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS", "NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD"});
    char dir[] = "/tmp/braid_tls_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT,BOOTSTRAP,NET", 1);
    setenv("NCCL_DEBUG_FILE", (dir_ + "/braid.%p.log").c_str(), 1);
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    setenv("NCCL_BOOTSTRAP_TIMEOUT", "20", 1);
    paramsReset();
    logReset();
    tlsReset();
  }
  void TearDown() override {
    if (HasFailure() || getenv("TLS_TEST_SHOW_LOG") != nullptr) std::printf("The log of this test:\n%s", log().c_str());
    tlsReset();
    env_.restore();
    paramsReset();
    logReset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  void setEnv(const char* name, const std::string& value) {
    setenv(name, value.c_str(), 1);
    paramsReset();
  }
  // What this process logged so far (the file is flushed and reopened).
  std::string log() {
    logReset();
    std::string text;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().extension() != ".log") continue;
      std::ifstream file(entry.path());
      std::stringstream s;
      s << file.rdbuf();
      text += s.str();
    }
    return text;
  }

  ScopedEnv env_;
  std::string dir_;
};

}  // namespace braid::testing
