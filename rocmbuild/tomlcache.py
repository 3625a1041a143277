"""TOML parsed once per content: a text's tables remembered in the user cache dir.

The bundled catalogue's TOML takes ~12 ms to parse, and importing tomllib at all ~3 ms (a recipe's
few lines), on the way to every build's first attempt.  A text's parsed tables are kept in
``$XDG_CACHE_HOME/rocmbuild/<kind>/``, keyed by the SHA-256 of its bytes and the interpreter's
marshal format: a changed text is a new key, so a stale answer cannot be read.  A missing,
unreadable or corrupt entry is a miss; invalid TOML is never kept (tomllib raises); tables marshal
cannot hold (a TOML date) are parsed each time; an unwritable cache dir only costs the parse.
"""

from __future__ import annotations

import marshal
from pathlib import Path
from typing import Any

from rocmbuild import paths
from rocmbuild.digest import sha256_hex


def loads(raw: bytes, kind: str) -> dict[str, Any]:
    """``tomllib.loads(raw.decode())``, from the cache when these bytes were parsed before.

    Raises what that raises: ``tomllib.TOMLDecodeError`` or ``UnicodeDecodeError`` (both ValueErrors).
    """
    parsed = _parsed_before(raw, kind)
    if parsed is not None:
        return parsed
    import tomllib  # only when this text was never parsed here before

    data = tomllib.loads(raw.decode())
    _remember(raw, kind, data)
    return data


def _entry(raw: bytes, kind: str) -> Path:
    import sys

    return paths.cache_dir(kind, f"{sha256_hex(raw)}-{sys.implementation.cache_tag}-{marshal.version}.marshal")


def _parsed_before(raw: bytes, kind: str) -> dict[str, Any] | None:
    try:
        data = marshal.loads(_entry(raw, kind).read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def _remember(raw: bytes, kind: str, data: dict[str, Any]) -> None:
    import contextlib
    import os

    with contextlib.suppress(OSError, ValueError):  # ValueError: a value marshal cannot hold (a TOML date)
        blob = marshal.dumps(data)
        path = _entry(raw, kind)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_bytes(blob)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
