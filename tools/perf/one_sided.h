// The NCCL functions of braid-perf's one-sided operation (putsignal), looked up at run time: they
// came with NCCL 2.29 (windows with 2.27), and a binary that named them would not load, or would
// stop at the first call, on an older libnccl.so.2 (what --compare may run against).
#pragma once

#include <nccl.h>

#include <functional>
#include <string>
#include <vector>

namespace braidperf {

struct OneSidedApi {
  decltype(&ncclCommWindowRegister) windowRegister = nullptr;
  decltype(&ncclCommWindowDeregister) windowDeregister = nullptr;
  decltype(&ncclPutSignal) putSignal = nullptr;
  decltype(&ncclWaitSignal) waitSignal = nullptr;
};

// Finds a symbol of the library by name (nullptr when absent).
using SymbolLookup = std::function<void*(const char* name)>;

// Fills *api through lookup; returns the names of the functions the library lacks (empty: it has all).
std::vector<std::string> resolveOneSided(const SymbolLookup& lookup, OneSidedApi* api);

// The functions of the libnccl.so.2 this process loaded (dlsym(RTLD_DEFAULT), looked up once);
// *missing (if not null) gets the names it lacks.
const OneSidedApi& loadedOneSided(std::vector<std::string>* missing);

// "the library has no one-sided operations (NCCL < 2.29): it does not export A, B".
std::string noOneSidedText(const std::vector<std::string>& missing);

}  // namespace braidperf
