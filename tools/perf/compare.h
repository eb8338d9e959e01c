// --compare: runs this benchmark twice as child processes, once on the library this binary loaded
// (Braid, normally) and once on another libnccl.so.2 (LD_PRELOAD + LD_LIBRARY_PATH), and prints
// both medians and their ratio.
#pragma once

#include "json_report.h"
#include "options.h"

namespace braidperf {

int runCompare(int argc, char** argv, const Options& opt);

// Path of the libnccl.so.2 this process actually uses.
const char* loadedLibraryPath();

// That library as --json describes it (label "A").
JsonLibrary loadedLibrary();

}  // namespace braidperf
