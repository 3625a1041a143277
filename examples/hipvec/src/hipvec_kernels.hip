// Device code and its host-side launchers; compiled by hipcc with one
// --offload-arch per requested target.  HIPVEC_BUILT_ARCHS is passed by the
// build (setup.py) and records the targets this object was compiled for.
#include <hip/hip_runtime.h>
#include <stdio.h>

#include "hipvec.h"
#include "hipvecmath.h"

#ifndef HIPVEC_BUILT_ARCHS
#error "HIPVEC_BUILT_ARCHS must be defined by the build (the ;-separated target list)"
#endif

namespace {

constexpr unsigned kBlock = 256;

__global__ void scale_kernel(float *values, size_t n, float factor) {
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        values[i] *= factor;
    }
}

int fail(hipError_t status, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "%s failed: %s (HIP error %d)", what, hipGetErrorName(status),
             static_cast<int>(status));
    return static_cast<int>(status);
}

}  // namespace

extern "C" int hipvec_scale(float *values, size_t n, float factor, char *err, size_t errlen) {
    if (n == 0) {
        return 0;
    }
    float *device = nullptr;
    hipError_t status = hipMalloc(&device, n * sizeof(float));
    if (status != hipSuccess) {
        return fail(status, "hipMalloc", err, errlen);
    }
    status = hipMemcpy(device, values, n * sizeof(float), hipMemcpyHostToDevice);
    if (status == hipSuccess) {
        hipLaunchKernelGGL(scale_kernel, dim3(hvm_grid_size(n, kBlock)), dim3(kBlock), 0, 0, device, n,
                           factor);
        status = hipGetLastError();
        if (status == hipSuccess) {
            status = hipMemcpy(values, device, n * sizeof(float), hipMemcpyDeviceToHost);
        }
    }
    hipError_t freed = hipFree(device);
    if (status != hipSuccess) {
        return fail(status, "hipvec.scale", err, errlen);
    }
    return freed == hipSuccess ? 0 : fail(freed, "hipFree", err, errlen);
}

extern "C" int hipvec_device_count(int *count, char *err, size_t errlen) {
    *count = 0;
    hipError_t status = hipGetDeviceCount(count);
    if (status == hipErrorNoDevice) {
        *count = 0;
        return 0;
    }
    return status == hipSuccess ? 0 : fail(status, "hipGetDeviceCount", err, errlen);
}

extern "C" const char *hipvec_built_archs(void) { return HIPVEC_BUILT_ARCHS; }

extern "C" const char *hipvec_math_version(void) { return hvm_version(); }
