"""Parsing of option values (durations, counts)."""

from __future__ import annotations

import pytest

from rocmbuild.errors import UsageError
from rocmbuild.options import parse_duration, parse_positive_int


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("45m", 2700), ("8h", 28800), ("1h30m", 5400),
                                               ("120", 120), ("0.5s", 0.5), ("2H", 7200)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "10x", "-5m", "0", "m"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(UsageError, match="is not a duration"):
        parse_duration(text)


def test_positive_ints() -> None:
    assert parse_positive_int("8", "--jobs") == 8
    with pytest.raises(UsageError, match="not a whole number"):
        parse_positive_int("eight", "--jobs")
    with pytest.raises(UsageError, match="at least 1"):
        parse_positive_int("0", "--jobs")
