"""Downloads: a hash mismatch is fetched again once, without the cached copy; gone-for-good is never retried.

The shapes: CMake's ``file DOWNLOAD HASH mismatch ... for file: [path]`` (pytorch/pytorch#169920,
rocm-arch/rocm-arch#875), pip's and uv's hash checks, and HTTP 403/404/409/410 in each client's words
(rocm-arch/rocm-arch#98, ROCm/triton#631).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from planfactory import make_plan

from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.diagnosis.classifier import classify, classify_stream
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


# ------------------------------------------------------------------ end to end: the classifier, then the ladder

NETWORK_FIXTURES = Path(__file__).parent / "fixtures" / "logs" / "network"


def _fixture_attempt(number: int, log: Path, remedies: tuple[str, ...] = ()) -> FailedAttempt:
    with log.open("rb") as handle:
        got = classify_stream(handle, catalogue=CAT)
    return FailedAttempt(number, "exited", got.category, got.fingerprint(), got.retryable, got.remedies,
                         remedies, compiled=False)


def _fixtures_of(signature: str) -> list[Path]:
    found = []
    for log in sorted(NETWORK_FIXTURES.glob("*.log")):
        with log.open("rb") as handle:
            if classify_stream(handle, catalogue=CAT).signature == signature:
                found.append(log)
    return found


def test_every_gone_for_good_fixture_stops_at_the_first_attempt() -> None:
    gone = _fixtures_of("download-gone")
    # curl (makepkg, BuildKit), yum, dnf, pip 403, GNU wget, BusyBox wget, urllib, git: each client's words
    assert len(gone) >= 8, [p.name for p in gone]
    for log in gone:
        decision = decide([_fixture_attempt(1, log)], max_attempts=6)
        assert decision.remedy is None and decision.outcome == Outcome.NOT_RETRYABLE, log.name


def test_every_hash_mismatch_fixture_is_fetched_again_once_then_stops() -> None:
    mismatched = _fixtures_of("download-integrity")
    assert len(mismatched) >= 2, [p.name for p in mismatched]
    for log in mismatched:
        first = decide([_fixture_attempt(1, log)], max_attempts=6)
        assert first.remedy == "refetch_download", log.name
        again = decide([_fixture_attempt(1, log, ("refetch_download",)), _fixture_attempt(2, log)], max_attempts=6)
        assert again.remedy is None and again.outcome == Outcome.FAILED, f"{log.name}: never waited out"


@pytest.mark.parametrize("line", [
    "curl: (22) The requested URL returned error: 404",                                     # curl >= 7.76
    "curl: (22) The requested URL returned error: 410 Gone",                                # curl < 7.76
    "CURL: (22) THE REQUESTED URL RETURNED ERROR: 403",                                     # any case
    "HTTP request sent, awaiting response... 404 Not Found",                                # GNU wget
    "2024-05-02 08:14:04 ERROR 404: The specified resource does not exist..",               # wget, server's reason
    "wget: server returned error: HTTP/1.1 404 Not Found",                                  # BusyBox wget
    "urllib.error.HTTPError: HTTP Error 404: Not Found",                                    # CPython urllib
    "urllib.error.HTTPError: HTTP Error 403: Forbidden",
    "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://h/x.tar.gz",  # requests
    "ERROR: HTTP error 404 while getting https://h/torch-2.4.0+rocm6.1-cp310-linux_x86_64.whl",  # pip
    "fatal: unable to access 'https://h/x.git/': The requested URL returned error: 403",    # git over https
    "fatal: repository ‘https://h/gone.git/’ not found",                                    # git, typographic quotes
    "  Caused by: HTTP status client error (404 Not Found) for url (https://h/x.whl)",      # uv / reqwest
])
def test_a_404_in_each_clients_words_is_never_retried(line: str) -> None:
    decision = decide([_attempt(1, "Downloading sources\n" + line)], max_attempts=6)
    assert decision.remedy is None and decision.outcome == Outcome.NOT_RETRYABLE, line


@pytest.mark.parametrize("line", [
    "OSError('Tunnel connection failed: 403 Forbidden')",   # a proxy refusing the tunnel: not the file
    "[404/5200] Building HIP object aten/src/ATen/native/hip/Sort.hip.o",
    "curl: (22) The requested URL returned error: 503",
])
def test_what_is_not_gone_for_good_is_not_read_as_gone(line: str) -> None:
    assert classify(["Downloading sources", line], catalogue=CAT).signature != "download-gone", line
