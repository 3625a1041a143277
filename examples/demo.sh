#!/usr/bin/env bash
# `make demo`: build the bundled HIP example for real with rocmbuild, with a real failure on the way.
#
# The example links -lhipvecmath, a library its prepare step builds into vendor/lib,
# a directory that is not on the link path: the first attempt fails with a real
# `ld: cannot find -lhipvecmath`, rocmbuild diagnoses it, applies add_library_paths
# and the retry builds, verifies the code objects and imports the module.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v hipcc >/dev/null; then
  echo "demo: hipcc not found. Install Debian's HIP toolchain first:" >&2
  echo "  sudo apt-get install hipcc rocminfo libamdhip64-dev rocm-device-libs" >&2
  exit 1
fi
export HIP_PLATFORM=amd
# The build runs `python3`: the venv's, as after `source .venv/bin/activate`.
export PATH="$PWD/.venv/bin:$PATH"

# A target the local toolchain accepts (Debian's HIP 5.2 rejects gfx942).
arch=""
for candidate in gfx942 gfx90a gfx908; do
  if rocmbuild doctor --json --arch "$candidate" >/dev/null 2>&1; then arch=$candidate; break; fi
done
arch=${arch:-gfx90a}

work=$(mktemp -d "${TMPDIR:-/tmp}/rocmbuild-demo.XXXXXX")
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
