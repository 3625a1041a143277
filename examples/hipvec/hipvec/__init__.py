"""hipvec: a tiny Python package with a HIP kernel (rocmbuild's bundled example).

    >>> import hipvec
    >>> hipvec.built_archs()          # the GPU targets compiled in
    ('gfx90a',)
    >>> hipvec.scale([1.0, 2.0], 3)   # needs an AMD GPU
    [3.0, 6.0]
"""

from __future__ import annotations

from collections.abc import Iterable

from hipvec import _hipvec

__version__ = "1.0.0"


def scale(values: Iterable[float], factor: float) -> list[float]:
    """Multiply every value by ``factor`` on the GPU (RuntimeError without one)."""
    return _hipvec.scale(list(values), float(factor))


def device_count() -> int:
    """How many HIP devices are visible (0 when there is none)."""
    return int(_hipvec.device_count())


def built_archs() -> tuple[str, ...]:
    """The GPU targets the extension's device code was compiled for."""
    return tuple(a for a in _hipvec.built_archs().split(";") if a)


def math_version() -> str:
    """The version of the libhipvecmath the extension loaded."""
    return str(_hipvec.math_version())
