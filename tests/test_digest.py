"""digest.py: hashlib's SHA-256 digests, without loading OpenSSL for small inputs (issue 10)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from rocmbuild import digest
from rocmbuild.provisioning import treehash


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


def test_a_tree_digest_is_the_same_whichever_sha256_hashes_it(tmp_path: Path) -> None:
    """A small file is hashed by the builtin, a big one by OpenSSL: same digests as hashlib's."""
    for size in (100, digest.BUILTIN_MAX_BYTES + 10):
        data = os.urandom(size)
        (tmp_path / "f").write_bytes(data)
        hashed = treehash.hash_file(str(tmp_path / "f"), lambda: None)
        assert hashed is not None
        want = digest.sha256_hex(f"{hashlib.sha256(data).hexdigest()} holes:")[:32]
        assert hashed[0] == want
