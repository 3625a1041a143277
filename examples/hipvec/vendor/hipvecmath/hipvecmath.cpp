// libhipvecmath: host helpers used by the hipvec extension (see hipvecmath.h).
#include "hipvecmath.h"

extern "C" unsigned hvm_grid_size(unsigned long n, unsigned block_size) {
    if (block_size == 0) {
        block_size = 1;
    }
    unsigned long blocks = (n + block_size - 1) / block_size;
    return blocks == 0 ? 1u : static_cast<unsigned>(blocks);
}

extern "C" const char *hvm_version(void) { return "hipvecmath 1.0.0"; }
