// The C++ build of abi_dump: the same facts as the C build, plus the "cxx." lines only C++ can print
// (mangled function signatures, exact field types, enum underlying types; see abi_dump.c).
#include "abi_dump.c"  // NOLINT(bugprone-suspicious-include): compiled a second time, as C++
