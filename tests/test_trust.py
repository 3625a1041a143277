"""Files another user can change are not acted on: user recipes, signature files, run dirs to resume.

Ownership is changed for real (``chown`` to uid 65534, ``nobody``) where the tests run as root, as CI
does; elsewhere the same refusals are reached through the mode bits, which any user can set.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from rocmbuild import cli
from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.errors import UsageError
from rocmbuild.host.trust import TRUST_VARIABLE, untrusted_reason
from rocmbuild.planning.recipe import find_recipe

NOBODY = 65534
AS_ROOT = os.getuid() == 0

TORCH_OVERRIDE = 'name = "torch"\npackages = ["torch"]\n[steps]\nbuild = ["echo evil"]\n'
SIGNATURE_OFF = '[[signature]]\nid = "ld-cannot-find-library"\nenabled = false\n'


def foreign(path: Path) -> Path:
    """Make ``path`` another user's (root) or writable by anyone (otherwise)."""
    if AS_ROOT:
        os.chown(path, NOBODY, NOBODY)
    else:
        path.chmod(path.stat().st_mode | stat.S_IWOTH)
    return path


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv(TRUST_VARIABLE, raising=False)
    directory = tmp_path / "config" / "rocmbuild"
    directory.mkdir(parents=True)
    return directory


def test_a_world_writable_recipes_dir_cannot_override_a_bundled_recipe(config: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    recipes = config / "recipes"
    recipes.mkdir()
    (recipes / "torch.toml").write_text(TORCH_OVERRIDE)
    recipes.chmod(0o1777)  # sticky does not help: anyone may add torch.toml
    with pytest.raises(UsageError) as refused:
        find_recipe("torch")
    assert "anyone can write" in refused.value.why and TRUST_VARIABLE in refused.value.todo
    monkeypatch.setenv(TRUST_VARIABLE, "1")  # shared on purpose
    assert find_recipe("torch").steps.build == ("echo evil",)


def test_a_user_recipe_another_user_owns_or_can_write_is_refused(config: Path) -> None:
    recipes = config / "recipes"
    recipes.mkdir(mode=0o755)
    (recipes / "mine.toml").write_text(TORCH_OVERRIDE)
    foreign(recipes / "mine.toml")
    with pytest.raises(UsageError, match="refusing user recipe"):
        find_recipe("mine")


def test_a_recipe_file_named_by_path_in_a_foreign_dir_is_refused(tmp_path: Path, config: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "x.toml").write_text(TORCH_OVERRIDE)
    foreign(shared)
    with pytest.raises(UsageError, match="refusing recipe file"):
        find_recipe(str(shared / "x.toml"))


def test_a_world_writable_signatures_dir_cannot_switch_a_bundled_signature_off(config: Path) -> None:
    signatures = config / "signatures"
    signatures.mkdir()
    (signatures / "off.toml").write_text(SIGNATURE_OFF)
    signatures.chmod(0o777)
    with pytest.raises(UsageError, match="refusing signature file"):
        load_catalogue()
    signatures.chmod(0o700)
    load_catalogue()  # the same file in a safe dir loads


def test_resume_refuses_a_run_dir_another_user_can_write(tmp_path: Path, config: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "summary.json").write_text(json.dumps({"recipe": "torch", "outcome": "running", "attempts": []}))
    (run_dir / "resume.json").write_text(json.dumps({"recipe": "/tmp/evil.toml"}))
    run_dir.chmod(0o777)
    foreign(run_dir)
    with pytest.raises(SystemExit) as ended:
        cli.main(["resume", str(run_dir)])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "refusing run dir" in err and "/tmp/evil.toml" not in err


def test_what_counts_as_safe(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.write_text("")
    mine.chmod(0o644)
    assert untrusted_reason(mine) is None
    if os.getgid() == mine.stat().st_gid:  # group-writable for one's own group (user-private groups)
        mine.chmod(0o664)
        assert untrusted_reason(mine) is None
    sticky = tmp_path / "tmp-like"
    sticky.mkdir()
    sticky.chmod(0o1777)
    assert untrusted_reason(sticky) is None  # a file of mine in /tmp is mine
    assert untrusted_reason(sticky, directory_listed=True) is not None  # but not what /tmp holds
