/* libhipvecmath: a tiny stand-in for a ROCm library (think hipBLAS).
 *
 * The hipvec extension links it with plain -lhipvecmath and no -L: like a
 * ROCm library, its directory has to come from LIBRARY_PATH at link time
 * and from LD_LIBRARY_PATH (or ldconfig) at load time. */
#ifndef HIPVECMATH_H
#define HIPVECMATH_H

#ifdef __cplusplus
extern "C" {
#endif

/* Grid size for n elements with blocks of block_size threads (>= 1). */
unsigned hvm_grid_size(unsigned long n, unsigned block_size);

/* The library's version string, e.g. "hipvecmath 1.0.0". */
const char *hvm_version(void);

#ifdef __cplusplus
}
#endif

#endif
