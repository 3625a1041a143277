"""The fingerprint's tree walk on a PyTorch-sized tree: first run (every file read) vs rerun (stat cache).

usage: python benchmarks/fingerprint_walk.py [--files N] [--mb M] [--keep DIR]

Generates N files (default 120,000, ~PyTorch with its submodules) totalling about M MB (default
1500) in a nested layout (third_party/<lib>/src/<dir>/file.cpp), then times ``treehash.snapshot``
three ways: a first run with no stat cache (every file read and hashed; the page cache is warm
from generating it, so this is the hashing cost, not the disk's), a rerun with the cache, and a
rerun after one file was edited.  Peak RSS is read from the process itself.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

from rocmbuild.provisioning import treehash


def generate(root: Path, files: int, total_mb: int) -> int:
    rng = random.Random(27)
    mean = total_mb * (1 << 20) // files
    block = os.urandom(1 << 20)
    written = 0
    for i in range(files):
        lib, sub = i % 40, (i // 40) % 60
        path = root / "third_party" / f"lib{lib}" / "src" / f"d{sub}" / f"f{i}.cpp"
        path.parent.mkdir(parents=True, exist_ok=True)
        size = max(16, int(rng.expovariate(1 / mean)))
        start = rng.randrange(0, len(block) - min(size, len(block)) + 1)
        data = (block[start:start + size] if size <= len(block) else block * (size // len(block) + 1))[:size]
        path.write_bytes(data)
        written += size
    past = time.time() - 3600  # generated "an hour ago": outside the stat cache's racy window
    for dirpath, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(dirpath, name), (past, past))
    return written


def timed(root: Path, cache: treehash.StatCache) -> tuple[float, str]:
    started = time.monotonic()
    digest = treehash.snapshot(root, ("build",), cache).digest
    return time.monotonic() - started, digest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=120_000)
    parser.add_argument("--mb", type=int, default=1500)
    parser.add_argument("--keep", type=Path, default=None, help="generate into (and keep) this directory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fpwalk-"))
    root = args.keep or work / "tree"
    try:
        if not (root / "third_party").is_dir():
            t = time.monotonic()
            written = generate(root, args.files, args.mb)
            print(f"generated {args.files} files, {written / (1 << 20):.0f} MB in {time.monotonic() - t:.1f}s")
        cache_path = work / "stat.json"
        first, digest = timed(root, treehash.StatCache(cache_path))
        print(f"first run (no stat cache, every file read): {first:.2f}s")
        cache = treehash.StatCache(cache_path)
        rerun, again = timed(root, cache)
        print(f"rerun (stat cache, {cache.hits} hits, {cache.misses} misses): {rerun:.2f}s, "
              f"same digest: {again == digest}")
        edited = next((root / "third_party" / "lib0" / "src" / "d0").iterdir())
        edited.write_bytes(edited.read_bytes() + b"// edited\n")
        cache = treehash.StatCache(cache_path)
        one, changed = timed(root, cache)
        print(f"rerun after one edit ({cache.misses} read again): {one:.2f}s, digest changed: {changed != digest}")
        print(f"stat cache file: {cache_path.stat().st_size / (1 << 20):.1f} MB; "
              f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
