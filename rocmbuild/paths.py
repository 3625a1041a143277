"""Where rocmbuild keeps its own files: the one place that asks platformdirs (XDG).

State (``$XDG_STATE_HOME/rocmbuild``): run records, locks, fingerprints, crash logs.
Cache (``$XDG_CACHE_HOME/rocmbuild``): checkouts, compiler cache, wrappers, device libraries.
Config (``$XDG_CONFIG_HOME/rocmbuild``): user recipes and signatures.
Each is read at call time, so an environment set by a test or a service applies.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs

import rocmbuild

APP = "rocmbuild"


def state_dir(*parts: str) -> Path:
    """``$XDG_STATE_HOME/rocmbuild/PARTS``."""
    return Path(platformdirs.user_state_dir(APP)).joinpath(*parts)


def runs_root() -> Path:
    """Where run directories go unless ``--run-dir`` says otherwise (and ``latest``, the history index)."""
    return state_dir("runs")


def cache_dir(*parts: str) -> Path:
    """``$XDG_CACHE_HOME/rocmbuild/PARTS``."""
    return Path(platformdirs.user_cache_dir(APP)).joinpath(*parts)


def package_dir() -> Path:
    """rocmbuild's own directory (signatures.toml, recipes/): ``importlib.resources.files("rocmbuild")``,
    which for a package on disk is its ``__init__``'s directory; without importing importlib.resources
    and its readers (~7 ms on the way to every build's first attempt).  Anything else (a zip) asks it."""

    spec = rocmbuild.__spec__
    origin = spec.origin if spec is not None else None
    if origin and spec is not None and spec.has_location and Path(origin).is_file():
        return Path(origin).parent
    from importlib import resources

    return Path(str(resources.files(APP)))


def config_dir(*parts: str) -> Path:
    """``$XDG_CONFIG_HOME/rocmbuild/PARTS``."""
    return Path(platformdirs.user_config_dir(APP)).joinpath(*parts)
