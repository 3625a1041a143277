"""SHA-256 of keys, short texts and small trees, without loading OpenSSL on the way to a build.

``hashlib.sha256`` is OpenSSL's: importing hashlib loads libcrypto (~5 ms), on the way to every
build's first attempt, only to name a lock file or a memo, or to digest a fingerprint's parts.
CPython's own SHA-256 (what hashlib itself falls back to without OpenSSL: the ``_sha2`` module from
3.12, ``_sha256`` before) gives the same digests, ~7x slower per byte; so what hashes a MiB or more
still goes through hashlib (loaded then), where OpenSSL's speed pays for its loading.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

# Up to here the builtin hashes (~4 ms a MiB) before OpenSSL would have loaded.
BUILTIN_MAX_BYTES = 1 << 20


def _builtin_sha256() -> Callable[..., Any]:
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha256
        else:
            from _sha256 import sha256
    except ImportError:  # an interpreter built without it: OpenSSL's
        from hashlib import sha256
    return sha256


_BUILTIN = _builtin_sha256()


def sha256_for(size: int) -> Callable[..., Any]:
    """The SHA-256 constructor (``hashlib.sha256``'s interface) for hashing ``size`` bytes in all."""
    if size > BUILTIN_MAX_BYTES:
        import hashlib

        return hashlib.sha256
    return _BUILTIN


def sha256_hex(data: bytes | str) -> str:
    """``hashlib.sha256(data).hexdigest()`` (a str as UTF-8)."""
    raw = data.encode() if isinstance(data, str) else data
    return str(sha256_for(len(raw))(raw).hexdigest())
