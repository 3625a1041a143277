"""paths: rocmbuild's XDG directories, read at call time."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmbuild import paths


def test_xdg_dirs_are_honoured_at_call_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "s"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert paths.state_dir("runs") == tmp_path / "s" / "rocmbuild" / "runs" == paths.runs_root()
    assert paths.cache_dir("hip-clang-wrappers", "k") == tmp_path / "c" / "rocmbuild" / "hip-clang-wrappers" / "k"
    assert paths.config_dir() == tmp_path / "cfg" / "rocmbuild"


def test_the_bundled_catalogue_and_recipes_are_found() -> None:
    from rocmbuild.diagnosis.catalogue import bundled_path
    from rocmbuild.planning.recipe import bundled_recipe_dir

    assert bundled_path().is_file() and bundled_recipe_dir().is_dir()
