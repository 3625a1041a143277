#!/usr/bin/env bash
# Build the device-library directory a clang HIP compiler needs for gfx942 on Debian 12, and
# print its path (for HIP_DEVICE_LIB_PATH).  Idempotent; run by `make toolchain`, `make demo`
# and the tests.
#
# Debian 12's rocm-device-libs predate gfx942: they lack oclc_isa_version_942.bc.  In
# ROCm-Device-Libs that file is one constant compiled from OpenCL (docs/rocm-facts.md, "gfx942 for real
# on Debian 12"): compile it with the same clang and put it beside links to Debian's bitcode.
# The directory lives in the user cache, outside any source tree:
#   ${XDG_CACHE_HOME:-~/.cache}/rocmbuild/device-libs/llvm-<N>
#
# usage: examples/device-libs.sh [CLANG]      (default: clang-19)
set -euo pipefail
clang=${1:-clang-19}
if ! command -v "$clang" >/dev/null; then
  echo "device-libs: $clang not found (apt-get install clang-19 lld-19)" >&2
  exit 1
fi
major=$("$clang" --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
bitcode=/usr/lib/$multiarch/amdgcn/bitcode
if [ ! -f "$bitcode/ocml.bc" ]; then
  echo "device-libs: no device-library bitcode in $bitcode (apt-get install rocm-device-libs)" >&2
  exit 1
fi
dir=${XDG_CACHE_HOME:-$HOME/.cache}/rocmbuild/device-libs/llvm-$major
if [ ! -f "$dir/oclc_isa_version_942.bc" ]; then
  mkdir -p "$dir"
  for bc in "$bitcode"/*.bc; do ln -sf "$bc" "$dir/"; done
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  # gfx942's ISA version constant (major 9, minor 4, stepping 2), as ROCm-Device-Libs defines it.
  printf 'const __constant int __oclc_ISA_version = 9402;\n' > "$scratch/isa.cl"
  "$clang" -x cl -Xclang -finclude-default-header -nogpulib -target amdgcn-amd-amdhsa -mcpu=gfx942 \
    -emit-llvm -c "$scratch/isa.cl" -o "$scratch/oclc_isa_version_942.bc"
  mv "$scratch/oclc_isa_version_942.bc" "$dir/"
fi
echo "$dir"
