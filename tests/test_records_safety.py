"""No secrets in records, private modes, repro.sh quotes everything."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from test_e2e_ladder import ROCMBUILD, base_env

from rocmbuild.records.recorder import ReproStep, repro_script
from rocmbuild.records.redact import redact, redact_text, secret_name

SECRETS = ("s3cretpw", "hunter2", "hf_abcdefsecret", "ghp_tok")


def test_url_credentials_and_secret_names_are_redacted() -> None:
    assert redact_text("redis://:s3cretpw@cache:6379") == "redis://<redacted>@cache:6379"
    assert redact_text("pip --extra-index-url https://user:hunter2@pypi.example/simple x") == (
        "pip --extra-index-url https://<redacted>@pypi.example/simple x")
    assert redact_text("see https://example.org/a@b") == "see https://example.org/a@b", "an @ in a path is not a login"
    assert all(secret_name(n) for n in ("HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "OPENAI_API_KEY"))
    assert not any(secret_name(n) for n in ("PATH", "MAX_JOBS", "KEYBOARD", "PYTORCH_ROCM_ARCH"))
    assert redact({"env": {"HF_TOKEN": "hf_x", "PATH": "/bin"}, "l": ["ftp://a:b@h"]}) == {
        "env": {"HF_TOKEN": "<redacted>", "PATH": "/bin"}, "l": ["ftp://<redacted>@h"]}


@pytest.mark.integration
def test_no_secret_reaches_any_record_and_records_are_private(tmp_path: Path) -> None:
    recipe = tmp_path / "leak.toml"
    recipe.write_text(f"""
name = "leak"
[env]
PIP_EXTRA_INDEX_URL = "https://user:hunter2@pypi.example/simple"
HF_TOKEN = "hf_abcdefsecret"
[steps]
build = ["{sys.executable} -c 'import sys; sys.exit(1)'"]
""")
    src = tmp_path / "src"
    src.mkdir()
    run = tmp_path / "run"
    env = base_env(tmp_path, GITHUB_TOKEN="ghp_tok")
    proc = subprocess.run([ROCMBUILD, str(recipe), "--source", str(src), "--run-dir", str(run), "--arch", "gfx90a",
                           "--skip-preflight", "--cache-remote", "redis://:s3cretpw@127.0.0.1:9", "--verbose",
                           "--json", "--max-attempts", "1"],
                          env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode in (1, 3), proc.stderr
    console = proc.stdout + proc.stderr
    for secret in SECRETS:
        assert secret not in console, f"{secret} on the console"
        for path in run.iterdir():
            if path.name.startswith("attempt-"):
                continue  # the build's own output, byte for byte
            assert secret not in path.read_text(errors="replace"), f"{secret} in {path.name}"
    assert "<redacted>" in (run / "summary.json").read_text()
    assert stat.S_IMODE(run.stat().st_mode) == 0o700
    for path in run.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, f"{path.name} readable by others"
    # repro.sh takes the secrets from the environment at run time
    script = run / "repro.sh"
    text = script.read_text()
    assert 'HF_TOKEN:?' in text and 'PIP_EXTRA_INDEX_URL:?' in text
    without = subprocess.run(["bash", str(script)], capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert without.returncode != 0 and "holds a secret" in without.stderr


def test_repro_quotes_names_paths_and_comments(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    cwd = tmp_path / "dir with $(touch pwned) and 'quotes'"
    cwd.mkdir()
    text = repro_script(run=f"run\ntouch {marker}\n", recipe="r;touch x", entered=ReproStep(
        cwd=cwd, env_set={"OK": f"$(touch {marker})`touch {marker}`", f"BAD=1; touch {marker}; X": "v", "A B": "c"},
        command="echo step-ran", step="build\nrm -rf /", attempt=1))
    script = tmp_path / "repro.sh"
    script.write_text(text)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "step-ran\n", "only the step runs"
    assert not marker.exists() and not (tmp_path / "x").exists()
    for line in text.splitlines():
        assert not line.startswith(("touch", "rm ")), line


@pytest.mark.integration
def test_a_builds_events_are_on_disk_once_its_first_attempt_runs(tmp_path: Path) -> None:
    """The step sees run.started and attempt.started in events.jsonl (written when its process started),
    stamped before the step itself started."""
    recipe = tmp_path / "peek.toml"
    run = tmp_path / "run"
    seen = tmp_path / "seen.txt"
    recipe.write_text(f"""
name = "peek"
[steps]
build = ["sleep 1; date +%s.%N > {tmp_path / 'started.txt'}; cat {run / 'events.jsonl'} > {seen}"]
""")
    src = tmp_path / "src"
    src.mkdir()
    proc = subprocess.run([ROCMBUILD, str(recipe), "--source", str(src), "--run-dir", str(run), "--arch", "gfx90a",
                           "--skip-preflight", "--no-cache", "--quiet"],
                          env=base_env(tmp_path), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    import json
    from datetime import datetime

    events = [json.loads(line) for line in seen.read_text().splitlines()]
    names = [e["event"] for e in events]
    assert names[0] == "run.started" and "attempt.started" in names
    started = float((tmp_path / "started.txt").read_text())
    for event in (e for e in events if e["event"] in ("run.started", "attempt.started")):
        assert datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp() < started


@pytest.mark.integration
def test_a_secret_value_the_build_prints_never_reaches_summary_or_events(tmp_path: Path) -> None:
    """The build echoes $MY_API_TOKEN next to its failure: the diagnosis's line and context carry it."""
    recipe = tmp_path / "echo.toml"
    recipe.write_text('name = "echo"\n[steps]\nbuild = ["echo token is $MY_API_TOKEN; '
                      "echo 'fatal error: foo.h: No such file or directory'; echo $MY_API_TOKEN; exit 1\"]\n")
    (tmp_path / "src").mkdir()
    run = tmp_path / "run"
    env = base_env(tmp_path, MY_API_TOKEN="tok-7f3a9c", SHORT_TOKEN="1")
    proc = subprocess.run([ROCMBUILD, str(recipe), "--source", str(tmp_path / "src"), "--run-dir", str(run),
                           "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--max-attempts", "1"],
                          env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode in (1, 3, 4), proc.stderr
    assert "tok-7f3a9c" in (run / "attempt-1.log").read_text()  # the raw log is the build's bytes (0600)
    for name in ("summary.json", "events.jsonl"):
        text = (run / name).read_text()
        assert "tok-7f3a9c" not in text, name
    assert "token is <redacted>" in (run / "events.jsonl").read_text()


def test_secrets_in_error_messages_and_json_errors_are_redacted(tmp_path: Path) -> None:
    env = {**os.environ, "MY_API_TOKEN": "sekrit-93b1"}
    proc = subprocess.run([ROCMBUILD, "diagnose", "http://h/simple?token=abc123", f"{tmp_path}/sekrit-93b1.log",
                           "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "token=<redacted>" in proc.stderr and "token=<redacted>" in proc.stdout
    assert "abc123" not in proc.stdout + proc.stderr and "sekrit-93b1" not in proc.stdout + proc.stderr


def test_a_crash_log_is_private_and_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmbuild import cli

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("MY_API_TOKEN", "sekrit-93b1")
    monkeypatch.setattr(sys, "argv", ["rocmbuild", "x", "--requires-from", "https://u:pw-4411@h/simple?token=t0k3n"])
    path = cli._crash_log(RuntimeError("failed with sekrit-93b1 in it"))
    text = path.read_text()
    assert "pw-4411" not in text and "t0k3n" not in text and "sekrit-93b1" not in text
    assert "RuntimeError" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
