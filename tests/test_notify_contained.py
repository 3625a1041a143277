"""``--notify`` contained like a step, and notification URLs end to end (issue: the morning after).

The notify command is a real process. The flood (rocmbuild's own memory) and the SIGINT go through the
installed command, the rest through the command in this process (tests/inprocess.py); the notification
URLs go through apprise to a real HTTP receiver on 127.0.0.1 (a ``json://`` webhook), one that answers
and one that never does.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from inprocess import build

from tests.test_e2e_ladder import ROCMBUILD, base_env, write_recipe


class Receiver(http.server.BaseHTTPRequestHandler):
    received: list[dict[str, Any]]  # set per server (the fixture's subclass)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        type(self).received.append({"path": self.path, "body": json.loads(body or b"{}"),
                                    "headers": dict(self.headers)})
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[int, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []
    handler = type("R", (Receiver,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], received
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers (a webhook that hangs)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def _events(tmp: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (tmp / "run" / "events.jsonl").read_text().splitlines()]


def test_a_json_webhook_gets_the_outcome_decisive_line_and_next_step(tmp_path: Path, receiver: Any,
                                                                    probes_once: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    port, received = receiver
    url = f"json://127.0.0.1:{port}/hooks/s3cr3tpath?token=abcdef123"
    proc, summary = build(tmp_path, monkeypatch, str(write_recipe(tmp_path, "link")), "--max-attempts", "1",
                          "--notify", url)
    assert proc.returncode != 0, proc.stderr
    assert len(received) == 1, (proc.stderr, summary.get("notify"))
    body = received[0]["body"]
    assert received[0]["path"].startswith("/hooks/s3cr3tpath")
    message = body["message"]
    assert "decisive line: " in message and "cannot find -l" in message
    assert "next step: " in message and "report: " in message and "report.html" in message
    assert summary["outcome"] in body["title"] and "fake" in body["title"]
    assert summary["notify"]["exit_code"] == 0 and summary["notify"]["kind"] == "urls"
    assert (tmp_path / "run" / "report.html").is_file()
    # The URL's secrets (path and token) reach no record and no console.
    for text in [proc.stderr, proc.stdout, *(p.read_text(errors="replace") for p in (tmp_path / "run").iterdir()
                                             if p.is_file())]:
        assert "s3cr3tpath" not in text and "abcdef123" not in text
    assert summary["notify"]["command"] == "json://<redacted>"


@pytest.mark.integration
def test_a_webhook_that_never_answers_is_cut_off_and_changes_nothing(tmp_path: Path, silent_port: int,
                                                                     probes_once: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.monotonic()
    proc, summary = build(tmp_path, monkeypatch, str(write_recipe(tmp_path, "ok")), "--notify",
                          f"json://127.0.0.1:{silent_port}/hook", env={"ROCMBUILD_NOTIFY_TIMEOUT": "2s"})
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 30
    assert summary["outcome"] == "succeeded"
    assert summary["notify"]["timed_out"] is True and summary["notify"]["exit_code"] is None
    finished = [e for e in _events(tmp_path) if e["event"] == "notify.finished"]
    assert finished and finished[-1]["timed_out"] is True
    assert "notification to json://<redacted> timed out after 2s" in proc.stderr


@pytest.mark.integration
def test_a_notify_that_floods_stdout_is_bounded_in_memory_and_time(tmp_path: Path) -> None:
    env = base_env(tmp_path, ROCMBUILD_NOTIFY_TIMEOUT="3s")
    argv = [ROCMBUILD, str(write_recipe(tmp_path, "ok")), "--source", str(tmp_path), "--run-dir",
            str(tmp_path / "run"), "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--notify", "yes"]
    started = time.monotonic()
    child = psutil.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while child.poll() is None and time.monotonic() - started < 60:
        try:
            peak = max(peak, child.memory_info().rss)
        except psutil.Error:
            break
        time.sleep(0.05)
    assert child.wait(timeout=60) == 0
    assert time.monotonic() - started < 20
    assert peak < 400 * 1024 ** 2, f"rocmbuild held {peak / 1024 ** 2:.0f} MiB reading the notify's output"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["notify"]["timed_out"] is True and len(summary["notify"]["output"]) <= 2000


@pytest.mark.integration
def test_a_daemon_holding_the_pipe_is_not_waited_for_and_exit_0_is_success(
        tmp_path: Path, probes_once: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.monotonic()
    proc, summary = build(tmp_path, monkeypatch, str(write_recipe(tmp_path, "ok")), "--notify",
                          "cat >/dev/null; (sleep 47.5 &); echo queued; exit 0",
                          env={"ROCMBUILD_NOTIFY_TIMEOUT": "5s"})
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 15
    notify = summary["notify"]
    assert notify["exit_code"] == 0 and notify["timed_out"] is False and notify["error"] is None
    assert "queued" in notify["output"]
    time.sleep(0.3)
    assert not any("47.5" in (p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))


@pytest.mark.integration
def test_sigint_during_notify_keeps_the_build_exit_code_and_ends_the_notify(tmp_path: Path) -> None:
    marker = tmp_path / "notify-started"
    argv = [ROCMBUILD, str(write_recipe(tmp_path, "ok")), "--source", str(tmp_path), "--run-dir",
            str(tmp_path / "run"), "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--notify",
            f"touch {marker}; sleep 53.25"]
    child = subprocess.Popen(argv, env=base_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists()
    child.send_signal(signal.SIGINT)
    assert child.wait(timeout=30) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["outcome"] == "succeeded"
    assert summary["notify"]["interrupted"] is True and summary["notify"]["exit_code"] is None
    time.sleep(0.3)
    assert not any("53.25" in (p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))


def test_an_enormous_notify_timeout_is_refused_before_the_build(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = build(tmp_path, monkeypatch, str(write_recipe(tmp_path, "ok")), "--notify", "true",
                          env={"ROCMBUILD_NOTIFY_TIMEOUT": "99999999999999999999h"})
    assert proc.returncode == 2 and "ROCMBUILD_NOTIFY_TIMEOUT" in proc.stderr and "Traceback" not in proc.stderr
    assert summary == {}  # refused before any run began


def test_a_secret_variable_printed_by_notify_reaches_no_record(tmp_path: Path, probes_once: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = build(tmp_path, monkeypatch, str(write_recipe(tmp_path, "ok")), "--notify",
                          'cat >/dev/null; echo "token is $MY_API_TOKEN"; exit 3',
                          env={"MY_API_TOKEN": "tok-9f8e7d6c5b4a"})
    assert proc.returncode == 0, proc.stderr
    assert "token is <redacted>" in summary["notify"]["output"]
    for name in ("summary.json", "events.jsonl"):
        assert "tok-9f8e7d6c5b4a" not in (tmp_path / "run" / name).read_text()


def test_the_notify_command_still_gets_the_contract_variables_and_the_report(
        tmp_path: Path, probes_once: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "seen.json"
    script = ("python3 -c 'import json, os, sys; s = json.load(sys.stdin); e = os.environ; "
              "open(e[\"OUT\"], \"w\").write(json.dumps([s[\"outcome\"], e[\"ROCMBUILD_OUTCOME\"], "
              "e[\"ROCMBUILD_REPORT\"]]))'")
    proc, _ = build(tmp_path, monkeypatch, str(write_recipe(tmp_path, "ok")), "--notify", script,
                    env={"OUT": str(out)})
    assert proc.returncode == 0, proc.stderr
    outcome, env_outcome, report = json.loads(out.read_text())
    assert outcome == env_outcome == "succeeded"
    assert Path(report).is_file() and "<!DOCTYPE html>" in Path(report).read_text()
    assert os.stat(report).st_size > 1000
