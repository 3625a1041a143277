"""The wheel step and --requires-from under attack: the wheel dir and its manifest checked before the build,
another recipe's wheel never replaced, --budget and containment holding in the wheel step and in pip against
an index that never answers or trickles, and a run without cgroups that says so and still ends daemons.

Real processes throughout: the rocmbuild command, pip, a loopback HTTP server run by the test, a tmpfs mounted
read-only and a private mount namespace without cgroups (root, as in CI).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from wheels import build_wheel

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
CHILDREN = Path(__file__).resolve().parent / "children"
# A private mount namespace whose cgroup mounts are gone: the run sees no cgroup v2 at all.
NO_CGROUP = ["unshare", "-m", "--propagation", "private", "sh", "-c",
             "for m in $(awk '$3 == \"cgroup2\" || $3 == \"cgroup\" {print $2}' /proc/self/mounts | sort -r); "
             "do umount -l \"$m\"; done; exec \"$@\"", "no-cgroup"]


def env_for(tmp: Path, path_first: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    env.update(XDG_STATE_HOME=str(tmp / "state"), XDG_CACHE_HOME=str(tmp / "cache"),
               XDG_CONFIG_HOME=str(tmp / "config"), HIP_PLATFORM="amd")
    if path_first is not None:
        env["PATH"] = f"{path_first}:{env.get('PATH', '')}"
    return env


def recipe(tmp: Path, *, build: str = "true", wheel: str | None = None, name: str = "wl",
           requires: str = "") -> Path:
    path = tmp / f"{name}.toml"
    text = f'name = "{name}"\n{requires}[steps]\nbuild = [{json.dumps(build)}]\n'
    if wheel is not None:
        text += f"wheel = [{json.dumps(wheel)}]\n"
    path.write_text(text)
    return path


def argv(tmp: Path, recipe_path: Path, *extra: str, run: str = "run") -> list[str]:
    (tmp / "src").mkdir(exist_ok=True)
    return [ROCMBUILD, str(recipe_path), "--source", str(tmp / "src"), "--run-dir", str(tmp / run), "--arch",
            "gfx90a", "--skip-preflight", "--no-cache", "--max-attempts", "1", "--json", *extra]


def rocmbuild(cmd: list[str], env: dict[str, str], timeout: float = 120) -> tuple[int, str, dict[str, Any], float]:
    started = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    try:
        summary = json.loads(lines[-1]) if lines else {}
    except ValueError:
        summary = {}
    return proc.returncode, proc.stderr, summary, time.monotonic() - started


def alive_with(argument: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        if p.info["status"] != psutil.STATUS_ZOMBIE and argument in (p.info["cmdline"] or []):
            found.append(p)
    return found


def kill_with(argument: str) -> None:
    for p in alive_with(argument):
        with contextlib.suppress(psutil.Error):
            p.kill()


def survivors(argument: str) -> list[str]:
    found = []
    for p in alive_with(argument):
        with contextlib.suppress(psutil.Error):
            found.append(f"{p.pid} (parent {p.ppid()}, session {os.getsid(p.pid)}): {' '.join(p.cmdline())}")
    return found


def gone_within(argument: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive_with(argument):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def demo_wheel(tmp: Path, text: str = "mine") -> Path:
    where = tmp / f"made-{uuid.uuid4().hex[:6]}"
    where.mkdir()
    return build_wheel(where, "demo", "1.0", {"demo/__init__.py": f"WHO = {text!r}\n"})


# --- the wheel dir and its manifest, before the build ------------------------------------------------


def test_a_wheel_dir_that_is_a_file_is_refused_before_the_build(tmp_path: Path) -> None:
    built = tmp_path / "built"
    (tmp_path / "file").write_text("not a directory")
    code, err, _, _ = rocmbuild(argv(tmp_path, recipe(tmp_path, build=f"touch {built}"),
                                     "--wheel-dir", str(tmp_path / "file")), env_for(tmp_path))
    assert code == 2, err
    assert "is not a directory" in err and "what to do:" in err and "Traceback" not in err
    assert not built.exists(), "refused after the build, not before it"


def test_a_read_only_wheel_dir_is_refused_before_the_build(tmp_path: Path) -> None:
    built = tmp_path / "built"
    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M,ro", "tmpfs", str(ro)], check=True)
    try:
        code, err, _, _ = rocmbuild(argv(tmp_path, recipe(tmp_path, build=f"touch {built}"),
                                         "--wheel-dir", str(ro / "wheels")), env_for(tmp_path))
    finally:
        subprocess.run(["umount", "-l", str(ro)], check=False)
    assert code == 2, err
    assert "cannot write wheels into --wheel-dir" in err and "Read-only" in err and "Traceback" not in err
    assert not built.exists()


BAD_MANIFESTS: dict[str, bytes] = {
    "a list": b"[]",
    "a string": b'"wheels"',
    "a number": b"42",
    "null": b"null",
    "wheels a list": b'{"wheels": []}',
    "wheels a string": b'{"wheels": "demo-1.0-py3-none-any.whl"}',
    "entry a string": b'{"wheels": {"demo-1.0-py3-none-any.whl": "wl"}}',
    "entry a list": b'{"wheels": {"demo-1.0-py3-none-any.whl": []}}',
    "recipe a number": b'{"wheels": {"demo-1.0-py3-none-any.whl": {"recipe": 7}}}',
    "a path as name": b'{"wheels": {"../../etc/x.whl": {"recipe": "wl"}}}',
    "nested 100000 deep": b"[" * 100_000 + b"]" * 100_000,
    "not JSON": b'{"wheels": {',
    "not UTF-8": b'{"wheels": {"caf\xe9.whl": {}}}',
}


@pytest.mark.parametrize("shape", sorted(BAD_MANIFESTS))
def test_a_manifest_of_the_wrong_shape_is_refused_before_the_build(tmp_path: Path, shape: str) -> None:
    built = tmp_path / "built"
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "manifest.json").write_bytes(BAD_MANIFESTS[shape])
    made = demo_wheel(tmp_path)  # a good build and wheel step: without the check, the manifest is read after them
    r = recipe(tmp_path, build=f"touch {built}", wheel=f'cp {made} "$WHEEL_DIR"/')
    code, err, _, _ = rocmbuild(argv(tmp_path, r, "--wheel-dir", str(wheels)), env_for(tmp_path))
    assert code == 2, err
    assert "is not a rocmbuild manifest" in err and "what to do:" in err and "Traceback" not in err
    assert not built.exists()
    assert (wheels / "manifest.json").read_bytes() == BAD_MANIFESTS[shape], "left as it was"


@pytest.mark.integration
def test_a_manifest_broken_during_the_build_fails_the_wheel_step_with_a_clear_error(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    made = demo_wheel(tmp_path)
    r = recipe(tmp_path, build=f"echo '[1, 2]' > {wheels}/manifest.json", wheel=f'cp {made} "$WHEEL_DIR"/')
    code, err, summary, _ = rocmbuild(argv(tmp_path, r, "--wheel-dir", str(wheels)), env_for(tmp_path))
    assert code == 1, err
    assert "Traceback" not in err and summary["outcome"] == "failed"
    assert "is not a rocmbuild manifest" in summary["wheels"]["detail"]
    assert not (wheels / made.name).exists()


@pytest.mark.integration
def test_another_recipes_wheel_of_the_same_name_is_never_replaced(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    theirs = demo_wheel(tmp_path, "theirs")
    (wheels / theirs.name).write_bytes(theirs.read_bytes())
    manifest = {"wheels": {theirs.name: {"recipe": "other", "sha256": "x", "fingerprint": "y"}}, "note": "kept"}
    (wheels / "manifest.json").write_text(json.dumps(manifest))
    mine = demo_wheel(tmp_path, "mine")
    r = recipe(tmp_path, wheel=f'cp {mine} "$WHEEL_DIR"/')
    code, err, summary, _ = rocmbuild(argv(tmp_path, r, "--wheel-dir", str(wheels)), env_for(tmp_path))
    assert code == 1, err
    detail = summary["wheels"]["detail"]
    assert "not replaced" in detail and "recipe 'other'" in detail and "Traceback" not in err
    assert (wheels / theirs.name).read_bytes() == theirs.read_bytes()
    assert json.loads((wheels / "manifest.json").read_text()) == manifest
    kept = tmp_path / "run" / "wheels" / mine.name
    assert kept.read_bytes() == mine.read_bytes() and str(kept) in detail


@pytest.mark.integration
def test_an_unlisted_wheel_of_the_same_name_is_replaced_only_by_the_same_bytes(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    mine = demo_wheel(tmp_path, "mine")
    (wheels / mine.name).write_bytes(b"something else")
    r = recipe(tmp_path, wheel=f'cp {mine} "$WHEEL_DIR"/')
    code, err, summary, _ = rocmbuild(argv(tmp_path, r, "--wheel-dir", str(wheels)), env_for(tmp_path))
    assert code == 1 and "not listed in manifest.json" in summary["wheels"]["detail"], err
    assert (wheels / mine.name).read_bytes() == b"something else"

    (wheels / mine.name).write_bytes(mine.read_bytes())
    code, err, summary, _ = rocmbuild(argv(tmp_path, r, "--wheel-dir", str(wheels), run="run2"), env_for(tmp_path))
    assert code == 0, err
    assert json.loads((wheels / "manifest.json").read_text())["wheels"][mine.name]["recipe"] == "wl"


# --- limits and containment in the wheel step ----------------------------------------------------------


@pytest.mark.integration
def test_the_budget_holds_in_the_wheel_step(tmp_path: Path) -> None:
    marker = f"{uuid.uuid4().int % 10**6}.5"
    r = recipe(tmp_path, wheel=f"sleep {marker}")
    code, err, summary, elapsed = rocmbuild(argv(tmp_path, r, "--wheel-dir", str(tmp_path / "w"), "--budget", "4s"),
                                            env_for(tmp_path))
    try:
        assert code == 5, err
        assert summary["outcome"] == "budget_exhausted" and "budget" in summary["wheels"]["detail"]
        assert elapsed < 40, f"the wheel step ran {elapsed:.0f}s past a 4s budget"
        assert not alive_with(marker)
    finally:
        kill_with(marker)


def _daemon_wheel_step(tmp: Path, marker: str) -> Path:
    mine = demo_wheel(tmp)
    return recipe(tmp, wheel=f'setsid sleep {marker} & cp {mine} "$WHEEL_DIR"/')


@pytest.mark.integration
def test_a_daemon_the_wheel_step_starts_is_ended(tmp_path: Path) -> None:
    marker = f"{uuid.uuid4().int % 10**6}.25"
    try:
        code, err, summary, _ = rocmbuild(argv(tmp_path, _daemon_wheel_step(tmp_path, marker), "--wheel-dir",
                                               str(tmp_path / "w")), env_for(tmp_path))
        assert code == 0, err
        assert summary["wheels"]["ok"] is True
        assert gone_within(marker, 2), "setsid sleep started by the wheel step outlived the run"
    finally:
        kill_with(marker)


# --- --requires-from against an index that never answers, or trickles ----------------------------------


@contextlib.contextmanager
def hostile_index(kind: str) -> Iterator[str]:
    """A loopback HTTP 'index' run by this test: ``silent`` accepts and never answers; ``trickle`` sends a
    byte every 2 s (never enough silence for pip's socket timeout).  Stopped, with its connections, on exit."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()
    conns: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conn, _ = server.accept()
                conns.append(conn)
                if kind == "trickle":
                    threading.Thread(target=trickle, args=(conn,), daemon=True).start()

    def trickle(conn: socket.socket) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>" * 100:
            if stop.wait(2):
                return
            try:
                conn.sendall(bytes([byte]))
            except OSError:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/simple"
    finally:
        stop.set()
        thread.join(5)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.close()
        server.close()


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv without torch: the build's interpreter (first python3 on PATH)."""
    path = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    return path / "bin"


@pytest.mark.parametrize("kind", ["silent", "trickle"])
@pytest.mark.integration
def test_the_budget_holds_in_requires_from_against_a_hostile_index(tmp_path: Path, bare_venv: Path,
                                                                   kind: str) -> None:
    built = tmp_path / "built"
    r = recipe(tmp_path, build=f"touch {built}", requires='requires = ["torch"]\n')
    with hostile_index(kind) as url:
        code, err, _, elapsed = rocmbuild(argv(tmp_path, r, "--requires-from", url, "--budget", "6s"),
                                          env_for(tmp_path, bare_venv), timeout=200)
        pip_left = alive_with(url)
    assert code == 5, err
    assert "time budget ran out" in err and "what to do:" in err and "Traceback" not in err
    assert elapsed < 60, f"pip ran {elapsed:.0f}s past a 6s budget"
    assert not pip_left, "pip outlived the run"
    assert not built.exists()


# --- without cgroups -----------------------------------------------------------------------------------


@pytest.mark.integration
def test_without_cgroups_the_run_says_so_and_daemons_are_still_ended(tmp_path: Path) -> None:
    """Five runs in a mount namespace without cgroups, daemons left by the build and the wheel steps."""
    for i in range(5):
        marker = f"{uuid.uuid4().int % 10**6}.{i + 1}"
        mine = demo_wheel(tmp_path)
        r = recipe(tmp_path, build=f"setsid sleep {marker} & (sleep {marker} &) ; true",
                   wheel=f'setsid -f sleep {marker}; cp {mine} "$WHEEL_DIR"/')
        try:
            code, err, summary, _ = rocmbuild(NO_CGROUP + argv(tmp_path, r, "--wheel-dir", str(tmp_path / "w"),
                                                               run=f"run{i}"), env_for(tmp_path))
            assert code == 0, err
            assert summary["containment"]["kind"] == "process-tree" and summary["containment"]["cgroup"] is False
            assert "containment is off" in err
            assert gone_within(marker, 2), f"run {i + 1}: a daemon outlived the run: {survivors(marker)}"
        finally:
            kill_with(marker)
        (tmp_path / "w" / mine.name).unlink()


@pytest.mark.integration
def test_without_cgroups_a_sigkilled_run_still_ends_its_daemons(tmp_path: Path) -> None:
    marker = f"atk-{uuid.uuid4().hex[:10]}"
    r = recipe(tmp_path, build=f"{sys.executable} {CHILDREN / 'escapers.py'} {marker} stay")
    cmd = [a for a in argv(tmp_path, r) if a != "--json"]  # the build's output on stdout, where it is awaited
    proc = subprocess.Popen(NO_CGROUP + cmd, env=env_for(tmp_path), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "escapers ready" in line:
                break
        proc.send_signal(signal.SIGKILL)  # the namespace's shell exec'd rocmbuild: this is rocmbuild
        proc.wait(30)
        assert gone_within(marker, 5), f"survived: {[p.cmdline()[-1] for p in alive_with(marker)]}"
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_with(marker)


@pytest.mark.integration
def test_doctor_says_a_broken_manifest_would_be_refused_instead_of_crashing(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "manifest.json").write_bytes(BAD_MANIFESTS["nested 100000 deep"])
    proc = subprocess.run([ROCMBUILD, "doctor", "--wheel-dir", str(wheels), "--json"], env=env_for(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 70 and "Traceback" not in proc.stderr, proc.stderr[-300:]
    fleet = json.loads(proc.stdout)["fleet"]["wheel_dir"]
    assert fleet["wheels"] == [] and fleet["exists"] is True
    assert "is not a rocmbuild manifest" in proc.stdout


def test_a_manifest_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    from rocmbuild.provisioning.wheels import WheelDirError, load_manifest

    os.mkfifo(tmp_path / "manifest.json")
    started = time.monotonic()
    with pytest.raises(WheelDirError, match="not a regular file"):
        load_manifest(tmp_path)
    assert time.monotonic() - started < 5


def test_a_wheel_zipfile_cannot_open_is_a_failed_verification_not_a_crash(tmp_path: Path) -> None:
    import zipfile

    from rocmbuild.provisioning.wheels import verify_wheel

    wheel = tmp_path / "x-1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("x/_C.so", b"\0" * 64)
    data = bytearray(wheel.read_bytes())
    # the member's compression method (local header offset 8, central directory too): 99 = AES, unsupported
    data[8:10] = (99).to_bytes(2, "little")
    central = data.index(b"PK\x01\x02")
    data[central + 10:central + 12] = (99).to_bytes(2, "little")
    wheel.write_bytes(bytes(data))

    from types import SimpleNamespace

    plan = SimpleNamespace(recipe=SimpleNamespace(verify_artifacts=("x/*.so",)), targets=None, env={},
                           tools_llvm_bin=None)
    ok, detail = verify_wheel(wheel, plan)  # type: ignore[arg-type]
    assert not ok and "not a readable wheel" in detail
