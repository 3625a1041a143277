// The kernel and a C ABI around it; loading the library needs no GPU, launching does.
#include <hip/hip_runtime.h>

__global__ void hipcmake_scale_kernel(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= HIPSCALE_FACTOR;
}

extern "C" const char* hipcmake_built_archs() { return HIPCMAKE_ARCHS; }

extern "C" int hipcmake_device_count() {
  int count = 0;
  return hipGetDeviceCount(&count) == hipSuccess ? count : 0;
}

extern "C" int hipcmake_scale(float* host, int n) {
  float* dev = nullptr;
  if (hipMalloc(&dev, n * sizeof(float)) != hipSuccess) return -1;
  hipError_t err = hipMemcpy(dev, host, n * sizeof(float), hipMemcpyHostToDevice);
  if (err == hipSuccess) {
    hipLaunchKernelGGL(hipcmake_scale_kernel, dim3((n + 255) / 256), dim3(256), 0, 0, dev, n);
    err = hipMemcpy(host, dev, n * sizeof(float), hipMemcpyDeviceToHost);
  }
  return (hipFree(dev) == hipSuccess && err == hipSuccess) ? 0 : -1;
}
