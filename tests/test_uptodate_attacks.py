"""A false ``up_to_date`` never ships a stale build, and special files never hang or exhaust the fingerprint.

Each case of benchmarks/attack_uptodate.py runs the real ``rocmbuild`` twice on a tiny recipe (see
there): a change the build depends on (an unlisted env var, a file behind a symlink, an untracked,
ignored or submodule file, a vendored binary, a directory named build at depth, a source edited
during the build, the venv's packages, the interpreter behind a shim, the cc on PATH, a deleted or
edited output, a module removed from where the build installed it) must make the second run build;
a FIFO, a character device, a 6 GB sparse file, a signal or the budget during the walk must end the
run on its own, with bounded memory.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "attack_uptodate.py"
_spec = importlib.util.spec_from_file_location("attack_uptodate", _PATH)
assert _spec is not None and _spec.loader is not None
attacks = importlib.util.module_from_spec(_spec)
sys.modules["attack_uptodate"] = attacks
_spec.loader.exec_module(attacks)

CASES = dict(attacks.cases())


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.integration
def test_attack_holds(name: str, tmp_path: Path) -> None:
    held, detail = CASES[name](tmp_path)
    assert held, f"{name}: {detail}"
