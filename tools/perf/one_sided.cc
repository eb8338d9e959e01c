#include "one_sided.h"

#include <dlfcn.h>

namespace braidperf {
namespace {

// Looks `name` up and stores it in *fn (a function pointer of the declared type), or notes it missing.
template <typename Fn>
void find(const SymbolLookup& lookup, const char* name, Fn* fn, std::vector<std::string>* missing) {
  void* sym = lookup(name);
  *fn = reinterpret_cast<Fn>(sym);
  if (sym == nullptr) missing->push_back(name);
}

struct Loaded {
  OneSidedApi api;
  std::vector<std::string> missing;
  Loaded() {
    missing = resolveOneSided([](const char* name) { return dlsym(RTLD_DEFAULT, name); }, &api);
  }
};

}  // namespace

std::vector<std::string> resolveOneSided(const SymbolLookup& lookup, OneSidedApi* api) {
  std::vector<std::string> missing;
  find(lookup, "ncclCommWindowRegister", &api->windowRegister, &missing);
  find(lookup, "ncclCommWindowDeregister", &api->windowDeregister, &missing);
  find(lookup, "ncclPutSignal", &api->putSignal, &missing);
  find(lookup, "ncclWaitSignal", &api->waitSignal, &missing);
  return missing;
}

const OneSidedApi& loadedOneSided(std::vector<std::string>* missing) {
  static const Loaded loaded;  // thread-safe initialization; a forked rank inherits it
  if (missing != nullptr) *missing = loaded.missing;
  return loaded.api;
}

std::string noOneSidedText(const std::vector<std::string>& missing) {
  std::string text = "the library has no one-sided operations (NCCL < 2.29)";
  for (size_t i = 0; i < missing.size(); i++) text += (i == 0 ? ": it does not export " : ", ") + missing[i];
  return text;
}

}  // namespace braidperf
