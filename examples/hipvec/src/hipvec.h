/* The C interface between the HIP half (hipvec_kernels.hip, compiled by
 * hipcc for the GPU targets) and the Python half (hipvec_module.cpp, plain
 * C++ against Python.h). */
#ifndef HIPVEC_H
#define HIPVEC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Multiply n floats in place by factor on the GPU.  Returns 0, or a HIP
 * error code with a message in err. */
int hipvec_scale(float *values, size_t n, float factor, char *err, size_t errlen);

/* Number of visible HIP devices; 0 (not an error) when there is none. */
int hipvec_device_count(int *count, char *err, size_t errlen);

/* The GPU targets this object was compiled for, ";"-separated. */
const char *hipvec_built_archs(void);

/* The helper library's version (from libhipvecmath). */
const char *hipvec_math_version(void);

#ifdef __cplusplus
}
#endif

#endif
