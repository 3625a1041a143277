#!/usr/bin/env bash
# `make demo`: build a bundled HIP example for real with rocmbuild, with a real failure on the way.
#
# With clang-19 (Debian 12: apt-get install clang-19 lld-19) and CMake >= 3.28 (`make toolchain`
# puts PyPI's in the venv), it builds the user's headline arch, gfx942, like vLLM builds its
# kernels: the CMake HIP-language example (examples/hipcmake) with HIPCXX=clang++-19.  CMake 4
# refuses the tree's old package config on the first attempt ("Compatibility with CMake < 3.5
# has been removed"); rocmbuild diagnoses it, sets CMAKE_POLICY_VERSION_MINIMUM=3.5, retries,
# and verifies real gfx942 code objects in the built library.
#
# Without clang-19 it falls back to the hipcc example for gfx90a (Debian's HIP 5.2 rejects
# gfx942): the first attempt fails with a real `ld: cannot find -lhipvecmath`, rocmbuild applies
# add_library_paths, and the retry builds, verifies the code objects and imports the module.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v hipcc >/dev/null; then
  echo "demo: hipcc not found. Install Debian's HIP toolchain first:" >&2
  echo "  sudo apt-get install hipcc rocminfo libamdhip64-dev rocm-device-libs" >&2
  exit 1
fi
export HIP_PLATFORM=amd
# The build runs `python3` and `cmake`: the venv's, as after `source .venv/bin/activate`.
export PATH="$PWD/.venv/bin:$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/rocmbuild-demo.XXXXXX")

# Can this machine build gfx942?  Say why not when it cannot.
# DEMO_HIP_COMPILER picks another clang++ (>= 16), e.g. clang++-20.
why_not=""
wanted=${DEMO_HIP_COMPILER:-clang++-19}
clang=$(command -v "$wanted" || true)
if [ -z "$clang" ]; then
  why_not="$wanted is not installed (apt-get install clang-19 lld-19)"
elif ! .venv/bin/python -c 'import cmake, sys; sys.exit(tuple(map(int, cmake.__version__.split(".")[:2])) < (3, 28))' 2>/dev/null; then
  why_not="CMake >= 3.28 is not in the venv (make toolchain installs it from PyPI)"
elif ! device_libs=$(bash examples/device-libs.sh "${clang/clang++/clang}" 2>"$work/device-libs.err"); then
  why_not="the gfx942 device libraries could not be built: $(tail -1 "$work/device-libs.err")"
fi

if [ -z "$why_not" ]; then
  export HIP_DEVICE_LIB_PATH=$device_libs
  unset CMAKE_POLICY_VERSION_MINIMUM
  cp -r examples/hipcmake "$work/src"
  echo "demo: building the CMake HIP example for gfx942 with $clang in $work/src"
  echo "      (HIP_DEVICE_LIB_PATH=$device_libs: Debian's device libraries plus gfx942's ISA bitcode)"
  echo
  set +e
  rocmbuild example-cmake --arch gfx942 --hip-compiler "$clang" --source "$work/src" --run-dir "$work/run"
  status=$?
  set -e
  echo
  verified=$(grep -h '"artifacts.verified"' "$work/run/events.jsonl" | tail -1 |
             python3 -c 'import json, sys; print(json.loads(sys.stdin.read() or "{}").get("detail", "not verified"))')
  echo "demo: code objects: $verified"
  echo "demo: rocmbuild exited $status. This run's records are in $work/run:"
  echo "  summary.json   events.jsonl   attempt-1.log (CMake 4's real refusal)   attempt-2.log   repro.sh"
  echo "  render them again with: .venv/bin/rocmbuild report $work/run"
  exit "$status"
fi

echo "demo: not building gfx942: $why_not."
echo "demo: falling back to the hipcc example for gfx90a (Debian's HIP 5.2 rejects gfx942)."
# A target the local toolchain accepts: hipcc's (this example compiles with hipcc, not HIPCXX).
unset HIPCXX
arch=""
for candidate in gfx942 gfx90a gfx908; do
  if rocmbuild doctor --json --arch "$candidate" >/dev/null 2>&1; then arch=$candidate; break; fi
done
arch=${arch:-gfx90a}

cp -r examples/hipvec "$work/src"
echo "demo: building the example for $arch in $work/src"
echo
set +e
rocmbuild example --arch "$arch" --source "$work/src" --run-dir "$work/run"
status=$?
set -e
echo
echo "demo: rocmbuild exited $status. This run's records are in $work/run:"
echo "  summary.json   events.jsonl   attempt-1.log (the real ld failure)   attempt-2.log   repro.sh"
echo "  render them again with: .venv/bin/rocmbuild report $work/run"
exit "$status"
