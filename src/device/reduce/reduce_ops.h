// Reduction functors for the collective kernels (reduce_functors.h, on the element arithmetic of
// reduce_elements.h) and their elementwise application to packs of elements (reduce_packs.h).
#pragma once

#include "device/reduce/reduce_packs.h"
