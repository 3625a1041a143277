"""Parsing of option values (durations, counts)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocmbuild.errors import UsageError
from rocmbuild.options import parse_duration, parse_positive_int


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("45m", 2700), ("8h", 28800), ("1h30m", 5400),
                                               ("120s", 120), ("0.5s", 0.5), ("2H", 7200)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "10x", "-5m", "0", "m", "1h30"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(UsageError, match="is not a duration"):
        parse_duration(text)


def test_positive_ints() -> None:
    assert parse_positive_int("8", "--jobs") == 8
    with pytest.raises(UsageError, match="not a whole number"):
        parse_positive_int("eight", "--jobs")
    with pytest.raises(UsageError, match="at least 1"):
        parse_positive_int("0", "--jobs")


@pytest.mark.parametrize(("text", "suggestion"), [("8", "--budget 8h"), ("2.5", "--budget 2.5h")])
def test_a_bare_number_is_refused_with_units_suggested(text: str, suggestion: str) -> None:
    with pytest.raises(UsageError, match="has no unit") as caught:
        parse_duration(text)
    assert suggestion in caught.value.todo and "m for minutes" in caught.value.todo


@pytest.mark.parametrize("option", ["--source", "--run-dir", "--wheel-dir", "--rocm-path", "--requires-from"])
def test_a_path_that_is_not_utf8_is_a_usage_error_not_a_crash(option: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from rocmbuild import cli

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    odd = os.fsdecode(os.fsencode(str(tmp_path)) + b"/d\xffir")
    Path(odd).mkdir()
    (tmp_path / "src").mkdir()
    recipe = tmp_path / "r.toml"
    recipe.write_text('name = "r"\n[steps]\nbuild = ["true"]\n')
    argv = [str(recipe), "--source", str(tmp_path / "src"), "--arch", "gfx90a", "--skip-preflight", "--no-cache",
            "--run-dir", str(tmp_path / "run"), option, odd]
    with pytest.raises(SystemExit) as ended:
        cli.main(argv)
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert f"{option} " in err and "d\\xffir is not UTF-8" in err and "symlink" in err
