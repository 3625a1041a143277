"""Downloads: a hash mismatch is fetched again once, without the cached copy; gone-for-good is never retried.

The shapes: CMake's ``file DOWNLOAD HASH mismatch ... for file: [path]`` (pytorch/pytorch#169920,
rocm-arch/rocm-arch#875), pip's and uv's hash checks, and HTTP 403/404/409/410 in each client's words
(rocm-arch/rocm-arch#98, ROCm/triton#631).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from planfactory import make_plan

from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.diagnosis.classifier import classify
from rocmbuild.loop.effects import carry_out
from rocmbuild.loop.ladder import FailedAttempt, Outcome, decide
from rocmbuild.loop.remedies import RemedyContext, refetch_download
from rocmbuild.process.command import CommandResult

CAT = load_catalogue(user=False)


@dataclass(frozen=True)
class Diag:
    category: str
    fields: dict[str, str] = field(default_factory=dict)


def no_commands(argv: object, **_: object) -> CommandResult:
    return CommandResult(1, "")


CTX = RemedyContext(run=no_commands)


def test_the_partial_download_in_the_tree_goes_and_pip_uv_caches_are_bypassed(tmp_path: Path) -> None:
    partial = tmp_path / "build" / "downloads" / "aotriton.tar.gz"
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"truncated")
    plan = make_plan(tmp_path)
    decided = refetch_download(plan, Diag("network", {"file": str(partial)}), CTX)
    assert decided.applied and partial.exists(), "the remedy is pure: removal is an effect"
    result = carry_out(decided, source=tmp_path, run=no_commands)
    assert result.applied and not partial.exists()
    assert list(result.removed) == ["build/downloads/aotriton.tar.gz"]
    assert result.plan.env["PIP_NO_CACHE_DIR"] == "1" and result.plan.env["UV_NO_CACHE"] == "1"


def test_a_file_outside_the_tree_is_never_removed(tmp_path: Path) -> None:
    outside = tmp_path / "home-cache.tgz"
    outside.write_bytes(b"x")
    src = tmp_path / "src"
    src.mkdir()
    decided = refetch_download(make_plan(src), Diag("network", {"file": str(outside)}), CTX)
    assert decided.applied and decided.effects == (), "only the caches are bypassed"
    carry_out(decided, source=src, run=no_commands)
    assert outside.exists()


def test_with_caches_already_off_and_nothing_to_remove_it_cannot_help(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, caller={"PATH": "/usr/bin", "PIP_NO_CACHE_DIR": "1", "UV_NO_CACHE": "1"})
    decided = refetch_download(plan, Diag("network", {"file": "triton==3.5.0"}), CTX)
    assert not decided.applied


def _attempt(number: int, diagnosis_text: str, remedies: tuple[str, ...] = ()) -> FailedAttempt:
    got = classify(diagnosis_text.split("\n"), catalogue=CAT)
    return FailedAttempt(number, "exited", got.category, got.fingerprint(), got.retryable, got.remedies,
                         remedies, compiled=False)


def test_a_hash_mismatch_is_retried_once_then_stops_without_waiting() -> None:
    log = "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE."
    first = decide([_attempt(1, log)], max_attempts=6)
    assert first.remedy == "refetch_download"
    again = decide([_attempt(1, log, ("refetch_download",)), _attempt(2, log)], max_attempts=6)
    assert again.remedy is None and again.outcome == Outcome.FAILED, "never wait_and_retry"


def test_gone_for_good_stops_at_once() -> None:
    for line in ("urllib.error.HTTPError: HTTP Error 409: Conflict",
                 "2025-01-02 10:00:00 ERROR 404: Not Found.",
                 "requests.exceptions.HTTPError: 410 Client Error: Gone for url: https://h/x.whl"):
        decision = decide([_attempt(1, line)], max_attempts=6)
        assert decision.remedy is None and decision.outcome == Outcome.NOT_RETRYABLE, line
