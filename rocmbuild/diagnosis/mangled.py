"""What an Itanium-mangled C++ name (``_ZN6OpenMM7Context12reinitializeEv``) says about where it comes from.

Owns one pure reading: the outermost scope of a nested name (``OpenMM``; ``std`` for ``St``), which the
catalogue offers as the derived field ``scope`` of any match whose ``symbol`` is mangled.  A loader
that misses a symbol of *another* library's scope was built against another version of that library;
one that misses a symbol of its own scope is the project's own build (the signature says which).
Only nested names count: a free function (``_Z28silu_and_mul...``) has no scope to compare.

No demangling library: ``cxxfilt`` (ctypes over libstdc++'s ``__cxa_demangle``) would demangle the whole name
through a native call per match, and only the first component, length-prefixed by the ABI, is read here.
"""

from __future__ import annotations

import re

# _Z, an optional typeinfo / vtable / type-name prefix, then either N (a nested name: CV- and ref-qualifiers,
# then std as St or one of its abbreviations, or the first component's length, never with a leading zero) or
# std's own unscoped name (St: _ZSt4cout, _ZTISt9exception).
_NESTED = re.compile(r"_Z(?:T[IVS])?(?:N[rVKRO]*(?:(S[tabsiod])|([1-9]\d*))|(St))")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_ANONYMOUS = "_GLOBAL__N"  # an anonymous namespace: always the defining library's own, so no scope to compare


def outer_scope(symbol: str) -> str | None:
    """The outermost namespace or class of a mangled nested name (``std`` for std's), else None: not mangled,
    not nested, malformed, or an anonymous namespace."""
    found = _NESTED.match(symbol)
    if found is None:
        return None
    if found.group(1) or found.group(3):
        return "std"
    length = int(found.group(2))
    name = symbol[found.end():found.end() + length]
    if len(name) != length or not _IDENTIFIER.fullmatch(name) or name.startswith(_ANONYMOUS):
        return None
    return name
