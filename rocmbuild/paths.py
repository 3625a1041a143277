"""Where rocmbuild keeps its own files: the one place that asks platformdirs (XDG).

State (``$XDG_STATE_HOME/rocmbuild``): run records, locks, fingerprints, crash logs.
Cache (``$XDG_CACHE_HOME/rocmbuild``): checkouts, compiler cache, wrappers, device libraries.
Config (``$XDG_CONFIG_HOME/rocmbuild``): user recipes and signatures.
Each is read at call time, so an environment set by a test or a service applies.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import platformdirs

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
    """rocmbuild's own directory (signatures.toml, recipes/), as ``importlib.resources`` finds it."""
    return Path(str(resources.files(APP)))


def config_dir(*parts: str) -> Path:
    """``$XDG_CONFIG_HOME/rocmbuild/PARTS``."""
    return Path(platformdirs.user_config_dir(APP)).joinpath(*parts)
