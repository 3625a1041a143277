"""Parsing of option values (durations, counts)."""

from __future__ import annotations

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
