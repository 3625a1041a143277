"""What the job-limit launcher costs each compile: the same compiles, direct and through it.

    python benchmarks/launcher_overhead.py [N]

Runs N compiles of each kind one after another (direct and launched alternate, so machine noise
hits both alike), with a limit in force (slots in a temporary attempt dir, nothing contended: the
cost measured is the launcher's own, python start + flock + fork/wait + two record lines):

* trivial: ``cc -c`` of a one-line C file, the worst case (the compile itself is ~15 ms);
* c++: ``c++ -O2 -c`` of a file including <iostream>, <vector>, <map>, <string> (a small real TU).

Prints a table: median ms per compile, the launcher's added ms, the ratio launched/direct, and the
ratio of the fastest runs (the least disturbed by other work on a shared machine).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rocmbuild.toolchain.joblimit import AttemptSlots
from rocmbuild.toolchain.launchshim import install_launcher

SOURCES = {
    "trivial": ("x.c", "int x;\n", ["cc", "-c"]),
    "c++": ("y.cpp", "#include <iostream>\n#include <vector>\n#include <map>\n#include <string>\n"
            "int main() { std::map<int, std::vector<std::string>> m; m[1].push_back(\"a\");\n"
            "  std::cout << m[1][0] << std::endl; }\n",
            ["c++", "-O2", "-c"]),
}


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True)
    return time.perf_counter() - start


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    if shutil.which("cc") is None or shutil.which("c++") is None:
        sys.exit("needs cc and c++ on PATH")
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        shim = install_launcher(None, directory=tmp / "bin")
        slots = AttemptSlots(tmp / "run", 1, 8)
        launched_env = {**os.environ, **slots.env}
        for kind, (name, text, compiler) in SOURCES.items():
            (tmp / name).write_text(text)
            argv = [*compiler, name, "-o", f"{name}.o"]
            timed(argv, dict(os.environ), tmp)  # warm the page cache for both
            direct, launched = [], []
            for _ in range(count):
                direct.append(timed(argv, dict(os.environ), tmp))
                launched.append(timed([str(shim), *argv], launched_env, tmp))
            d, w = statistics.median(direct), statistics.median(launched)
            # The fastest run of each is the least disturbed by other work on the machine.
            rows.append((kind, d * 1000, w * 1000, (w - d) * 1000, w / d, min(launched) / min(direct)))
        summary = slots.finish(time.time())
    print(f"{count} compiles each, launched with a limit of {summary['limit']} "
          f"({summary['compiles']} recorded, peak concurrency {summary['peak_concurrency']})")
    print("| compile | direct ms (median) | through launcher ms | added ms | ratio | ratio of the fastest |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind, d_ms, w_ms, added, ratio, fastest in rows:
        print(f"| {kind} | {d_ms:.1f} | {w_ms:.1f} | {added:+.1f} | {ratio:.2f}x | {fastest:.2f}x |")


if __name__ == "__main__":
    main()
