"""No pattern can hang rocmbuild: user patterns are refused when catastrophic, and bounded in time.

The attack: a user signature ``patterns = ['^(a+)+$']`` with
``keywords = ["aaaa"]`` and a 41-character line of ``a`` followed by ``b`` hung both
a build (past --budget, --stall-timeout and SIGTERM) and ``rocmbuild diagnose``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmbuild.diagnosis.catalogue import Signature, load_catalogue
from rocmbuild.diagnosis.classifier import classify
from rocmbuild.diagnosis.patterns import (
    MAX_TIMEOUTS,
    BoundedPattern,
    TrustedPattern,
    catastrophic,
    compile_user_pattern,
    required_literal,
)
from rocmbuild.diagnosis.signature_check import _uncompiled
from rocmbuild.errors import CatalogueError

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
EVIL_LINE = "a" * 400 + "b"
# Not one of the refused forms, but polynomial (n^7) for a backtracking engine on EVIL_LINE: seconds.
SLOW_BUT_ALLOWED = r"a*a*a*a*a*a*a*\d"

USER_FILE = """
[[signature]]
id = "user-evil"
category = "network"
description = "a user's signature"
patterns = ['{pattern}']
keywords = ["aaaa"]
examples = ["aaaa"]
"""


def _user_dir(tmp_path: Path, pattern: str) -> Path:
    directory = tmp_path / "config" / "rocmbuild" / "signatures"
    directory.mkdir(parents=True)
    (directory / "mine.toml").write_text(USER_FILE.format(pattern=pattern))
    return tmp_path / "config"


@pytest.mark.parametrize("pattern", ["^(a+)+$", "(\\w*)*x", "(x+){2,}", "(a|a)*",
                                     # nested behind a plain group, an optional tail, or a fixed count
                                     "((a+))+$", "(\\w+\\s?)+$", "(.*a){12}", "(a*b?)*",
                                     # alternatives that overlap without being equal
                                     "(a|aa)+$", "(ab|a)+"])
def test_catastrophic_forms_are_named(pattern: str) -> None:
    assert catastrophic(pattern)
    with pytest.raises(ValueError):
        compile_user_pattern(pattern)


@pytest.mark.parametrize("pattern", ["cannot find -l(?P<library>[^\\s:]+)", "(?P<x>\\w+)\\.so", "((?:a|b)+c)"])
def test_ordinary_patterns_are_accepted(pattern: str) -> None:
    assert catastrophic(pattern) is None
    assert compile_user_pattern(pattern).search("x cannot find -lfoo libbar.so abc") is not None


@pytest.mark.parametrize("pattern", ["(?:-l\\w+ )+", "(?:\\d+\\.){3}\\d+", "(?:\\s+\\S+){2,5}", "(a++)+",
                                     "(?>a+)+", "(?:foo|bar)+"])
def test_repeats_whose_split_is_fixed_or_that_never_backtrack_are_accepted(pattern: str) -> None:
    assert catastrophic(pattern) is None
    assert compile_user_pattern(pattern).pattern == pattern


def test_a_slow_search_times_out_and_the_pattern_is_switched_off() -> None:
    bounded = BoundedPattern(SLOW_BUT_ALLOWED)
    started = time.monotonic()
    for _ in range(MAX_TIMEOUTS + 5):
        assert bounded.search(EVIL_LINE) is None
    # MAX_TIMEOUTS searches at SEARCH_TIMEOUT each, then no more work at all.
    assert time.monotonic() - started < 2.0
    assert bounded.disabled and bounded.timeouts == MAX_TIMEOUTS


def test_catalogue_refuses_a_catastrophic_user_pattern(tmp_path: Path) -> None:
    path = tmp_path / "evil.toml"
    path.write_text(USER_FILE.format(pattern="^(a+)+$"))
    with pytest.raises(CatalogueError) as caught:
        load_catalogue([path], user=False)
    assert "nests quantifiers" in caught.value.what and "evil.toml" in caught.value.what


def test_classifier_with_a_slow_user_pattern_returns(tmp_path: Path) -> None:
    path = tmp_path / "slow.toml"
    path.write_text(USER_FILE.format(pattern=SLOW_BUT_ALLOWED))
    catalogue = load_catalogue([path], user=False)
    started = time.monotonic()
    got = classify([EVIL_LINE] * 200 + ["/usr/bin/ld: cannot find -lhipblas"], catalogue=catalogue)
    assert time.monotonic() - started < 3.0
    assert got.category == "missing_library"


def test_diagnose_refuses_a_catastrophic_user_signature_with_exit_2(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text(EVIL_LINE + "\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(_user_dir(tmp_path, "^(a+)+$"))}
    proc = subprocess.run([ROCMBUILD, "diagnose", str(log)], env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert "nests quantifiers" in proc.stderr and "Traceback" not in proc.stderr


def test_diagnose_with_a_slow_user_signature_returns(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text((EVIL_LINE + "\n") * 500)
    env = {**os.environ, "XDG_CONFIG_HOME": str(_user_dir(tmp_path, SLOW_BUT_ALLOWED))}
    started = time.monotonic()
    proc = subprocess.run([ROCMBUILD, "diagnose", str(log)], env=env, capture_output=True, text=True, timeout=60)
    assert time.monotonic() - started < 20
    assert proc.returncode == 1, proc.stderr  # not recognised, but answered


@pytest.mark.integration
def test_build_with_a_slow_user_signature_ends_within_its_budget(tmp_path: Path) -> None:
    """A build printing the evil line for a while under a slow user pattern still obeys --budget."""
    src = tmp_path / "src"
    src.mkdir()
    script = tmp_path / "flood.py"
    script.write_text(f"import time\nfor _ in range(600):\n    print({EVIL_LINE!r}, flush=True)\n"
                      "    time.sleep(0.02)\n")
    recipe = tmp_path / "evil.toml"
    recipe.write_text(f'name = "evil"\n[steps]\nbuild = ["{sys.executable} {script}"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    env.update(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_CONFIG_HOME=str(_user_dir(tmp_path, SLOW_BUT_ALLOWED)), HIP_PLATFORM="amd")
    started = time.monotonic()
    proc = subprocess.run([ROCMBUILD, str(recipe), "--source", str(src), "--run-dir", str(tmp_path / "run"),
                           "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--budget", "4s"],
                          env=env, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    elapsed = time.monotonic() - started
    assert proc.returncode == 5, proc.stderr[-2000:]  # budget_exhausted, not a hang
    assert elapsed < 30


def test_trusted_pattern_compiles_at_first_search_and_compares_by_text() -> None:
    pattern = TrustedPattern(r"cannot find -l(?P<library>\w+)")
    assert pattern._compiled is None  # loading the catalogue compiles nothing
    found = pattern.search("/usr/bin/ld: cannot find -lhipblas")
    assert found is not None and found["library"] == "hipblas"
    assert pattern._compiled is not None
    assert pattern == TrustedPattern(r"cannot find -l(?P<library>\w+)")
    assert hash(pattern) == hash(TrustedPattern(r"cannot find -l(?P<library>\w+)"))
    assert pattern != TrustedPattern(r"cannot find")


def test_signatures_check_compiles_every_bundled_pattern() -> None:
    broken = Signature(id="broken", category="unknown", description="x", patterns=(TrustedPattern("(unclosed"),),
                       keywords=("unclosed",))
    with pytest.raises(re.error) as error:
        re.compile("(unclosed")
    assert _uncompiled([broken]) == [f"broken: invalid regex '(unclosed': {error.value}"]


@pytest.mark.parametrize(("pattern", "literal"), [
    (r"(?P<x>cannot find) -l(?P<lib>\w+)", "cannot find -l"),  # a group matched once continues the run
    (r"\bundefined reference to .(?P<sym>[^']+)", "undefined reference to "),
    (r"(abc)+def", "def"),  # a repeated group ends it
    (r"x(?:foo|bar)yz", "yz"),  # so does an alternation
    (r"a(?i:bcd)efg", "efg"),  # and a case-insensitive group
    (r"(?i)no space left", ""),  # a case-insensitive pattern has none
    (r"[abc]+", ""),
])
def test_required_literal(pattern: str, literal: str) -> None:
    assert required_literal(pattern) == literal


def test_every_bundled_pattern_matches_its_examples_only_with_its_literal() -> None:
    """The literal test is exact: wherever a bundled pattern matches, its required literal is there."""
    catalogue = load_catalogue(user=False)
    checked = 0
    for sig in catalogue.signatures:
        texts = list(sig.examples)
        for pattern in sig.patterns:
            literal = required_literal(pattern.pattern)
            for text in texts:
                found = re.compile(pattern.pattern).search(text)
                if found is not None:
                    checked += 1
                    assert literal in text and pattern.search(text) is not None, (sig.id, pattern.pattern, text)
    assert checked > 50


@pytest.mark.parametrize(("pattern", "literal"), [
    (r"(?i)no space left", "no space left"),  # folded: case-insensitive patterns have one, lower-cased
    (r"a(?i:bcd)EFG", "abcdefg"),
    (r"(?i)x(?:foo|bar)YZ", "yz"),
    (r"(?i)ſtraße", ""),  # not ASCII: no shortcut
    (r"Cannot Find", "cannot find"),
])
def test_required_literal_folded(pattern: str, literal: str) -> None:
    assert required_literal(pattern, folded=True) == literal


def test_every_bundled_pattern_matches_its_examples_only_with_its_folded_literal() -> None:
    """Wherever a bundled pattern matches an ASCII text, its folded literal is in the text's lower()."""
    catalogue = load_catalogue(user=False)
    checked = 0
    for sig in catalogue.signatures:
        for pattern in sig.patterns:
            literal = required_literal(pattern.pattern, folded=True)
            for text in (*sig.examples, *sig.near_misses):
                if text.isascii() and re.compile(pattern.pattern).search(text) is not None:
                    checked += 1
                    assert literal in text.lower(), (sig.id, pattern.pattern, text)
    assert checked > 100


def test_signatures_check_says_what_protects_a_user_pattern(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(USER_FILE.format(pattern="aaaa"))
    proc = subprocess.run([ROCMBUILD, "signatures", "check", str(path)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert "gives up after 50 ms a line" in proc.stdout and f"after {MAX_TIMEOUTS} time-outs" in proc.stdout
