"""digest.py: hashlib's SHA-256 digests, without loading OpenSSL for small inputs (issue 10)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from rocmbuild import digest
from rocmbuild.provisioning import fingerprint


def test_the_digests_are_hashlibs_for_small_and_big_inputs() -> None:
    big = os.urandom(digest.BUILTIN_MAX_BYTES + 1)
    for data in (b"", b"abc", "gfx942;gfx90a \u00e9", os.urandom(70_000), big):
        raw = data.encode() if isinstance(data, str) else data
        assert digest.sha256_hex(data) == hashlib.sha256(raw).hexdigest()
    assert digest.sha256_for(digest.BUILTIN_MAX_BYTES) is not hashlib.sha256, "small: the builtin"
    assert digest.sha256_for(digest.BUILTIN_MAX_BYTES + 1) is hashlib.sha256, "big: OpenSSL's, faster per byte"
    stream = digest.sha256_for(10)()
    stream.update(b"ab")
    stream.update(b"c")
    assert stream.hexdigest() == hashlib.sha256(b"abc").hexdigest()


def test_hashing_a_key_does_not_load_openssl() -> None:
    code = ("import sys; from rocmbuild.digest import sha256_hex; sha256_hex('key' * 1000); "
            "print('_hashlib' in sys.modules, 'hashlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def _tree_hash_before(source: Path) -> str:
    """tree_hash as it was written with hashlib (no clean paths): the stored fingerprints' value."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(source):
        rel_root = os.path.relpath(root, source)
        rel_root = "" if rel_root == "." else rel_root + "/"
        dirs[:] = sorted(d for d in dirs if d not in ("build", ".git"))
        for name in sorted(files):
            if name.endswith(".o"):
                continue
            path = Path(root) / name
            h.update((rel_root + name).encode() + b"\0")
            h.update(path.read_bytes() if not path.is_symlink() else os.readlink(path).encode())
            h.update(b"\0")
    return h.hexdigest()[:16]


def test_a_tree_hash_is_the_same_whichever_sha256_hashes_it(tmp_path: Path) -> None:
    """A small tree is hashed by the builtin, a big one by OpenSSL: the value is the one stored before."""
    for name, size in (("small", 100), ("big", digest.BUILTIN_MAX_BYTES + 10)):
        tree = tmp_path / name
        (tree / "sub").mkdir(parents=True)
        (tree / "build").mkdir()
        (tree / "a.c").write_bytes(os.urandom(size))
        (tree / "sub" / "b.h").write_text("int b;\n")
        (tree / "sub" / "b.o").write_bytes(b"object")
        (tree / "build" / "out.txt").write_text("output")
        (tree / "link").symlink_to("sub/b.h")
        assert fingerprint.tree_hash(tree, ()) == _tree_hash_before(tree)
