// The C++ build of abi_dump: the same facts as the C build, plus the function signatures that only
// C++ can name (see abi_dump.c).
#include "abi_dump.c"  // NOLINT(bugprone-suspicious-include): compiled a second time, as C++
